//go:build integration

package integration

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	autoscalingv1beta1 "github.com/joiner-autoscaler/joiner/pkg/apis/autoscaling/v1beta1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/kwok"
	"github.com/joiner-autoscaler/joiner/pkg/controller"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
)

func controllerScheme(t *testing.T) *runtime.Scheme {
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

// controllerClient is the controller's scheme and a client of the test's
// API server that knows it.
func controllerClient(t *testing.T) (*runtime.Scheme, client.Client) {
	t.Helper()
	scheme := controllerScheme(t)
	kc, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return scheme, kc
}

// startController runs a Joiner controller with the kwok provider against
// the test's API server until the returned stop is called.
func startController(t *testing.T, scheme *runtime.Scheme) (*controller.Controller, func()) {
	t.Helper()
	c, _, stop := startControllerWithProvider(t, scheme)
	return c, stop
}

// startControllerWithProvider is startController, with its kwok provider.
func startControllerWithProvider(t *testing.T, scheme *runtime.Scheme) (*controller.Controller, *kwok.Provider, func()) {
	t.Helper()
	var provider *kwok.Provider
	c, stop := runController(t, scheme, func(_ context.Context, mgr manager.Manager) (controller.CloudProvider, error) {
		var err error
		provider, err = kwok.New(mgr.GetClient(), catalogTypes(t, catalog.Options{Region: "us-east-1"}), clock.RealClock{})
		return provider, err
	})
	return c, provider, stop
}

// kwokProvider makes the kwok provider over us-east-1's catalog, for
// runController.
func kwokProvider(t *testing.T) func(context.Context, manager.Manager) (controller.CloudProvider, error) {
	return func(_ context.Context, mgr manager.Manager) (controller.CloudProvider, error) {
		return kwok.New(mgr.GetClient(), catalogTypes(t, catalog.Options{Region: "us-east-1"}), clock.RealClock{})
	}
}

// runController runs a Joiner controller against the test's API server,
// launching through the provider newProvider makes for its manager, until
// the returned stop is called.
func runController(t *testing.T, scheme *runtime.Scheme, newProvider func(context.Context, manager.Manager) (controller.CloudProvider, error),
	options ...func(*controller.Options)) (*controller.Controller, func()) {
	t.Helper()
	logControllerTo(t)
	mgr, err := manager.New(cfg, manager.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	provider, err := newProvider(ctx, mgr)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	opts := controller.Options{CloudProvider: provider, BatchIdle: 100 * time.Millisecond, BatchMax: time.Second, Restartable: true}
	for _, o := range options {
		o(&opts)
	}
	c, err := controller.New(ctx, mgr, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("the controller's caches did not sync")
	}
	// Its decisions wait for the Store to be complete; a test that asks
	// for one at once waits too.
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !c.WaitSynced(syncCtx) {
		t.Fatal("the controller did not sync within a minute")
	}
	return c, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}
}

// runOn does what kube-scheduler and the kubelet do: binds the pod to the
// node and reports it Running.
func runOn(t *testing.T, kc client.Client, pod *corev1.Pod, node string) {
	t.Helper()
	ctx := context.Background()
	if err := kc.SubResource("binding").Create(ctx, pod, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}); err != nil {
		t.Fatal(err)
	}
	if err := kc.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Phase = corev1.PodRunning
	if err := kc.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
}

// catalogTypes are the embedded EC2 catalog's instance types as opts say.
func catalogTypes(t *testing.T, opts catalog.Options) []*cloudprovider.InstanceType {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	types, _, err := cat.InstanceTypes(opts)
	if err != nil {
		t.Fatal(err)
	}
	return types
}

// eventually polls cond every 100 ms for up to a minute: what it waits for
// takes a second or two, but a 2-core machine under -race with
// kube-apiserver, etcd and the controller on it can take ten times that.
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

