//go:build integration

package chart

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	autoscalingv1beta1 "github.com/joiner-autoscaler/joiner/pkg/apis/autoscaling/v1beta1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
)

const (
	release   = "joiner"
	namespace = "joiner-system"
	apps      = "apps" // where the workload's pods are
)

// TestChartControllerRunsWithItsServiceAccount installs the chart with
// helm into a namespace that enforces Pod Security's restricted profile,
// then runs the real joiner binary with the Deployment's arguments and a
// token of the chart's ServiceAccount — only what the chart's roles grant.
// It provisions, launches, registers and initializes a NodeClaim for a
// pending pod, deletes a claim no offering can launch, drains a node
// through the Eviction API, consolidates an empty one, records events and
// serves every metric the alerts and dashboard use; and nothing it does is
// forbidden. The ServiceAccount cannot read a Secret or create a Pod.
// Leader election, with the same token, takes the Role's Lease. Then helm
// upgrades and uninstalls the release.
func TestChartControllerRunsWithItsServiceAccount(t *testing.T) {
	ctx := context.Background()
	admin := adminClient(t)
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: apps}},
	} {
		if err := admin.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	// Short batch windows: the controller provisions sooner, and the flags
	// they become are run.
	// The NodeOverlay gate on, with an overlay of a type no pool uses: its
	// list, watch and status patch are the chart's to grant. A default
	// spread constraint: the Services and pod controllers the controller
	// then watches are the chart's to grant too. The CapacityBuffer gate
	// on, with a buffer whose chunk no pool can hold: listing buffers,
	// reading its PodTemplate and writing its status are the chart's to
	// grant.
	_, stderr, err := helmWithStderr("install", release, chartDir, "--namespace", namespace,
		"--set", "settings.batchIdleDuration=200ms,settings.batchMaxDuration=2s,settings.featureGates.nodeOverlay=true,settings.featureGates.capacityBuffer=true",
		"--set-json", `settings.schedulerConfig={"podTopologySpread":{"defaultConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway"}]}}`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr, "PodSecurity") {
		t.Errorf("the Deployment's pods would violate Pod Security's restricted profile:\n%s", stderr)
	}
	var d appsv1.Deployment
	if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: release}, &d); err != nil {
		t.Fatalf("the chart's Deployment: %v", err)
	}
	checkPodSecurity(t, admin, &d)

	sa := serviceAccountConfig(t, d.Spec.Template.Spec.ServiceAccountName)
	saClient, err := client.New(sa, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("no Secrets, no Pods", func(t *testing.T) { checkForbidden(t, admin, saClient) })

	price := "0.5"
	unused := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "chart-test"}, Spec: v1alpha1.NodeOverlaySpec{Price: &price,
		Requirements: []v1alpha1.Requirement{{Key: "node.kubernetes.io/instance-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"x2iedn.32xlarge"}}}}}
	if err := admin.Create(ctx, unused); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Delete(ctx, unused) }()
	chunk := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "chart-chunk", Namespace: apps}, Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"no-pool-has": "this"}, Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}}
	held := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "chart-test", Namespace: apps},
		Spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: chunk.Name}, Replicas: ptr.To[int32](1)}}
	for _, o := range []client.Object{chunk, held} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		defer func(o client.Object) { _ = admin.Delete(ctx, o) }(o)
	}
	ctrl := startBinary(t, &d, sa)
	served := metricFamilies{}
	t.Run("provisions, drains, consolidates", func(t *testing.T) { doesItsJob(t, admin, ctrl.metricsURL, served) })
	t.Run("metrics the alerts and dashboard use", func(t *testing.T) { checkMetrics(t, ctrl.metricsURL, served) })
	eventually(t, "NodeOverlay chart-test ValidationSucceeded True, written by the controller", func(ctx context.Context) (bool, error) {
		var o v1alpha1.NodeOverlay
		err := admin.Get(ctx, client.ObjectKeyFromObject(unused), &o)
		return err == nil && meta.IsStatusConditionTrue(o.Status.Conditions, v1alpha1.ConditionValidationSucceeded), err
	})
	eventually(t, "CapacityBuffer chart-test ReadyForProvisioning and Provisioning, written by the controller", func(ctx context.Context) (bool, error) {
		var b autoscalingv1beta1.CapacityBuffer
		err := admin.Get(ctx, client.ObjectKeyFromObject(held), &b)
		prov := meta.FindStatusCondition(b.Status.Conditions, autoscalingv1beta1.ConditionProvisioning)
		return err == nil && meta.IsStatusConditionTrue(b.Status.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning) &&
			prov != nil && prov.Reason == autoscalingv1beta1.ReasonRequiresNewCapacity, err
	})
	ctrl.stop(t)
	if n := strings.Count(strings.ToLower(ctrl.log.String()), "forbidden"); n > 0 {
		t.Errorf("the controller was refused %d time(s) with the chart's RBAC:\n%s", n, forbiddenLines(ctrl.log.String()))
	}
	t.Run("leader election", func(t *testing.T) { checkLeaderElection(t, admin, sa) })

	// helm upgrade changes the Deployment; helm uninstall removes the
	// release but keeps the CRDs (and so every NodePool and NodeClaim).
	if _, err := helm("upgrade", release, chartDir, "--namespace", namespace, "--set", "settings.zones={us-east-1a}"); err != nil {
		t.Fatal(err)
	}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(&d), &d); err != nil {
		t.Fatal(err)
	}
	if args := strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--zones=us-east-1a") {
		t.Errorf("after helm upgrade the controller's args are %s", args)
	}
	if _, err := helm("uninstall", release, "--namespace", namespace, "--wait"); err != nil {
		t.Fatal(err)
	}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(&d), &d); !apierrors.IsNotFound(err) {
		t.Errorf("after helm uninstall the Deployment: %v", err)
	}
	var pools v1.NodePoolList
	if err := admin.List(ctx, &pools); err != nil {
		t.Errorf("after helm uninstall the NodePool CRD should stay: %v", err)
	}
}

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := autoscalingv1beta1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func adminClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: scheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkPodSecurity creates, as a server-side dry run, a pod of the
// Deployment's template in its namespace, where Pod Security admission
// enforces the restricted profile; a pod that escalates privileges is
// refused there, so the check is live.
func checkPodSecurity(t *testing.T, admin client.Client, d *appsv1.Deployment) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "restricted-check", Namespace: d.Namespace}, Spec: *d.Spec.Template.Spec.DeepCopy()}
	pod.Spec.PriorityClassName = "" // envtest has no PriorityClass admission to resolve it against
	if err := admin.Create(ctx, pod.DeepCopy(), client.DryRunAll); err != nil {
		t.Errorf("a pod of the chart's Deployment is refused in a restricted namespace: %v", err)
	}
	escalating := pod.DeepCopy()
	yes := true
	escalating.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = &yes
	if err := admin.Create(ctx, escalating, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "PodSecurity") {
		t.Errorf("Pod Security admission is not enforcing here (a privilege-escalating pod: %v)", err)
	}
}

