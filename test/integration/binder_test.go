//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/kubescheduler"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// TestBinderAgreesWithKubeScheduler runs the real kube-scheduler (built by
// hack/control-plane.sh with the API server) against a set of nodes and
// bound pods, submits pending pods one at a time, and checks that each one
// lands on a node Joiner's Binder ranks best for it, given the same state.
func TestBinderAgreesWithKubeScheduler(t *testing.T) {
	ctx := context.Background()
	ns := testNamespace(t, "binder")
	startScheduler(t)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "web"}}}}}}
	if err := k8s.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}

	spare := corev1.Taint{Key: "spare", Effect: corev1.TaintEffectPreferNoSchedule}
	for _, n := range []struct {
		name, zone string
		cpu, memGi int64
		taints     []corev1.Taint
	}{
		{"a-small", "zone-a", 4, 16, nil},
		{"a-large", "zone-a", 8, 32, nil},
		{"b-lean", "zone-b", 4, 8, nil},
		{"b-spare", "zone-b", 16, 64, []corev1.Taint{spare}},
		{"c-tiny", "zone-c", 2, 8, nil},
		{"c-cpu", "zone-c", 8, 16, nil},
	} {
		createNode(t, n.name, n.zone, n.cpu, n.memGi, n.taints)
	}
	bound := []struct {
		node string
		pod  *corev1.Pod
	}{
		{"a-large", testPod("batch-1", "3", "6Gi")},
		{"b-lean", testPod("cache-1", "500m", "5Gi")},
		{"c-cpu", testPod("db-1", "2", "4Gi", withLabel("app", "db"))},
		{"a-small", testPod("web-0", "250m", "512Mi", withLabel("app", "web"), ownedBy(rs))},
	}
	for _, b := range bound {
		b.pod.Namespace = ns
		b.pod.Spec.NodeName = b.node
		if err := k8s.Create(ctx, b.pod); err != nil {
			t.Fatal(err)
		}
	}

	webTerm := corev1.PodAffinityTerm{TopologyKey: v1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	dbTerm := corev1.PodAffinityTerm{TopologyKey: v1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}
	pending := []*corev1.Pod{
		testPod("small", "200m", "256Mi"),
		testPod("web-1", "250m", "512Mi", withLabel("app", "web"), ownedBy(rs)),
		testPod("web-2", "250m", "512Mi", withLabel("app", "web"), ownedBy(rs)),
		testPod("memory-heavy", "500m", "10Gi"),
		testPod("web-3", "250m", "512Mi", withLabel("app", "web"), ownedBy(rs)),
		testPod("prefers-c", "1", "1Gi", withAffinity(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 50, Preference: corev1.NodeSelectorTerm{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-c"}}}}}}}})),
		testPod("tolerates-spare", "1", "2Gi", withToleration(corev1.Toleration{Key: "spare", Operator: corev1.TolerationOpExists})),
		testPod("cpu-heavy", "3", "1Gi"),
		testPod("avoids-web", "500m", "1Gi", withAffinity(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: webTerm}}}})),
		testPod("near-db", "500m", "1Gi", withAffinity(&corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 80, PodAffinityTerm: dbTerm}}}})),
		testPod("not-with-db", "1", "1Gi", withAffinity(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{dbTerm}}})),
		testPod("spread-zones", "300m", "300Mi", withLabel("app", "api"), func(p *corev1.Pod) {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: v1.LabelZone,
				WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}}
		}),
		testPod("api-plain", "300m", "300Mi", withLabel("app", "api")), // as spread-zones, without its preference
		testPod("best-effort", "", ""),
		testPod("web-4", "250m", "512Mi", withLabel("app", "web"), ownedBy(rs)),
		testPod("last", "1500m", "3Gi"),
	}
	spreadSelector := func(p *corev1.Pod) k8slabels.Selector {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "ReplicaSet" && ref.Name == rs.Name {
			return k8slabels.SelectorFromSet(rs.Spec.Selector.MatchLabels)
		}
		return nil
	}
	unique := 0
	for _, p := range pending {
		p.Namespace = ns
		nodes := clusterNodes(t, ns)
		scores := kubescheduler.NewBinder(kubescheduler.BindOptions{SpreadSelector: spreadSelector}).Scores(nodes, p)
		if err := k8s.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		got := waitBound(t, p)
		best := bestNodes(scores)
		if len(best) == 1 {
			unique++
		}
		if scores[got] != scores[best[0]] || !contains(best, got) {
			t.Errorf("pod %s: kube-scheduler chose %s, Joiner ranks %v best; Joiner's scores: %v", p.Name, got, best, scores)
		} else {
			t.Logf("pod %s → %s (scores %v)", p.Name, got, scores)
		}
	}
	if unique < len(pending)-2 {
		t.Errorf("only %d of %d pods had a single best node: the test should not rest on ties", unique, len(pending))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func bestNodes(scores map[string]int64) []string {
	var best []string
	var top int64 = -1
	for n, s := range scores {
		switch {
		case s > top:
			best, top = []string{n}, s
		case s == top:
			best = append(best, n)
		}
	}
	sort.Strings(best)
	return best
}

var namespaces int

// testNamespace creates a namespace of its own for the test (the API server
// outlives a test, and without a namespace controller a deleted namespace
// never goes away) and, when the test ends, deletes its pods at once: there
// is no kubelet to finish a graceful deletion.
func testNamespace(t *testing.T, prefix string) string {
	t.Helper()
	namespaces++
	ns := fmt.Sprintf("%s-%d", prefix, namespaces)
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = k8s.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0))
	})
	return ns
}

