//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/plan"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// explainScheme knows every kind plan reads.
func explainScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s, err := plan.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// explainCluster applies to the API server what each blocking cause
// needs — NodePools, managed Nodes with their NodeClaims, bound and
// pending pods, a PDB — and removes it all when the test ends.
type explainCluster struct {
	t  *testing.T
	kc client.Client
	ns string
}

func (c *explainCluster) create(obj client.Object) {
	c.t.Helper()
	if err := c.kc.Create(context.Background(), obj); err != nil {
		c.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
	c.t.Cleanup(func() { _ = c.kc.Delete(context.Background(), obj) })
}

func (c *explainCluster) pool(name string, weight int32, mutate func(*v1.NodePool)) {
	c.t.Helper()
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Weight = &weight
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}},
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i.large", "m6i.xlarge"}},
	}
	np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("1m")
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "5"}}
	if mutate != nil {
		mutate(np)
	}
	c.create(np)
}

// node makes a managed, initialized m6i.xlarge node of the pool in zone
// us-east-1a: its NodeClaim (last pod event lastPodEvent) and its Node.
func (c *explainCluster) node(name, pool string, lastPodEvent time.Time) {
	c.t.Helper()
	ctx := context.Background()
	id := "aws:///us-east-1a/i-" + name
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58")}
	labels := map[string]string{v1.LabelNodePool: pool, corev1.LabelInstanceTypeStable: "m6i.xlarge", corev1.LabelTopologyZone: "us-east-1a",
		corev1.LabelTopologyRegion: "us-east-1", v1.LabelCapacityType: "on-demand", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"}
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	nc.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelNodePool, Operator: corev1.NodeSelectorOpIn, Values: []string{pool}}}
	c.create(nc)
	nc.Status.ProviderID, nc.Status.NodeName = id, name
	nc.Status.Capacity, nc.Status.Allocatable = capacity, capacity
	nc.Status.LastPodEventTime = metav1.NewTime(lastPodEvent)
	for _, t := range []string{v1.ConditionLaunched, v1.ConditionRegistered, v1.ConditionInitialized} {
		nc.Status.Conditions = append(nc.Status.Conditions, v1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, LastTransitionTime: metav1.Now()})
	}
	if err := c.kc.Status().Update(ctx, nc); err != nil {
		c.t.Fatal(err)
	}
	nodeLabels := map[string]string{corev1.LabelHostname: name, v1.LabelNodeInitialized: "true"}
	for k, v := range labels {
		nodeLabels[k] = v
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: nodeLabels}, Spec: corev1.NodeSpec{ProviderID: id}}
	c.create(n)
	n.Status.Capacity, n.Status.Allocatable = capacity, capacity
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := c.kc.Status().Update(ctx, n); err != nil {
		c.t.Fatal(err)
	}
}

// pod makes a pod of the test's namespace requesting cpu, on node ("" for
// pending).
func (c *explainCluster) pod(name, cpu, node string, mutate func(*corev1.Pod)) {
	c.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	if mutate != nil {
		mutate(p)
	}
	c.create(p)
}