// serviceAccountConfig is a client config with a token of the chart's
// ServiceAccount, as the API server would mount into its pod.
func serviceAccountConfig(t *testing.T, name string) *rest.Config {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hour := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of ServiceAccount %s/%s: %v", namespace, name, err)
	}
	return &rest.Config{Host: cfg.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}}
}

func checkForbidden(t *testing.T, admin, sa client.Client) {
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-password", Namespace: apps}, StringData: map[string]string{"password": "hunter2"}}
	if err := admin.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"get a Secret":                      sa.Get(ctx, client.ObjectKeyFromObject(secret), &corev1.Secret{}),
		"list Secrets":                      sa.List(ctx, &corev1.SecretList{}),
		"list Secrets in its own namespace": sa.List(ctx, &corev1.SecretList{}, client.InNamespace(namespace)),
		"create a Pod": sa.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "miner", Namespace: apps},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "miner"}}}}),
		"read a ConfigMap": sa.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "extension-apiserver-authentication"}, &corev1.ConfigMap{}),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("the chart's ServiceAccount may %s (err %v)", what, err)
		}
	}
	// It may do what it needs (the controller's run proves it is enough).
	if err := sa.List(ctx, &v1.NodePoolList{}); err != nil {
		t.Errorf("listing NodePools: %v", err)
	}
}

// controllerProcess is the joiner binary running as the chart's controller.
type controllerProcess struct {
	cmd        *exec.Cmd
	log        *syncBuffer
	done       chan error
	metricsURL string
	stopped    bool
}