// startScheduler runs kube-scheduler against the test API server until
// the test ends.
func startScheduler(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kube-scheduler"),
		"--kubeconfig="+kubeconfig, "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig,
		"--leader-elect=false", "--secure-port=0", "-v=3")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting kube-scheduler: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("kube-scheduler log:\n%s", tail(logs.String(), 4000))
		}
	})
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func createNode(t *testing.T, name, zone string, cpu, memGi int64, taints []corev1.Taint) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		v1.LabelHostname: name, v1.LabelZone: zone, v1.LabelArch: "amd64", "kubernetes.io/os": "linux"}},
		Spec: corev1.NodeSpec{Taints: taints}}
	if err := k8s.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}) })
	res := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memGi<<30, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
	}
	n.Status = corev1.NodeStatus{Capacity: res, Allocatable: res, Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}
	if err := k8s.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	// The API server's TaintNodesByCondition admission taints new nodes
	// not-ready; with no node lifecycle controller here, lift it as that
	// controller would for a Ready node.
	n.Spec.Taints = taints
	if err := k8s.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
}

type podOption func(*corev1.Pod)

func withLabel(k, v string) podOption { return func(p *corev1.Pod) { p.Labels[k] = v } }
func withAffinity(a *corev1.Affinity) podOption {
	return func(p *corev1.Pod) { p.Spec.Affinity = a }
}
func withToleration(tol corev1.Toleration) podOption {
	return func(p *corev1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, tol) }
}
func ownedBy(rs *appsv1.ReplicaSet) podOption {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}
	}
}

func testPod(name, cpu, mem string, opts ...podOption) *corev1.Pod {
	req := corev1.ResourceList{}
	if cpu != "" {
		req[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		req[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "app", Resources: corev1.ResourceRequirements{Requests: req}}}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

// clusterNodes reads the nodes and their bound pods as the Binder sees them.
func clusterNodes(t *testing.T, ns string) []*provisioning.Node {
	t.Helper()
	ctx := context.Background()
	var nodes corev1.NodeList
	if err := k8s.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	var out []*provisioning.Node
	for i := range nodes.Items {
		n := &nodes.Items[i]
		pn := &provisioning.Node{Name: n.Name, Labels: n.Labels, Taints: n.Spec.Taints, Allocatable: n.Status.Allocatable}
		for j := range pods.Items {
			if pods.Items[j].Spec.NodeName == n.Name {
				pn.Pods = append(pn.Pods, &pods.Items[j])
			}
		}
		out = append(out, pn)
	}
	return out
}

// waitBound waits for kube-scheduler to bind the pod and returns the node.
func waitBound(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	var node string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var cur corev1.Pod
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), &cur); err != nil {
			return false, err
		}
		node = cur.Spec.NodeName
		return node != "", nil
	})
	if err != nil {
		t.Fatalf("pod %s was not bound: %v", p.Name, err)
	}
	return node
}

