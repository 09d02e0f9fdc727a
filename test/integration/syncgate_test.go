//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/kwok"
	"github.com/joiner-autoscaler/joiner/pkg/controller"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
)

// gateNodes is how many nodes the restarted controller finds.
const gateNodes = 300

// throttledProvider is the kwok provider whose instance-type listing for
// one NodePool fails until released, as an EC2 API throttled at a
// controller's start would.
type throttledProvider struct {
	*kwok.Provider
	pool     string
	released atomic.Bool
}

func (p *throttledProvider) GetInstanceTypes(ctx context.Context, np *v1.NodePool) ([]*cloudprovider.InstanceType, error) {
	if np.Name == p.pool && !p.released.Load() {
		return nil, errors.New("RequestLimitExceeded: request limit exceeded (throttled)")
	}
	return p.Provider.GetInstanceTypes(ctx, np)
}

// slowPodLists delays every list of pods by delay, as a loaded API server
// answering a big cluster's list would: a LIST, or a watch that begins
// with the whole list (client-go's WatchList, sendInitialEvents=true).
type slowPodLists struct {
	next  http.RoundTripper
	delay time.Duration
	lists atomic.Int32
}

func (s *slowPodLists) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/pods") && (q.Get("watch") == "" || q.Get("sendInitialEvents") == "true") {
		s.lists.Add(1)
		select {
		case <-time.After(s.delay):
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	return s.next.RoundTrip(req)
}