// startBinary runs joiner with the Deployment's arguments, except for what
// only a pod has: its addresses move to free local ports, and leader
// election is off, since out of a cluster controller-runtime cannot find
// its namespace (joiner controller has no --leader-election-namespace
// flag); checkLeaderElection takes the Lease with the same token instead.
func startBinary(t *testing.T, d *appsv1.Deployment, sa *rest.Config) *controllerProcess {
	t.Helper()
	kubeconfigPath := filepath.Join(t.TempDir(), "sa.kubeconfig")
	if err := writeKubeconfig(kubeconfigPath, &clientcmdapi.AuthInfo{Token: sa.BearerToken}); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	metricsAddr, probeAddr := freeAddr(t), freeAddr(t)
	var args []string
	for _, a := range c.Args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=" + metricsAddr
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=" + probeAddr
		case strings.HasPrefix(a, "--leader-elect="):
			a = "--leader-elect=false"
		}
		args = append(args, a)
	}
	args = append(args, "--kubeconfig="+kubeconfigPath)
	p := &controllerProcess{log: &syncBuffer{}, done: make(chan error, 1), metricsURL: "http://" + metricsAddr + "/metrics"}
	p.cmd = exec.Command(joinerBin, args...)
	p.cmd.Env = os.Environ()
	for _, e := range c.Env {
		if e.ValueFrom == nil { // GOMEMLIMIT is the container's limit
			p.cmd.Env = append(p.cmd.Env, e.Name+"="+e.Value)
		}
	}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("joiner %s:\n%s", strings.Join(args, " "), p.log.String())
		}
	})
	// The probes the Deployment's kubelet would run.
	for _, probe := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		url := "http://" + probeAddr + probe.HTTPGet.Path
		eventually(t, "joiner answering "+probe.HTTPGet.Path, func(ctx context.Context) (bool, error) {
			select {
			case err := <-p.done:
				p.stopped = true
				return false, fmt.Errorf("joiner exited: %v\n%s", err, p.log.String())
			default:
			}
			resp, err := http.Get(url)
			if err != nil {
				return false, nil
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, nil
		})
	}
	return p
}

// stop ends the controller as a kubelet would (SIGTERM) and expects a
// clean exit.
func (p *controllerProcess) stop(t *testing.T) {
	if p.stopped {
		return
	}
	p.stopped = true
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("joiner exited after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		t.Error("joiner did not exit within 30 s of SIGTERM")
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// doesItsJob: what the controller does in a cluster, each step through a
// verb of the chart's roles.
func doesItsJob(t *testing.T, admin client.Client, metricsURL string, served metricFamilies) {
	ctx := context.Background()
	limit := resource.MustParse("100")
	pool := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	pool.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	pool.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
		{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i.large", "m6i.xlarge", "m6i.2xlarge"}},
	}
	pool.Spec.Limits = v1.Limits{corev1.ResourceCPU: limit}
	pool.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
	if err := admin.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the NodePool Ready, with its hash (nodepools update, nodepools/status patch)", func(ctx context.Context) (bool, error) {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			return false, err
		}
		for _, c := range pool.Status.Conditions {
			if c.Type == "Ready" && c.Status == metav1.ConditionTrue {
				return pool.Annotations[v1.AnnotationNodePoolHash] != "", nil
			}
		}
		return false, nil
	})

	// A pending pod gets a NodeClaim; the kwok provider creates its Node;
	// the claim registers and, once the Node is Ready, initializes.
	web := pendingPod(t, admin, "web", "3")
	nc := claimOf(t, admin, web)
	node := registered(t, admin, nc)
	bind(t, admin, web, node)
	ready(t, admin, node)
	eventually(t, "the claim initialized", func(ctx context.Context) (bool, error) {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
			return false, err
		}
		return claimCondition(nc, v1.ConditionInitialized), nil
	})
	// Series of a node go with it: scrape while this one runs a pod (the
	// gauges are set every 10 s).
	eventually(t, "karpenter_nodes_total_pod_requests on /metrics", func(context.Context) (bool, error) {
		return served.scrape(metricsURL) == nil && served["karpenter_nodes_total_pod_requests"] != "", nil
	})
	eventually(t, "the Nominated event (events.k8s.io create)", func(ctx context.Context) (bool, error) {
		var evs eventsv1.EventList
		if err := admin.List(ctx, &evs, client.InNamespace(apps)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "Nominated" && e.Regarding.Name == web.Name && strings.Contains(e.Note, nc.Name) {
				return true, nil
			}
		}
		return false, nil
	})

	// A claim no offering can launch is deleted, with an event.
	unlaunchable := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "unlaunchable", Labels: map[string]string{v1.LabelNodePool: pool.Name}}}
	unlaunchable.Spec.NodeClassRef = pool.Spec.Template.Spec.NodeClassRef
	unlaunchable.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i.large"}},
		{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1-nowhere"}},
	}
	if err := admin.Create(ctx, unlaunchable); err != nil {
		t.Fatal(err)
	}
	gone(t, admin, unlaunchable, "the unlaunchable claim deleted (nodeclaims delete)")

	// Deleting the claim drains its Node through the Eviction API, then
	// removes the Node and the claim's finalizer.
	if err := admin.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	gone(t, admin, web, "the pod evicted (pods/eviction create)")
	gone(t, admin, node, "the Node deleted (nodes update, delete)")
	gone(t, admin, nc, "the claim finalized (nodeclaims update)")

	// An empty node is consolidated: the disruption loop validates it for
	// 15 s, taints it and deletes its claim.
	batch := pendingPod(t, admin, "batch", "1")
	nc2 := claimOf(t, admin, batch)
	node2 := registered(t, admin, nc2)
	ready(t, admin, node2)
	if err := admin.Delete(ctx, batch); err != nil {
		t.Fatal(err)
	}
	goneWithin(t, 3*time.Minute, admin, nc2, "the empty node's claim consolidated away")
}