// TestPreemptionAgreesWithKubeScheduler: a high-priority pod that fits
// nowhere makes the real kube-scheduler delete victims on one node and
// nominate the pod there; Joiner's Binder must pick the same node and the
// same number of victims. Two cases: room, and room that pod
// anti-affinity against the victims keeps the pod out of.
func TestPreemptionAgreesWithKubeScheduler(t *testing.T) {
	ctx := context.Background()
	startScheduler(t)
	for name, value := range map[string]int32{"placeholder": -10, "batch": -5, "service": 50, "critical": 1000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if err := k8s.Create(ctx, pc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), pc) })
	}
	class := func(c string) podOption { return func(p *corev1.Pod) { p.Spec.PriorityClassName = c } }
	type node struct {
		name, zone string
		cpu        int64
	}
	type bound struct {
		node string
		pod  *corev1.Pod
	}
	avoidPlaceholders := withAffinity(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: v1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "placeholder"}}}}}})
	placeholder := withLabel("app", "placeholder")
	for _, tc := range []struct {
		name    string
		nodes   []node
		bound   []bound
		pending *corev1.Pod
	}{
		{"room", []node{{"pre-a", "zone-a", 2}, {"pre-b", "zone-b", 2}, {"pre-c", "zone-c", 2}}, []bound{
			{"pre-a", testPod("hold-1", "1", "1Gi", class("placeholder"), placeholder)},
			{"pre-a", testPod("hold-2", "1", "1Gi", class("placeholder"), placeholder)},
			{"pre-b", testPod("api-1", "2", "1Gi", class("service"))},
			{"pre-c", testPod("batch-1", "2", "1Gi", class("batch"))},
		}, testPod("urgent", "1", "1Gi", class("critical"))},
		{"anti-affinity", []node{{"aa-a", "zone-a", 4}, {"aa-b", "zone-b", 2}}, []bound{
			{"aa-a", testPod("hold-1", "1", "1Gi", class("placeholder"), placeholder)},
			{"aa-a", testPod("hold-2", "1", "1Gi", class("placeholder"), placeholder)},
			{"aa-b", testPod("api-1", "2", "1Gi", class("service"))},
		}, testPod("loner", "1", "1Gi", class("critical"), avoidPlaceholders)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := testNamespace(t, "preemption")
			pool := map[string]string{"pool": ns}
			for _, n := range tc.nodes {
				createNode(t, n.name, n.zone, n.cpu, 8, nil)
				var node corev1.Node
				if err := k8s.Get(ctx, client.ObjectKey{Name: n.name}, &node); err != nil {
					t.Fatal(err)
				}
				node.Labels["pool"] = ns
				if err := k8s.Update(ctx, &node); err != nil {
					t.Fatal(err)
				}
			}
			for _, b := range tc.bound {
				b.pod.Namespace, b.pod.Spec.NodeName, b.pod.Spec.NodeSelector = ns, b.node, pool
				if err := k8s.Create(ctx, b.pod); err != nil {
					t.Fatal(err)
				}
			}
			checkPreemption(t, ns, tc.pending, pool)
		})
	}
}

// checkPreemption submits the pod and compares kube-scheduler's preemption
// with the Binder's over the same cluster.
func checkPreemption(t *testing.T, ns string, high *corev1.Pod, nodeSelector map[string]string) {
	ctx := context.Background()
	high.Namespace, high.Spec.NodeSelector = ns, nodeSelector
	if err := k8s.Create(ctx, high); err != nil {
		t.Fatal(err)
	}
	// kube-scheduler says how many victims it preempts in the preemptor's
	// PodScheduled condition ("..., preempting 2 victims") and deletes them
	// one by one afterwards: wait until that many are being deleted.
	victimCount := regexp.MustCompile(`preempting (\d+) victims`)
	var nominated string
	want := -1
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var cur corev1.Pod
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(high), &cur); err != nil {
			return false, err
		}
		if nominated == "" {
			nominated = cur.Status.NominatedNodeName
		}
		for _, c := range cur.Status.Conditions {
			if m := victimCount.FindStringSubmatch(c.Message); want < 0 && c.Type == corev1.PodScheduled && m != nil {
				want, _ = strconv.Atoi(m[1])
			}
		}
		if nominated == "" || want < 0 {
			return false, nil
		}
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return false, err
		}
		deleting := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				deleting++
			}
		}
		return deleting == want, nil
	})
	if err != nil {
		t.Fatalf("kube-scheduler did not preempt for %s: %v", high.Name, err)
	}
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			deleted = append(deleted, p.Name)
		}
	}

	// Joiner's view of the cluster before the preemption: the victims as
	// they were, the preemptor pending.
	nodes := clusterNodes(t, ns)
	var pending *corev1.Pod
	for _, n := range nodes {
		for _, p := range n.Pods {
			p.DeletionTimestamp = nil
		}
	}
	for i := range pods.Items {
		if pods.Items[i].Name == high.Name {
			pending = pods.Items[i].DeepCopy()
			pending.Spec.NodeName, pending.Status.NominatedNodeName = "", ""
		}
	}
	res := kubescheduler.NewBinder(kubescheduler.BindOptions{}).Bind(nodes, []*corev1.Pod{pending})
	if len(res.Preemptions) != 1 {
		t.Fatalf("Joiner does not preempt (bound %d, unschedulable %d); kube-scheduler nominated %s and deleted %v",
			len(res.ExistingNodes), len(res.Unschedulable), nominated, deleted)
	}
	pre := res.Preemptions[0]
	var victims []string
	for _, v := range pre.Victims {
		victims = append(victims, v.Name)
	}
	if pre.Node.Name != nominated || len(victims) != len(deleted) {
		t.Errorf("kube-scheduler: node %s, victims %v; Joiner: node %s, victims %v", nominated, deleted, pre.Node.Name, victims)
	}
	t.Logf("both preempt on %s: kube-scheduler deleted %v, Joiner chose %v", nominated, deleted, victims)
}