// TestControllerProvisionsAndRestarts: a pod kube-scheduler found no room
// for gets a NodeClaim from its NodePool; the claim is launched (the kwok
// provider registers its Node), registered (labels, taints, no
// unregistered taint, finalizers) and, once its Node is Ready, initialized.
// A controller started afresh rebuilds its state from the API server and
// plans nothing more for the pod and collects no garbage; deleting the
// claim drains its Node through the Eviction API, then removes it.
func TestControllerProvisionsAndRestarts(t *testing.T) {
	ctx := context.Background()
	scheme, kc := controllerClient(t)
	_, stop := startController(t, scheme)
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()

	np := createPool(t, kc, "general", func(np *v1.NodePool) {
		np.Spec.Template.Labels = map[string]string{"team": "checkout"}
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "checkout", Effect: corev1.TaintEffectNoSchedule}}
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never") // this test is not about consolidation
	})
	pod := createPendingPod(t, kc, "web", "3", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists})
	nc := claimOfPool(t, kc, "general")
	if nc.Labels[v1.LabelNodePool] != "general" || nc.Labels["team"] != "checkout" || nc.Annotations[v1.AnnotationNodePoolHash] == "" {
		t.Errorf("claim labels %v, annotations %v", nc.Labels, nc.Annotations)
	}
	// Events say where the pod goes, and why a pod no pool can hold stays.
	huge := createPendingPod(t, kc, "huge", "1000")
	defer func() { _ = kc.Delete(ctx, huge) }()
	eventually(t, "the Nominated and FailedScheduling events", func(ctx context.Context) (bool, error) {
		return podEvent(ctx, kc, "web", "Nominated", "nodeclaim/"+nc.Name) && podEvent(ctx, kc, "huge", "FailedScheduling", "general"), nil
	})
	node := waitRegistered(t, kc, &nc)
	// 3 cores and a pool of m6i.large/xlarge/2xlarge: the xlarge (4 vCPU).
	if it := node.Labels[v1.LabelInstanceType]; it != "m6i.xlarge" || node.Spec.ProviderID != nc.Status.ProviderID {
		t.Errorf("node %s: instance type %s, providerID %q (claim %q)", node.Name, it, node.Spec.ProviderID, nc.Status.ProviderID)
	}
	if node.Labels["team"] != "checkout" || node.Labels[v1.LabelNodePool] != "general" {
		t.Errorf("the Node lacks the claim's labels: %v", node.Labels)
	}
	for _, taint := range node.Spec.Taints {
		if taint.MatchTaint(&v1.UnregisteredTaint) {
			t.Error("a registered Node keeps the unregistered taint")
		}
	}
	if len(node.Finalizers) == 0 || len(nc.Finalizers) == 0 {
		t.Errorf("finalizers: node %v, claim %v", node.Finalizers, nc.Finalizers)
	}
	eventually(t, "the NodePool's status and hash", func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKey{Name: np.Name}, np); err != nil {
			return false, err
		}
		cpu, nodes := np.Status.Resources[corev1.ResourceCPU], np.Status.Resources["nodes"]
		return np.Status.Nodes != nil && *np.Status.Nodes == 1 && cpu.Value() == 4 && nodes.Value() == 1 && poolCondition(np, controller.ConditionReady) &&
			np.Annotations[v1.AnnotationNodePoolHash] != "" && np.Annotations[v1.AnnotationNodePoolHashVersion] == controller.NodePoolHashVersion, nil
	})
	if claimCondition(&nc, v1.ConditionInitialized) {
		t.Fatal("initialized before its Node was Ready")
	}
	becomeReady(t, kc, node)
	eventually(t, "the claim initialized", func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKey{Name: nc.Name}, &nc); err != nil {
			return false, err
		}
		return claimCondition(&nc, v1.ConditionInitialized), nil
	})

	// Restart: a new controller knows only what the API server holds.
	stop()
	stopped = true
	c2, stop2 := startController(t, scheme)
	defer stop2()
	eventually(t, "the new controller sees the claim and its Node", func(context.Context) (bool, error) {
		for _, n := range c2.Store().Nodes() {
			if n.NodeClaim != nil && n.Node != nil && n.NodeClaim.Name == nc.Name && n.Initialized() {
				return true, nil
			}
		}
		return false, nil
	})
	created, err := c2.Provision(ctx)
	if err != nil || len(created) != 0 {
		t.Fatalf("after a restart the pending pod's node is known: created %d claims (%v)", len(created), err)
	}
	// Garbage collection after a restart finds the claim's instance (its
	// Node) and leaves both alone.
	if err := c2.CollectGarbage(ctx); err != nil {
		t.Fatal(err)
	}
	if err := kc.Get(ctx, client.ObjectKey{Name: nc.Name}, &nc); err != nil || nc.DeletionTimestamp != nil {
		t.Fatalf("garbage collection took a claimed instance's claim: %v", err)
	}

	// What kube-scheduler and the kubelet do: the pod runs on the node.
	runOn(t, kc, pod, node.Name)
	eventually(t, "the metrics", func(context.Context) (bool, error) {
		got := gathered(t)
		return got["karpenter_nodeclaims_created_total"] >= 1 && got["karpenter_pods_startup_duration_seconds_count"] >= 1 &&
			got["karpenter_scheduler_scheduling_duration_seconds_count"] >= 1, nil
	})
	if n := gaugeValue(t, "karpenter_nodepools_usage", map[string]string{"nodepool": "general", "resource_type": "nodes"}); n != 1 {
		t.Errorf("karpenter_nodepools_usage{resource_type=nodes} = %v, want 1", n)
	}
	if n := gaugeValue(t, "karpenter_scheduler_queue_depth", map[string]string{"controller": "provisioner"}); n < 0 {
		t.Errorf("karpenter_scheduler_queue_depth is not exported")
	}
	if n := histogramCount(t, "karpenter_cloudprovider_duration_seconds", map[string]string{"controller": "nodeclaim.lifecycle", "method": "Create", "provider": "kwok"}); n < 1 {
		t.Errorf("karpenter_cloudprovider_duration_seconds timed %v launches", n)
	}
	// The node's pod requests (3 cores) and what the pool costs now.
	eventually(t, "the node and pool gauges", func(context.Context) (bool, error) {
		c2.UpdateGauges()
		return gaugeValue(t, "karpenter_nodes_total_pod_requests", map[string]string{"node_name": node.Name, "nodepool": "general", "resource_type": "cpu"}) == 3 &&
			gaugeValue(t, "joiner_nodepool_cost_per_hour_usd", map[string]string{"nodepool": "general"}) > 0, nil
	})
	// A pod running on the node: deleting the claim drains it first.
	zero := int64(0)
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "running", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node.Name, TerminationGracePeriodSeconds: &zero, Tolerations: pod.Spec.Tolerations,
			Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	if err := kc.Create(ctx, running); err != nil {
		t.Fatal(err)
	}
	if err := kc.Delete(ctx, &nc); err != nil {
		t.Fatal(err)
	}
	gone := func(ctx context.Context, key client.ObjectKey, obj client.Object) bool {
		err := kc.Get(ctx, key, obj)
		return err != nil && client.IgnoreNotFound(err) == nil
	}
	eventually(t, "the pod evicted, the claim and its Node gone", func(ctx context.Context) (bool, error) {
		return gone(ctx, client.ObjectKeyFromObject(running), &corev1.Pod{}) && gone(ctx, client.ObjectKey{Name: nc.Name}, &v1.NodeClaim{}) &&
			gone(ctx, client.ObjectKey{Name: node.Name}, &corev1.Node{}), nil
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

// controllerLog sends the controllers' log lines to the log of the test
// that runs them now. controller-runtime takes one logger per process —
// SetLogger's later calls do not reach the loggers already handed out — so
// a logger set per test sent every later test's controller lines to the
// first one's log, and a failure in CI had none of its own to read.
var controllerLog struct {
	once sync.Once
	mu   sync.Mutex
	t    *testing.T
}

// logControllerTo sends the controllers' log lines to t's log until t
// ends (lines after that, and between tests, are dropped).
func logControllerTo(t *testing.T) {
	controllerLog.once.Do(func() { crlog.SetLogger(zap.New(zap.WriteTo(controllerWriter{}))) })
	controllerLog.mu.Lock()
	controllerLog.t = t
	controllerLog.mu.Unlock()
	t.Cleanup(func() {
		controllerLog.mu.Lock()
		defer controllerLog.mu.Unlock()
		if controllerLog.t == t {
			controllerLog.t = nil
		}
	})
}

type controllerWriter struct{}

func (controllerWriter) Write(b []byte) (int, error) {
	controllerLog.mu.Lock()
	defer controllerLog.mu.Unlock()
	if t := controllerLog.t; t != nil {
		t.Log(strings.TrimRight(string(b), "\n"))
	}
	return len(b), nil
}

func poolCondition(np *v1.NodePool, t string) bool {
	for _, c := range np.Status.Conditions {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// createPool creates a NodePool of on-demand m6i.large/xlarge/2xlarge,
// changed by mutate.
func createPool(t *testing.T, kc client.Client, name string, mutate func(*v1.NodePool)) *v1.NodePool {
	t.Helper()
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
		{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i.large", "m6i.xlarge", "m6i.2xlarge"}},
	}
	np.Spec.Template.Labels = map[string]string{"pool": name}
	if mutate != nil {
		mutate(np)
	}
	if err := kc.Create(context.Background(), np); err != nil {
		t.Fatal(err)
	}
	return np
}

// waitPoolSeen waits until the controller has reconciled the NodePool (its
// Ready condition set, so the controller's cache holds it).
func waitPoolSeen(t *testing.T, kc client.Client, name string) {
	t.Helper()
	eventually(t, "the controller seeing NodePool "+name, func(ctx context.Context) (bool, error) {
		var np v1.NodePool
		if err := kc.Get(ctx, client.ObjectKey{Name: name}, &np); err != nil {
			return false, err
		}
		return meta.FindStatusCondition(np.Status.Conditions, controller.ConditionReady) != nil, nil
	})
}

// createPendingPod creates a pod of cpu cores that kube-scheduler has
// found no room for (the verdict provisioning waits for), with no grace
// period to end.
func createPendingPod(t *testing.T, kc client.Client, name, cpu string, tolerations ...corev1.Toleration) *corev1.Pod {
	t.Helper()
	return pendingPodWith(t, kc, name, func(p *corev1.Pod) {
		p.Spec.Tolerations = tolerations
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	})
}

// pendingPodWith is createPendingPod of a 1-core pod changed by mutate.
func pendingPodWith(t *testing.T, kc client.Client, name string, mutate func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	zero := int64(0) // no kubelet confirms a graceful end here
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &zero, Containers: []corev1.Container{{Name: "c", Image: "nginx", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	mutate(pod)
	if err := kc.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		LastTransitionTime: metav1.Now()}}
	if err := kc.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// claimOfPool waits for the one NodeClaim of a pool.
func claimOfPool(t *testing.T, kc client.Client, pool string) v1.NodeClaim {
	t.Helper()
	var nc v1.NodeClaim
	eventually(t, "a NodeClaim of NodePool "+pool, func(ctx context.Context) (bool, error) {
		var list v1.NodeClaimList
		if err := kc.List(ctx, &list, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil || len(list.Items) == 0 {
			return false, err
		}
		if len(list.Items) > 1 {
			t.Fatalf("%d NodeClaims of NodePool %s", len(list.Items), pool)
		}
		nc = list.Items[0]
		return true, nil
	})
	return nc
}

// becomeReady is what kwok's controller (or a kubelet) does — the Node
// turns Ready — and then kube-controller-manager's node lifecycle
// controller: the not-ready taint the API server put on it goes.
func becomeReady(t *testing.T, kc client.Client, node *corev1.Node) {
	t.Helper()
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := kc.Status().Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the not-ready taint removed", func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return false, err
		}
		var kept []corev1.Taint
		for _, taint := range node.Spec.Taints {
			if taint.Key != corev1.TaintNodeNotReady {
				kept = append(kept, taint)
			}
		}
		node.Spec.Taints = kept
		return kc.Update(ctx, node) == nil, nil // a conflict: read and try again
	})
}

// waitRegistered waits for the claim's Node to register and returns it.
func waitRegistered(t *testing.T, kc client.Client, nc *v1.NodeClaim) *corev1.Node {
	t.Helper()
	node := &corev1.Node{}
	eventually(t, "the claim registered", func(ctx context.Context) (bool, error) {
		if err := kc.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
			return false, err
		}
		if !claimCondition(nc, v1.ConditionRegistered) {
			return false, nil
		}
		return true, kc.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node)
	})
	return node
}

// TestControllerConsolidatesAnEmptyNode: once its only pod is gone, an
// initialized node of a pool with consolidateAfter 0s is consolidated —
// validated after 15 s, tainted, and its claim deleted — by the
// controller's own disruption loop.
func TestControllerConsolidatesAnEmptyNode(t *testing.T) {
	ctx := context.Background()
	scheme, kc := controllerClient(t)
	_, stop := startController(t, scheme)
	defer stop()
	createPool(t, kc, "batch", func(np *v1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "batch", Effect: corev1.TaintEffectNoSchedule}}
	})
	pod := createPendingPod(t, kc, "job", "1", corev1.Toleration{Key: "batch", Operator: corev1.TolerationOpExists})
	nc := claimOfPool(t, kc, "batch")
	node := waitRegistered(t, kc, &nc)
	becomeReady(t, kc, node)
	if err := kc.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	eventuallyWithin(t, time.Minute, "the empty node consolidated", func(ctx context.Context) (bool, error) {
		err := kc.Get(ctx, client.ObjectKeyFromObject(&nc), &v1.NodeClaim{})
		return err != nil && client.IgnoreNotFound(err) == nil, nil
	})
	// Upstream's labels: reasons in snake case, the consolidation type.
	if n := counterValue(t, "karpenter_nodeclaims_disrupted_total", map[string]string{"nodepool": "batch", "reason": "empty", "capacity_type": nc.Labels[v1.LabelCapacityType]}); n != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{nodepool=batch,reason=empty} = %v, want 1", n)
	}
	if n := counterValue(t, "karpenter_voluntary_disruption_decisions_total", map[string]string{"decision": "delete", "reason": "empty", "consolidation_type": "empty"}); n < 1 {
		t.Errorf("karpenter_voluntary_disruption_decisions_total{decision=delete,reason=empty,consolidation_type=empty} = %v", n)
	}
}