func pendingPod(t *testing.T, admin client.Client, name, cpu string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	zero := int64(0) // no kubelet confirms a graceful end here
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: apps},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &zero, Containers: []corev1.Container{{Name: "c", Image: "nginx", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	if err := admin.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	// kube-scheduler's verdict, which provisioning waits for.
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.Now()}}
	if err := admin.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// claimOf waits for the NodeClaim the controller nominated the pod for.
func claimOf(t *testing.T, admin client.Client, pod *corev1.Pod) *v1.NodeClaim {
	t.Helper()
	nc := &v1.NodeClaim{}
	eventually(t, "a NodeClaim for pod "+pod.Name+" (nodeclaims create)", func(ctx context.Context) (bool, error) {
		var evs eventsv1.EventList
		if err := admin.List(ctx, &evs, client.InNamespace(pod.Namespace)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "Nominated" && e.Regarding.Name == pod.Name && e.Related != nil {
				return true, admin.Get(ctx, client.ObjectKey{Name: e.Related.Name}, nc)
			}
		}
		return false, nil
	})
	return nc
}

// registered waits for the claim's Node (nodes create by the kwok
// provider) to register (nodes update, nodeclaims/status patch).
func registered(t *testing.T, admin client.Client, nc *v1.NodeClaim) *corev1.Node {
	t.Helper()
	node := &corev1.Node{}
	eventually(t, "NodeClaim "+nc.Name+" launched and registered", func(ctx context.Context) (bool, error) {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
			return false, err
		}
		if !claimCondition(nc, v1.ConditionLaunched) || !claimCondition(nc, v1.ConditionRegistered) {
			return false, nil
		}
		return true, admin.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node)
	})
	return node
}

// bind puts the pod on the node, as kube-scheduler would.
func bind(t *testing.T, admin client.Client, pod *corev1.Pod, node *corev1.Node) {
	t.Helper()
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}, Target: corev1.ObjectReference{Kind: "Node", Name: node.Name}}
	if err := admin.SubResource("binding").Create(context.Background(), pod, b); err != nil {
		t.Fatal(err)
	}
}

// ready reports the Node Ready, as kwok's controller would, and removes
// the not-ready taint the API server's TaintNodesByCondition admission put
// on it, as kube-controller-manager would.
func ready(t *testing.T, admin client.Client, node *corev1.Node) {
	t.Helper()
	eventually(t, "Node "+node.Name+" Ready", func(ctx context.Context) (bool, error) {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return false, err
		}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		return admin.Status().Update(ctx, node) == nil, nil // a conflict: read and try again
	})
	eventually(t, "Node "+node.Name+" without the not-ready taint", func(ctx context.Context) (bool, error) {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return false, err
		}
		var kept []corev1.Taint
		for _, taint := range node.Spec.Taints {
			if taint.Key != corev1.TaintNodeNotReady {
				kept = append(kept, taint)
			}
		}
		node.Spec.Taints = kept
		return admin.Update(ctx, node) == nil, nil
	})
}