// A Joiner started against a cluster of 300 nodes full of pods — its pod
// list slowed, and its cloud throttling the instance-type listing of the
// NodePool those nodes are in — decides nothing until it has seen all of
// it: /readyz says what it waits for, provisioning, disruption and garbage
// collection refuse with ErrNotSynced, and no NodeClaim is created,
// deleted or tainted. Without the gate, a pending pod would be given a
// node of the lower-weight pool (the only one whose types are known). Once
// the cloud answers it provisions from the right pool and leaves the 300
// full nodes alone.
func TestSyncGateHoldsDecisionsOnAPartialView(t *testing.T) {
	ctx := context.Background()
	scheme, kc := controllerClient(t)
	const primary, fallback = "gate-primary", "gate-fallback"
	pool := func(name string, weight int32, types ...string) *v1.NodePool {
		return createPool(t, kc, name, func(np *v1.NodePool) {
			np.Spec.Weight = &weight
			np.Spec.Template.Labels = map[string]string{"gate": "yes"}
			np.Spec.Template.Spec.Requirements[1].Values = types
			np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
			np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
		})
	}
	np := pool(primary, 100, "m6i.xlarge")
	pool(fallback, 10, "m6i.large", "m6i.xlarge")
	if err := kc.Get(ctx, client.ObjectKeyFromObject(np), np); err != nil {
		t.Fatal(err)
	}
	ns := testNamespace(t, "gate")
	t.Cleanup(func() { removeGateCluster(t, kc, ns, primary, fallback) })
	start := time.Now()
	makeFullNodes(t, kc, np, ns, gateNodes)
	t.Logf("made %d nodes with 3 pods each in %s", gateNodes, time.Since(start).Round(time.Second))

	// The controller, as a restarted one finds the cluster.
	logControllerTo(t)
	slow := &slowPodLists{delay: 3 * time.Second}
	ccfg := rest.CopyConfig(cfg)
	ccfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { slow.next = rt; return slow }
	mgr, err := manager.New(ccfg, manager.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	// A fake clock parks the loops' timers: every pass below is asked for.
	clk := clocktesting.NewFakeClock(time.Now())
	kp, err := kwok.New(mgr.GetClient(), catalogTypes(t, catalog.Options{Region: "us-east-1"}), clk)
	if err != nil {
		t.Fatal(err)
	}
	provider := &throttledProvider{Provider: kp, pool: primary}
	cctx, cancel := context.WithCancel(ctx)
	parked := 1000 * time.Hour
	c, err := controller.New(cctx, mgr, controller.Options{CloudProvider: provider, Clock: clk, BatchIdle: parked, BatchMax: parked, Restartable: true})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(cctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	// While the pods are listed, /readyz names them; then the instance
	// types it still waits for.
	eventually(t, "/readyz naming the throttled instance types", func(context.Context) (bool, error) {
		err := c.ReadyzCheck()(nil)
		if err == nil {
			return false, errors.New("/readyz says ready while the cloud throttles the instance types")
		}
		return strings.Contains(err.Error(), "instance types") && strings.Contains(err.Error(), primary), nil
	})
	if slow.lists.Load() == 0 {
		t.Fatal("the controller listed no pods through the slowed transport")
	}
	t.Logf("/readyz: %v", c.ReadyzCheck()(nil))

	// Two cores: the node made for it has no room left for a full node's
	// three pods, so once that node is up no consolidation has a
	// destination either (none may use it while it starts).
	pending := pendingPodWith(t, kc, "gate-pending", func(p *corev1.Pod) {
		p.Namespace = ns
		p.Spec.NodeSelector = map[string]string{"gate": "yes"}
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	})
	eventually(t, "the pending pod in the Store", func(context.Context) (bool, error) {
		return c.Store().Pod(pending.Namespace, pending.Name) != nil, nil
	})
	// Whatever the passes are asked, they decide nothing yet.
	for i := 0; i < 3; i++ {
		if got, err := c.Provision(ctx); !errors.Is(err, controller.ErrNotSynced) || len(got) != 0 {
			for _, nc := range got {
				t.Errorf("provisioning before the instance types are known made %s of NodePool %s", nc.Name, nc.Labels[v1.LabelNodePool])
			}
			t.Fatalf("provisioning before the instance types are known: %d claims, %v; want none and ErrNotSynced", len(got), err)
		}
		if ev, err := c.Disrupt(ctx); !errors.Is(err, controller.ErrNotSynced) || len(ev) != 0 {
			t.Fatalf("disruption before the instance types are known: %d events, %v; want none and ErrNotSynced", len(ev), err)
		}
		if err := c.CollectGarbage(ctx); !errors.Is(err, controller.ErrNotSynced) {
			t.Fatalf("garbage collection before the instance types are known: %v; want ErrNotSynced", err)
		}
		clk.Step(11 * time.Second) // past a disruption period, were its loop running
	}
	assertUntouched(t, kc, primary, fallback, gateNodes, 0)

	provider.released.Store(true)
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !c.WaitSynced(syncCtx) {
		t.Fatalf("the controller did not sync within a minute of the cloud answering: %v", c.ReadyzCheck()(nil))
	}
	if err := c.ReadyzCheck()(nil); err != nil {
		t.Fatalf("/readyz after the sync: %v", err)
	}
	created, err := c.Provision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != 1 || created[0].Labels[v1.LabelNodePool] != primary {
		var got []string
		for _, nc := range created {
			got = append(got, nc.Name+" of "+nc.Labels[v1.LabelNodePool])
		}
		t.Fatalf("once synced, provisioning made %v; want one claim of the higher-weight %s", got, primary)
	}
	for i := 0; i < 2; i++ {
		if _, err := c.Disrupt(ctx); err != nil {
			t.Fatal(err)
		}
		clk.Step(11 * time.Second)
	}
	assertUntouched(t, kc, primary, fallback, gateNodes, 1)
}

// makeFullNodes makes n launched, registered and initialized NodeClaims of
// np with their Ready kwok Nodes — as a controller before the restart
// left them — each running three 1-core pods in ns, which leaves no node
// emptiable, consolidatable or drifted.
func makeFullNodes(t *testing.T, kc client.Client, np *v1.NodePool, ns string, n int) {
	t.Helper()
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods: resource.MustParse("58")}
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3920m"), corev1.ResourceMemory: resource.MustParse("14Gi"),
		corev1.ResourcePods: resource.MustParse("58")}
	one := func(ctx context.Context, i int) error {
		name := fmt.Sprintf("%s-%03d", np.Name, i)
		labels := map[string]string{v1.LabelNodePool: np.Name, v1.LabelInstanceType: "m6i.xlarge", v1.LabelZone: zones[i%3],
			v1.LabelCapacityType: v1.CapacityTypeOnDemand, "gate": "yes", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"}
		now := metav1.Now()
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{
			v1.AnnotationNodePoolHash: disruption.TemplateHash(np), v1.AnnotationNodePoolHashVersion: controller.NodePoolHashVersion}},
			Spec: v1.NodeClaimSpec{NodeClassRef: np.Spec.Template.Spec.NodeClassRef, Requirements: np.Spec.Template.Spec.Requirements}}
		if err := kc.Create(ctx, nc); err != nil {
			return err
		}
		nc.Status = v1.NodeClaimStatus{ProviderID: kwok.ProviderIDPrefix + name, NodeName: name, Capacity: capacity, Allocatable: allocatable}
		for _, c := range []string{v1.ConditionLaunched, v1.ConditionRegistered, v1.ConditionInitialized} {
			nc.Status.Conditions = append(nc.Status.Conditions, v1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c, LastTransitionTime: now})
		}
		if err := kc.Status().Update(ctx, nc); err != nil {
			return err
		}
		nodeLabels := map[string]string{v1.LabelNodeRegistered: "true", v1.LabelNodeInitialized: "true", corev1.LabelHostname: name}
		for k, v := range labels {
			nodeLabels[k] = v
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: nodeLabels, Annotations: map[string]string{kwok.AnnotationNode: "fake"}},
			Spec: corev1.NodeSpec{ProviderID: kwok.ProviderIDPrefix + name}}
		if err := kc.Create(ctx, node); err != nil {
			return err
		}
		node.Status = corev1.NodeStatus{Capacity: capacity, Allocatable: allocatable,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}}
		if err := kc.Status().Update(ctx, node); err != nil {
			return err
		}
		zero := int64(0)
		for j := 0; j < 3; j++ {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, j), Namespace: ns},
				Spec: corev1.PodSpec{NodeName: name, TerminationGracePeriodSeconds: &zero, Containers: []corev1.Container{{Name: "c", Image: "app",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}}}}}}
			if err := kc.Create(ctx, pod); err != nil {
				return err
			}
			pod.Status.Phase = corev1.PodRunning
			if err := kc.Status().Update(ctx, pod); err != nil {
				return err
			}
		}
		return nil
	}
	// A few writers at once: 300 nodes are some 2,400 requests.
	var wg sync.WaitGroup
	errs := make(chan error, n)
	work := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if err := one(context.Background(), i); err != nil {
					errs <- fmt.Errorf("node %d: %w", i, err)
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// assertUntouched checks that the n claims of pool are all there, none
// deleting and none of their Nodes tainted for disruption, and that pools
// primary and fallback have created claims more, all of primary.
func assertUntouched(t *testing.T, kc client.Client, primary, fallback string, n, created int) {
	t.Helper()
	ctx := context.Background()
	var claims v1.NodeClaimList
	if err := kc.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: fallback}); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != 0 {
		t.Errorf("%d claims of the lower-weight %s: provisioning decided while %s's instance types were unknown", len(claims.Items), fallback, primary)
	}
	if err := kc.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: primary}); err != nil {
		t.Fatal(err)
	}
	if len(claims.Items) != n+created {
		t.Errorf("%s has %d claims, want %d (%d made before, %d created since)", primary, len(claims.Items), n+created, n, created)
	}
	for _, nc := range claims.Items {
		if nc.DeletionTimestamp != nil {
			t.Errorf("claim %s is being deleted", nc.Name)
		}
	}
	var nodes corev1.NodeList
	if err := kc.List(ctx, &nodes, client.MatchingLabels{v1.LabelNodePool: primary}); err != nil {
		t.Fatal(err)
	}
	for _, node := range nodes.Items {
		if hasTaintKey(node.Spec.Taints, v1.DisruptedTaint.Key) {
			t.Errorf("node %s is tainted %s", node.Name, v1.DisruptedTaint.Key)
		}
	}
}

// removeGateCluster deletes what the gate test made, finalizers and all:
// its controller is stopped by then.
func removeGateCluster(t *testing.T, kc client.Client, ns string, pools ...string) {
	t.Helper()
	ctx := context.Background()
	if err := kc.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0)); err != nil {
		t.Error(err)
	}
	for _, pool := range pools {
		var claims v1.NodeClaimList
		if err := kc.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil {
			t.Error(err)
			continue
		}
		for i := range claims.Items {
			nc := &claims.Items[i]
			if len(nc.Finalizers) > 0 {
				patch := client.MergeFrom(nc.DeepCopy())
				nc.Finalizers = nil
				if err := kc.Patch(ctx, nc, patch); client.IgnoreNotFound(err) != nil {
					t.Error(err)
				}
			}
		}
		for _, obj := range []client.Object{&v1.NodeClaim{}, &corev1.Node{}} {
			if err := kc.DeleteAllOf(ctx, obj, client.MatchingLabels{v1.LabelNodePool: pool}); err != nil {
				t.Error(err)
			}
		}
		if err := kc.Delete(ctx, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}}); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	}
}