// TestExplainLive: plan and explain read a real API server — NodePools,
// NodeClaims, Nodes, Pods, PDBs as the cluster holds them — and give the
// exact explanation of each blocking cause: for pods, the untolerated
// taint, the conflicting requirement with both values, the exhausted limit
// with usage and limit, the largest type that still does not fit, the pod
// anti-affinity that cannot be met and the pods that cause it; for nodes,
// a do-not-disrupt pod, a PDB that allows no eviction, a budget that
// allows none until its window closes, consolidateAfter not yet passed.
// The binary, pointed at the cluster by --kubeconfig, says the same; at a
// cluster it cannot reach, or without the CRDs, it says so.
func TestExplainLive(t *testing.T) {
	ctx := context.Background()
	kc, err := client.New(cfg, client.Options{Scheme: explainScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := &explainCluster{t: t, kc: kc, ns: "explain"}
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}})
	now := time.Now().UTC().Truncate(time.Second)

	c.pool("ex-tainted", 50, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule}}
	})
	c.pool("ex-zone", 40, func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a"}})
	})
	c.pool("ex-limited", 30, func(np *v1.NodePool) { np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("4")} })
	c.pool("ex-slow", 20, func(np *v1.NodePool) { np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("2h") })
	c.pool("ex-frozen", 10, func(np *v1.NodePool) {
		schedule, day := "0 0 * * *", metav1.Duration{Duration: 24 * time.Hour}
		np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0", Schedule: &schedule, Duration: &day}}
	})

	// Nodes, each held by one thing.
	c.node("ex-limited-1", "ex-limited", now.Add(-time.Hour))
	c.pod("filler", "3", "ex-limited-1", nil)
	c.node("ex-dnd", "ex-zone", now.Add(-time.Hour))
	c.pod("pinned", "500m", "ex-dnd", func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} })
	c.node("ex-pdb", "ex-zone", now.Add(-time.Hour))
	c.pod("db-0", "500m", "ex-pdb", func(p *corev1.Pod) { p.Labels["app"] = "db" })
	minAvailable := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: c.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}
	c.create(pdb)
	pdb.Status = policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0, ExpectedPods: 1, CurrentHealthy: 1, DesiredHealthy: 1, ObservedGeneration: pdb.Generation}
	if err := kc.Status().Update(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	c.node("ex-slow-1", "ex-slow", now.Add(-30*time.Minute))
	c.pod("slow", "500m", "ex-slow-1", nil)
	c.node("ex-frozen-1", "ex-frozen", now.Add(-time.Hour))
	c.pod("frozen", "500m", "ex-frozen-1", nil)

	// Pending pods, each with its cause.
	c.pod("zone-b", "500m", "", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "us-east-1b"} })
	c.pod("huge", "6", "", nil)
	c.pod("db-1", "500m", "", func(p *corev1.Pod) {
		p.Labels["app"] = "db"
		p.Spec.NodeSelector = map[string]string{corev1.LabelTopologyZone: "us-east-1a"}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{TopologyKey: corev1.LabelTopologyZone, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}}}
	})

	objs, err := plan.Read(ctx, kc)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	its, _, err := cat.InstanceTypes(catalog.Options{Region: objs.Region()})
	if err != nil {
		t.Fatal(err)
	}
	cluster := objs.State(its)

	for _, tc := range []struct {
		pod, pool, want string
	}{
		{"zone-b", "ex-tainted", "does not tolerate taint dedicated=infra:NoSchedule"},
		{"zone-b", "ex-zone", "requires topology.kubernetes.io/zone In [us-east-1b], but only topology.kubernetes.io/zone In [us-east-1a] is allowed"},
		{"zone-b", "ex-limited", "would exceed the NodePool's limits (cpu 4 of 4 used)"},
		{"huge", "ex-slow", "no instance type is large enough: the pod needs 6 cpu, the largest compatible type, m6i.xlarge, has 3920m allocatable"},
		{"db-1", "ex-zone", "cannot satisfy pod anti-affinity on topology.kubernetes.io/zone (app=db); pods matching app=db by topology.kubernetes.io/zone: us-east-1a 1 (explain/db-0); NodePool ex-zone allows topology.kubernetes.io/zone In [us-east-1a]"},
	} {
		ex, err := plan.ExplainPod(ctx, cluster, c.ns, tc.pod, provisioning.Policy{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, v := range ex.Pools {
			if v.NodePool == tc.pool {
				found = true
				if v.CanRun || v.Why != tc.want {
					t.Errorf("pod %s, NodePool %s: can run %v, %q; want %q", tc.pod, tc.pool, v.CanRun, v.Why, tc.want)
				}
			}
		}
		if !found {
			t.Errorf("pod %s: no verdict of NodePool %s: %+v", tc.pod, tc.pool, ex.Pools)
		}
	}

	midnight := now.Truncate(24 * time.Hour).Add(24 * time.Hour).Format("Mon 15:04 MST")
	for _, tc := range []struct{ node, want string }{
		{"ex-dnd", "pod explain/pinned is annotated karpenter.sh/do-not-disrupt"},
		{"ex-pdb", "PodDisruptionBudget explain/db allows no eviction of pod db-0"},
		{"ex-frozen-1", `NodePool ex-frozen's budget allows no Underutilized disruption now: budgets[0] (nodes 0, from "0 0 * * *" for 24h0m0s), until ` + midnight},
		{"ex-slow-1", "consolidateAfter 2h0m0s has not passed since its last pod change at " + now.Add(-30*time.Minute).Format(time.RFC3339) +
			" (until " + now.Add(90*time.Minute).Format(time.RFC3339) + ")"},
	} {
		ex, err := plan.ExplainNode(ctx, cluster, tc.node, now, provisioning.Policy{})
		if err != nil {
			t.Fatal(err)
		}
		last := ex.Methods[len(ex.Methods)-1]
		if last.Method != "single-node consolidation" || last.Acts || last.Why != tc.want {
			t.Errorf("node %s: %+v, want consolidation held: %q", tc.node, ex.Methods, tc.want)
		}
	}

	// The binary, read-only against the same cluster.
	bin := buildJoiner(t)
	kubeconfig := writeKubeconfig(t)
	out, err := exec.Command(bin, "explain", "pod", c.ns+"/zone-b", "--kubeconfig", kubeconfig).CombinedOutput()
	if err != nil {
		t.Fatalf("explain pod: %v\n%s", err, out)
	}
	for _, want := range []string{"Pod explain/zone-b (requests cpu 500m, memory 1Gi, pods 1)",
		"  ex-limited  weight 30  no   would exceed the NodePool's limits (cpu 4 of 4 used)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("explain pod --kubeconfig lacks %q:\n%s", want, out)
		}
	}
	out, err = exec.Command(bin, "plan", "--kubeconfig", kubeconfig, "-o", "json").Output()
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, out)
	}
	var p plan.Plan
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	pending := map[string]bool{}
	for _, pe := range p.Pending {
		pending[pe.Pod] = true
	}
	if len(pending) != 2 || !pending["explain/huge"] || !pending["explain/db-1"] {
		t.Errorf("plan --kubeconfig: pending %+v, want explain/huge and explain/db-1", p.Pending)
	}
	// zone-b can run on the pools that do not pin a zone: ex-slow first.
	if len(p.NodeClaims) != 1 || p.NodeClaims[0].NodePool != "ex-slow" || strings.Join(p.NodeClaims[0].Pods, ",") != "explain/zone-b" {
		t.Errorf("plan --kubeconfig: node claims %+v, want one of ex-slow for explain/zone-b", p.NodeClaims)
	}
	// Nothing was written: the pods are still unbound, no NodeClaim came.
	claims := &v1.NodeClaimList{}
	if err := kc.List(ctx, claims); err != nil {
		t.Fatal(err)
	}
	for _, nc := range claims.Items {
		if !strings.HasPrefix(nc.Name, "ex-") && nc.CreationTimestamp.After(now.Add(-time.Second)) {
			t.Errorf("a NodeClaim appeared: %s", nc.Name)
		}
	}

	// A cluster that does not answer, and one without the CRDs.
	dead := filepath.Join(t.TempDir(), "dead")
	kcfg := clientcmdapi.NewConfig()
	kcfg.Clusters["dead"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kcfg.Contexts["dead"] = &clientcmdapi.Context{Cluster: "dead"}
	kcfg.CurrentContext = "dead"
	if err := clientcmd.WriteToFile(*kcfg, dead); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(bin, "plan", "--kubeconfig", dead).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "joiner: reading the API server at https://127.0.0.1:1 (from --kubeconfig "+dead+"; is the cluster up") {
		t.Errorf("an unreachable cluster: %v\n%s", err, out)
	}
	noCRDs, err := client.New(cfg, client.Options{Scheme: explainScheme(t), Mapper: meta.NewDefaultRESTMapper(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plan.Read(ctx, noCRDs); err == nil || err.Error() != "listing NodePools: "+plan.ErrNoCRD.Error() {
		t.Errorf("without the CRDs: %v", err)
	}
}

// TestLivePlanNamesUnmodelledKinds: plan over a live cluster names every
// object of a kind it does not model that the cluster holds — a
// LimitRange, a ResourceQuota, a DRA DeviceClass — as left out, with what
// leaving it out means; a kind the cluster does not serve (VPA here) is
// skipped.
func TestLivePlanNamesUnmodelledKinds(t *testing.T) {
	ctx := context.Background()
	_, kc := controllerClient(t)
	createPool(t, kc, "unmodelled", nil)
	defer func() { _ = kc.Delete(ctx, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "unmodelled"}}) }()
	ns := testNamespace(t, "unmodelled")
	objs := []client.Object{
		&corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}},
		&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota", Namespace: ns}, Spec: corev1.ResourceQuotaSpec{
			Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("10")}}},
		&resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "unmodelled-gpu"}},
	}
	for _, o := range objs {
		if err := kc.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		defer func(o client.Object) { _ = kc.Delete(ctx, o) }(o)
	}
	scheme, err := plan.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	reader, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	got, err := plan.Read(ctx, reader)
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]string{}
	for _, i := range got.IgnoredUnder(provisioning.Policy{}) { // upstream's default: device claims ignored
		named[i.Object()] = i.Why
	}
	for obj, why := range map[string]string{
		"LimitRange " + ns + "/defaults": "LimitRanges are not modelled",
		"ResourceQuota " + ns + "/quota": "ResourceQuotas are not modelled",
		"DeviceClass unmodelled-gpu":     "Dynamic Resource Allocation is not modelled",
	} {
		if !strings.HasPrefix(named[obj], why) {
			t.Errorf("%s: named %q, want %q…; all: %v", obj, named[obj], why, named)
		}
	}
	// With DRA modelled the class is read, not left out.
	for _, i := range got.IgnoredUnder(provisioning.Policy{ModelDRA: true}) {
		if i.Kind == "DeviceClass" {
			t.Errorf("under --ignore-dra-requests=false the DeviceClass is named as left out: %v", i)
		}
	}
	if !slices.ContainsFunc(got.DRA.Classes, func(c *resourcev1.DeviceClass) bool { return c.Name == "unmodelled-gpu" }) {
		t.Errorf("the live plan read DeviceClasses %v, want unmodelled-gpu among them", got.DRA.Classes)
	}
}