// gathered sums each metric of controller-runtime's registry (histograms by
// their sample counts, as NAME_count).
func gathered(t *testing.T) map[string]float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				out[f.GetName()] += m.GetCounter().GetValue()
			case m.GetHistogram() != nil:
				out[f.GetName()+"_count"] += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// podEvent: an Event of the reason on the pod whose note contains text.
func podEvent(ctx context.Context, kc client.Client, pod, reason, text string) bool {
	var list eventsv1.EventList
	if err := kc.List(ctx, &list, client.InNamespace("default")); err != nil {
		return false
	}
	for _, e := range list.Items {
		if e.Regarding.Name == pod && e.Reason == reason && strings.Contains(e.Note, text) {
			return true
		}
	}
	return false
}

// TestControllerStopsAtLimits: a NodePool whose limits leave no room says
// so — an Event on the pool and on the pod — and /metrics shows its limit.
func TestControllerStopsAtLimits(t *testing.T) {
	scheme, kc := controllerClient(t)
	_, stop := startController(t, scheme)
	defer stop()
	createPool(t, kc, "capped", func(np *v1.NodePool) {
		np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("2")}
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "capped", Effect: corev1.TaintEffectNoSchedule}}
	})
	pod := createPendingPod(t, kc, "too-big", "3", corev1.Toleration{Key: "capped", Operator: corev1.TolerationOpExists})
	defer func() { _ = kc.Delete(context.Background(), pod) }()
	eventually(t, "the limit events", func(ctx context.Context) (bool, error) {
		return podEvent(ctx, kc, "capped", "NodePoolLimitReached", "limits") && podEvent(ctx, kc, "too-big", "FailedScheduling", "limits"), nil
	})
	var list v1.NodeClaimList
	if err := kc.List(context.Background(), &list, client.MatchingLabels{v1.LabelNodePool: "capped"}); err != nil || len(list.Items) != 0 {
		t.Fatalf("a pool at its limits launched %d claims (%v)", len(list.Items), err)
	}
	eventually(t, "the limit gauge", func(context.Context) (bool, error) {
		return gaugeValue(t, "karpenter_nodepools_limit", map[string]string{"nodepool": "capped", "resource_type": "cpu"}) == 2, nil
	})
}