func claimCondition(nc *v1.NodeClaim, t string) bool {
	for _, c := range nc.Status.Conditions {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

func gone(t *testing.T, admin client.Client, obj client.Object, what string) {
	t.Helper()
	goneWithin(t, time.Minute, admin, obj, what)
}

func goneWithin(t *testing.T, timeout time.Duration, admin client.Client, obj client.Object, what string) {
	t.Helper()
	eventuallyWithin(t, timeout, what, func(ctx context.Context) (bool, error) {
		err := admin.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// eventually polls cond every 100 ms for up to a minute: each step takes
// the controller a second or two, but two cores shared with other tests
// can make that many.
func eventually(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	eventuallyWithin(t, time.Minute, what, cond)
}

func eventuallyWithin(t *testing.T, timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// metricFamilies are the metric families (name → type) a test has seen
// on the controller's /metrics, over all its scrapes.
type metricFamilies map[string]string

// scrape adds what /metrics serves now, from the exposition format's TYPE
// lines.
func (m metricFamilies) scrape(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			m[f[2]] = f[3]
		}
	}
	return sc.Err()
}

// checkMetrics scrapes the controller's /metrics once more and finds, in
// what its scrapes served, every metric the chart's alerts and dashboard
// use (test/promrules/metrics.txt, which test/promrules keeps equal to
// what their PromQL selects). up is Prometheus's own, of every target.
func checkMetrics(t *testing.T, url string, served metricFamilies) {
	want, err := os.ReadFile(filepath.Join("..", "promrules", "metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := served.scrape(url); err != nil {
		t.Fatal(err)
	}
	for _, name := range strings.Fields(string(want)) {
		if name == "up" || served[name] != "" {
			continue
		}
		found := false
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && (served[base] == "histogram" || (suffix != "_bucket" && served[base] == "summary")) {
				found = true
			}
		}
		if !found {
			t.Errorf("the alerts or dashboard use %s, which the controller's /metrics did not serve", name)
		}
	}
}

// checkLeaderElection: with the ServiceAccount's token, controller-runtime's
// leader election (as joiner controller --leader-elect runs it) creates
// and takes the Lease the chart's Role names, records its event, and
// releases the Lease on the way out.
func checkLeaderElection(t *testing.T, admin client.Client, sa *rest.Config) {
	ctx := context.Background()
	var role rbacv1.Role
	if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: release}, &role); err != nil {
		t.Fatal(err)
	}
	var lease string
	for _, r := range role.Rules {
		if len(r.Resources) == 1 && r.Resources[0] == "leases" && len(r.ResourceNames) == 1 {
			lease = r.ResourceNames[0]
		}
	}
	if lease != "joiner-leader-election" {
		t.Fatalf("the Role names Lease %q; joiner controller elects with joiner-leader-election", lease)
	}
	mgr, err := manager.New(sa, manager.Options{Scheme: scheme(t), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		LeaderElection: true, LeaderElectionNamespace: namespace, LeaderElectionID: lease, LeaderElectionReleaseOnCancel: true})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	select {
	case <-mgr.Elected():
	case err := <-done:
		cancel()
		t.Fatalf("leader election with the chart's ServiceAccount: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("not elected within 60 s with the chart's ServiceAccount")
	}
	var l coordinationv1.Lease
	if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: lease}, &l); err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		t.Errorf("Lease %s: %v, holder %v", lease, err, l.Spec.HolderIdentity)
	}
	eventually(t, "the LeaderElection event (core events create)", func(ctx context.Context) (bool, error) {
		var evs corev1.EventList
		if err := admin.List(ctx, &evs, client.InNamespace(namespace)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "LeaderElection" && e.InvolvedObject.Name == lease {
				return true, nil
			}
		}
		return false, nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("manager: %v", err)
	}
	eventually(t, "the Lease released (leases update)", func(ctx context.Context) (bool, error) {
		if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: lease}, &l); err != nil {
			return false, err
		}
		return l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "", nil
	})
}

// syncBuffer is a bytes.Buffer the process's output goroutines and the
// test may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func forbiddenLines(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(strings.ToLower(l), "forbidden") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