// gaugeValue is the gauge's value for the labels (-1 when absent).
func gaugeValue(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	values := metricValues(t, name, labels, func(m *dto.Metric) float64 { return m.GetGauge().GetValue() })
	if len(values) == 0 {
		return -1
	}
	return values[0]
}

// metricValues are the values of the metrics of family name whose labels
// include labels.
func metricValues(t *testing.T, name string, labels map[string]string, value func(*dto.Metric) float64) []float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
					continue metrics
				}
			}
			out = append(out, value(m))
		}
	}
	return out
}

// TestControllerPlansAroundInsufficientCapacity: a claim no offering can
// launch is deleted; the provider remembers the shortage, the Store's
// offerings are refreshed, and the next pass plans nothing that cannot
// launch — the pod says why instead of claims being made and deleted in a
// loop.
func TestControllerPlansAroundInsufficientCapacity(t *testing.T) {
	scheme, kc := controllerClient(t)
	_, provider, stop := startControllerWithProvider(t, scheme)
	defer stop()
	np := createPool(t, kc, "short", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements[1].Values = []string{"m6i.xlarge"}
		// One zone: the simulated EC2 tries one offering per type a launch.
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
			v1.NodeSelectorRequirementWithMinValues{Key: v1.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1a"}})
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "short", Effect: corev1.TaintEffectNoSchedule}}
	})
	var its []*cloudprovider.InstanceType
	eventually(t, "the provider told of the pool", func(ctx context.Context) (bool, error) {
		got, err := provider.GetInstanceTypes(ctx, np)
		its = got
		return err == nil && len(its) == 1, nil
	})
	for _, o := range its[0].Offerings {
		provider.SetCapacity(its[0].Name, o.Zone, o.CapacityType, false)
	}
	pod := createPendingPod(t, kc, "no-room", "1", corev1.Toleration{Key: "short", Operator: corev1.TolerationOpExists})
	defer func() { _ = kc.Delete(context.Background(), pod) }()
	eventually(t, "the pod told no offering is available", func(ctx context.Context) (bool, error) {
		return podEvent(ctx, kc, "no-room", "FailedScheduling", "short"), nil
	})
	created := counterValue(t, "karpenter_nodeclaims_created_total", map[string]string{"nodepool": "short"})
	if created != 1 {
		t.Errorf("%v claims created for a pod no offering can hold, want the one that found out", created)
	}
	// The claim is deleted before the pass that tells the pod, but its
	// finalizer goes in a reconcile of its own, which may come later.
	eventually(t, "the claim that found out gone", func(ctx context.Context) (bool, error) {
		var list v1.NodeClaimList
		err := kc.List(ctx, &list, client.MatchingLabels{v1.LabelNodePool: "short"})
		return err == nil && len(list.Items) == 0, err
	})
}

// histogramCount is the histograms' summed sample count for the labels.
func histogramCount(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	total := 0.0
	for _, v := range metricValues(t, name, labels, func(m *dto.Metric) float64 { return float64(m.GetHistogram().GetSampleCount()) }) {
		total += v
	}
	return total
}

// counterValue is the counters' sum for the labels (0 when absent).
func counterValue(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	total := 0.0
	for _, v := range metricValues(t, name, labels, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() }) {
		total += v
	}
	return total
}

// TestControllerRecordsPodEvents: a pod bound to a Joiner node, and the
// same pod going terminating there, are recorded in its claim's
// status.lastPodEventTime (upstream's nodeclaim.podevents), and the
// node, empty, is consolidated no sooner than consolidateAfter after the
// last of them — not counted from its initialization.
func TestControllerRecordsPodEvents(t *testing.T) {
	ctx := context.Background()
	scheme, kc := controllerClient(t)
	_, stop := startController(t, scheme)
	defer stop()
	const after = 10 * time.Second
	createPool(t, kc, "events", func(np *v1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration(after.String())
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "events", Effect: corev1.TaintEffectNoSchedule}}
	})
	pod := createPendingPod(t, kc, "evented", "1", corev1.Toleration{Key: "events", Operator: corev1.TolerationOpExists})
	defer func() { _ = kc.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) }()
	nc := claimOfPool(t, kc, "events")
	node := waitRegistered(t, kc, &nc)
	becomeReady(t, kc, node)
	lastEvent := func(ctx context.Context) time.Time {
		if err := kc.Get(ctx, client.ObjectKeyFromObject(&nc), &nc); err != nil {
			t.Fatal(err)
		}
		return nc.Status.LastPodEventTime.Time
	}
	// Times on the API server's second: metav1.Time is written in seconds.
	bound := time.Now().Truncate(time.Second)
	if err := kc.SubResource("binding").Create(ctx, pod, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Target: corev1.ObjectReference{Kind: "Node", Name: node.Name}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the binding recorded", func(ctx context.Context) (bool, error) { return !lastEvent(ctx).Before(bound), nil })
	first := lastEvent(ctx)
	// A second event within five seconds of the first is not recorded
	// (upstream's dedupe); past them, the pod going terminating is. No
	// kubelet ends it: it stays terminating until the test removes it.
	eventually(t, "five seconds past the first event", func(context.Context) (bool, error) {
		return time.Since(first) > disruption.PodEventDedupe, nil
	})
	terminating := time.Now().Truncate(time.Second)
	if err := kc.Delete(ctx, pod, client.GracePeriodSeconds(300)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the termination recorded", func(ctx context.Context) (bool, error) { return !lastEvent(ctx).Before(terminating), nil })
	last := lastEvent(ctx)
	if err := kc.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	// Seen deleted no later than it was: seen before the earliest it may
	// be, it was deleted before too.
	var seen time.Time
	eventuallyWithin(t, 2*time.Minute, "the empty node consolidated", func(ctx context.Context) (bool, error) {
		err := kc.Get(ctx, client.ObjectKeyFromObject(&nc), &nc)
		seen = time.Now()
		if client.IgnoreNotFound(err) != nil {
			return false, err
		}
		return err != nil || nc.DeletionTimestamp != nil, nil
	})
	if earliest := last.Add(after); seen.Before(earliest) {
		t.Errorf("the node was consolidated by %s, before its last pod event %s + consolidateAfter %s",
			seen.Format(time.RFC3339), last.Format(time.RFC3339), after)
	}
}
