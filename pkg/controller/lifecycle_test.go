package controller

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// launchingCloud launches every claim as i-<name> (or fails with err) and
// counts its Create and Delete calls.
type launchingCloud struct {
	stubCloud
	err              error
	created, deleted int
	deletedIDs       []string
}

func (c *launchingCloud) Create(_ context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	c.created++
	if c.err != nil {
		return nil, c.err
	}
	out := nc.DeepCopy()
	out.Labels = map[string]string{v1.LabelInstanceType: "m5.large", v1.LabelZone: "zone-a"}
	out.Status.ProviderID = "p:///zone-a/i-" + nc.Name
	out.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	return out, nil
}

func (c *launchingCloud) Delete(_ context.Context, nc *v1.NodeClaim) error {
	c.deleted++
	c.deletedIDs = append(c.deletedIDs, nc.Status.ProviderID)
	return nil
}

// lifecycleTest is a lifecycle reconciler over a fake client (with the
// controller's field indexes and NodeClaim status as a subresource), a
// fake clock at t0 and an open sync gate.
type lifecycleTest struct {
	t      *testing.T
	l      *lifecycle
	kube   client.Client
	cloud  *launchingCloud
	clock  *clocktesting.FakeClock
	events *events.FakeRecorder
}

func newLifecycleTest(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) *lifecycleTest {
	b := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(objs...).
		WithStatusSubresource(&v1.NodeClaim{}).WithInterceptorFuncs(funcs)
	for _, f := range fieldIndexes {
		b = b.WithIndex(f.obj, f.field, f.value)
	}
	gate := newSyncGate()
	close(gate.open)
	lt := &lifecycleTest{t: t, kube: b.Build(), cloud: &launchingCloud{}, clock: clocktesting.NewFakeClock(t0), events: events.NewFakeRecorder(10)}
	lt.l = &lifecycle{gate: gate, client: lt.kube, cloud: lt.cloud, events: recorder{r: lt.events}, clock: lt.clock, registrationTTL: 15 * time.Minute}
	return lt
}

// reconcile runs one reconcile of claim name.
func (lt *lifecycleTest) reconcile(name string) reconcile.Result {
	lt.t.Helper()
	res, err := lt.l.reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	if err != nil {
		lt.t.Fatalf("reconciling %s: %v", name, err)
	}
	return res
}

func (lt *lifecycleTest) claim(name string) *v1.NodeClaim {
	lt.t.Helper()
	nc := &v1.NodeClaim{}
	if err := lt.kube.Get(context.Background(), types.NamespacedName{Name: name}, nc); err != nil {
		lt.t.Fatalf("getting claim %s: %v", name, err)
	}
	return nc
}

func (lt *lifecycleTest) node(name string) *corev1.Node {
	lt.t.Helper()
	n := &corev1.Node{}
	if err := lt.kube.Get(context.Background(), types.NamespacedName{Name: name}, n); err != nil {
		lt.t.Fatalf("getting node %s: %v", name, err)
	}
	return n
}

func (lt *lifecycleTest) event() string {
	select {
	case e := <-lt.events.Events:
		return e
	default:
		return ""
	}
}

func newClaim(name string) *v1.NodeClaim {
	return &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: "general"}},
		Spec: v1.NodeClaimSpec{
			Taints:        []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}},
			StartupTaints: []corev1.Taint{{Key: "agent-not-ready", Effect: corev1.TaintEffectNoSchedule}}}}
}

// registering is the Node a launched claim's instance registers as:
// Joiner's unregistered taint, a label of its own, not Ready.
func registering(name, providerID string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Spec: corev1.NodeSpec{ProviderID: providerID, Taints: []corev1.Taint{v1.UnregisteredTaint}}}
}

func conditions(nc *v1.NodeClaim) string {
	var out []string
	for _, c := range nc.Status.Conditions {
		if c.Status == metav1.ConditionTrue {
			out = append(out, c.Type)
		}
	}
	return strings.Join(out, ",")
}

// A claim walks Launched → Registered → Initialized: the finalizer and
// the instance in one reconcile, the finalizer written first; then its
// Node made the claim's (labels, the claim's taints and startup taints,
// no unregistered taint, the finalizer); then Initialized only once the
// Node is Ready with its startup taints gone.
func TestLifecycleLaunchRegisterInitialize(t *testing.T) {
	var order []string
	lt := newLifecycleTest(t, interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		if nc, ok := obj.(*v1.NodeClaim); ok {
			order = append(order, fmt.Sprintf("update(finalizers %d, instance type %q)", len(nc.Finalizers), nc.Labels[v1.LabelInstanceType]))
		}
		return c.Update(ctx, obj, opts...)
	}}, newClaim("general-a"))

	lt.reconcile("general-a")
	nc := lt.claim("general-a")
	if want := `update(finalizers 1, instance type ""),update(finalizers 1, instance type "m5.large")`; strings.Join(order, ",") != want {
		t.Errorf("the claim's writes: %s, want the finalizer before the launch's labels: %s", strings.Join(order, ","), want)
	}
	if nc.Status.ProviderID != "p:///zone-a/i-general-a" || conditions(nc) != v1.ConditionLaunched || len(nc.Finalizers) != 1 ||
		nc.Labels[v1.LabelInstanceType] != "m5.large" || nc.Labels[v1.LabelNodePool] != "general" {
		t.Fatalf("after launch: provider ID %q, conditions %q, labels %v", nc.Status.ProviderID, conditions(nc), nc.Labels)
	}

	if res := lt.reconcile("general-a"); res.RequeueAfter != pollRegistration {
		t.Errorf("no Node yet: requeue after %s, want %s", res.RequeueAfter, pollRegistration)
	}
	if err := lt.kube.Create(context.Background(), registering("node-a", nc.Status.ProviderID)); err != nil {
		t.Fatal(err)
	}
	lt.reconcile("general-a")
	nc, node := lt.claim("general-a"), lt.node("node-a")
	if conditions(nc) != v1.ConditionLaunched+","+v1.ConditionRegistered || nc.Status.NodeName != "node-a" {
		t.Fatalf("after registration: conditions %q, node name %q", conditions(nc), nc.Status.NodeName)
	}
	if node.Labels[v1.LabelInstanceType] != "m5.large" || node.Labels[v1.LabelNodePool] != "general" || node.Labels["kubernetes.io/hostname"] != "node-a" {
		t.Errorf("registered Node's labels %v: want the claim's beside its own", node.Labels)
	}
	var taints []string
	for _, tn := range node.Spec.Taints {
		taints = append(taints, tn.Key)
	}
	if strings.Join(taints, ",") != "dedicated,agent-not-ready" || len(node.Finalizers) != 1 {
		t.Errorf("registered Node's taints %v and finalizers %v: want the claim's taints and startup taints, no unregistered taint, the finalizer", taints, node.Finalizers)
	}

	lt.reconcile("general-a")
	if c := conditions(lt.claim("general-a")); strings.Contains(c, v1.ConditionInitialized) {
		t.Fatalf("a Node not Ready: conditions %q", c)
	}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := lt.kube.Status().Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	lt.reconcile("general-a")
	if c := conditions(lt.claim("general-a")); strings.Contains(c, v1.ConditionInitialized) {
		t.Fatalf("a Ready Node with its startup taint: conditions %q", c)
	}
	node = lt.node("node-a")
	node.Spec.Taints = node.Spec.Taints[:1]
	if err := lt.kube.Update(context.Background(), node); err != nil {
		t.Fatal(err)
	}
	lt.reconcile("general-a")
	if c := conditions(lt.claim("general-a")); c != v1.ConditionLaunched+","+v1.ConditionRegistered+","+v1.ConditionInitialized {
		t.Errorf("a Ready Node without startup taints: conditions %q, want all three", c)
	}
	if lt.node("node-a").Labels[v1.LabelNodeInitialized] != "true" {
		t.Errorf("the initialized Node is not labelled %s", v1.LabelNodeInitialized)
	}
	if lt.cloud.created != 1 {
		t.Errorf("%d instances launched, want 1", lt.cloud.created)
	}
}

// A launch whose claim could not be written afterwards (a conflict with a
// stale cache) is not launched again when the claim is retried.
func TestLifecycleLaunchesOnceWhenTheWriteFails(t *testing.T) {
	conflicts := 1
	lt := newLifecycleTest(t, interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		if nc, ok := obj.(*v1.NodeClaim); ok && nc.Labels[v1.LabelInstanceType] != "" && conflicts > 0 {
			conflicts--
			return apierrors.NewConflict(schema.GroupResource{Group: v1.Group, Resource: "nodeclaims"}, nc.Name, nil)
		}
		return c.Update(ctx, obj, opts...)
	}}, newClaim("general-a"))
	if res, err := lt.l.reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "general-a"}}); err != nil || res.RequeueAfter != conflictRetry {
		t.Fatalf("launch with a conflicting write: %+v, %v; want it read again after %s, no error", res, err, conflictRetry)
	}
	lt.reconcile("general-a")
	if nc := lt.claim("general-a"); lt.cloud.created != 1 || nc.Status.ProviderID != "p:///zone-a/i-general-a" {
		t.Errorf("after a retried launch: %d instances, provider ID %q; want 1 and the first launch's", lt.cloud.created, nc.Status.ProviderID)
	}

	// The memory lasts launchCacheTTL.
	var c launchCache
	c.put("a", &v1.NodeClaim{}, t0)
	c.put("b", &v1.NodeClaim{}, t0.Add(launchCacheTTL))
	if c.get("a") == nil {
		t.Error("a launch exactly launchCacheTTL old is forgotten")
	}
	c.put("c", &v1.NodeClaim{}, t0.Add(launchCacheTTL+time.Second))
	c.wrote("c", stepRegistered, t0.Add(launchCacheTTL+time.Second))
	if got := c.written("c", t0.Add(2*launchCacheTTL+time.Second)); got != stepRegistered {
		t.Errorf("a step written launchCacheTTL ago: remembered as %d, want %d", got, stepRegistered)
	}
	if got := c.written("c", t0.Add(2*launchCacheTTL+2*time.Second)); got != stepNone {
		t.Errorf("a step written longer than launchCacheTTL ago: remembered as %d, want none", got)
	}
	if c.get("a") != nil || c.get("b") == nil {
		t.Error("a launch older than launchCacheTTL is remembered, or a newer one forgotten")
	}
}

// A copy of a launched claim from before its finalizer was written (the
// watch behind the writes) is read again later, not written: its write
// would conflict.
func TestLifecycleWaitsOutAStaleCopy(t *testing.T) {
	var stale *v1.NodeClaim
	writes := 0
	lt := newLifecycleTest(t, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if nc, ok := obj.(*v1.NodeClaim); ok && stale != nil {
				stale.DeepCopyInto(nc)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			writes++
			return c.Update(ctx, obj, opts...)
		},
	}, newClaim("general-a"))
	before := newClaim("general-a")
	if err := lt.kube.Get(context.Background(), types.NamespacedName{Name: "general-a"}, before); err != nil {
		t.Fatal(err)
	}
	lt.reconcile("general-a")
	if lt.cloud.created != 1 || writes != 2 {
		t.Fatalf("setup: %d launches, %d writes; want the finalizer and the launch's labels", lt.cloud.created, writes)
	}
	stale = before
	if res := lt.reconcile("general-a"); res.RequeueAfter != conflictRetry || writes != 2 || lt.cloud.created != 1 {
		t.Errorf("a stale copy without the finalizer: requeue %s, %d writes, %d launches; want it read again after %s, nothing written or launched",
			res.RequeueAfter, writes, lt.cloud.created, conflictRetry)
	}
}

// initializedClaim walks claim general-a through launch, registration
// (Node node-a) and initialization in lt, and returns its copies as each
// step wrote it.
func (lt *lifecycleTest) initializedClaim() (launched, registered, initialized *v1.NodeClaim) {
	lt.t.Helper()
	ctx := context.Background()
	lt.reconcile("general-a")
	launched = lt.claim("general-a")
	if err := lt.kube.Create(ctx, registering("node-a", launched.Status.ProviderID)); err != nil {
		lt.t.Fatal(err)
	}
	lt.clock.Step(time.Second)
	lt.reconcile("general-a")
	registered = lt.claim("general-a")
	node := lt.node("node-a")
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := lt.kube.Status().Update(ctx, node); err != nil {
		lt.t.Fatal(err)
	}
	node.Spec.Taints = node.Spec.Taints[:1] // the agent is ready: its startup taint is gone
	if err := lt.kube.Update(ctx, node); err != nil {
		lt.t.Fatal(err)
	}
	lt.clock.Step(time.Second)
	lt.reconcile("general-a")
	initialized = lt.claim("general-a")
	if c := conditions(initialized); c != v1.ConditionLaunched+","+v1.ConditionRegistered+","+v1.ConditionInitialized {
		lt.t.Fatalf("setup: conditions %q, want all three", c)
	}
	return launched, registered, initialized
}

// staleClaims makes every Get of a NodeClaim return *stale when it is set,
// as an informer behind the API server's writes does, and counts the
// writes of claims and Nodes.
func staleClaims(stale **v1.NodeClaim, writes *int) interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if nc, ok := obj.(*v1.NodeClaim); ok && *stale != nil {
				(*stale).DeepCopyInto(nc)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			*writes++
			return c.Patch(ctx, obj, patch, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			*writes++
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}

// Copies of an initialized claim from before its registration or its
// initialization — an informer lagging behind the controller's own writes
// — are read again later, not acted on: nothing is written, the claim
// keeps its conditions and their times, and the Node does not get back
// the startup taint its agent took off. In a 5,000-pod scale-out such
// copies rewrote the claims' conditions thousands of times (session 38).
func TestLifecycleActsOnNoCopyBehindItsOwnWrites(t *testing.T) {
	var stale *v1.NodeClaim
	writes := 0
	lt := newLifecycleTest(t, staleClaims(&stale, &writes), newClaim("general-a"))
	launched, registered, want := lt.initializedClaim()
	for _, c := range []*v1.NodeClaim{launched, registered} {
		stale, writes = c, 0
		lt.clock.Step(time.Second)
		res := lt.reconcile("general-a")
		stale = nil
		got := lt.claim("general-a")
		if res.RequeueAfter != staleRetry || writes != 0 {
			t.Errorf("a copy at %q: requeue %s, %d writes; want it read again after %s, nothing written", conditions(c), res.RequeueAfter, writes, staleRetry)
		}
		if got.ResourceVersion != want.ResourceVersion || conditions(got) != conditions(want) {
			t.Errorf("after a copy at %q: conditions %q (resourceVersion %s), want %q unchanged (%s)", conditions(c), conditions(got), got.ResourceVersion, conditions(want), want.ResourceVersion)
		}
		if n := len(lt.node("node-a").Spec.Taints); n != 1 {
			t.Errorf("after a copy at %q: the Node has %d taints, want its 1 (the startup taint not back)", conditions(c), n)
		}
	}
}

// After a restart the controller remembers no write of its own; a stale
// copy's status write is then locked to the copy's resourceVersion and
// lost to the newer claim's (a conflict: read again), where an unlocked
// merge patch put back the conditions the copy had. The Node, already
// registered, is not written again.
func TestLifecycleStaleStatusWriteConflicts(t *testing.T) {
	var stale *v1.NodeClaim
	writes := 0
	lt := newLifecycleTest(t, staleClaims(&stale, &writes), newClaim("general-a"))
	launched, _, want := lt.initializedClaim()
	lt.l = &lifecycle{gate: lt.l.gate, client: lt.l.client, cloud: lt.l.cloud, events: lt.l.events, clock: lt.l.clock, registrationTTL: lt.l.registrationTTL}
	stale, writes = launched, 0
	lt.clock.Step(time.Second)
	res := lt.reconcile("general-a")
	stale = nil
	if res.RequeueAfter != conflictRetry {
		t.Errorf("a stale copy's write: requeue %s, want a conflict's %s", res.RequeueAfter, conflictRetry)
	}
	if got := lt.claim("general-a"); got.ResourceVersion != want.ResourceVersion || conditions(got) != conditions(want) {
		t.Errorf("after a stale copy's write: conditions %q (resourceVersion %s), want %q unchanged (%s)", conditions(got), got.ResourceVersion, conditions(want), want.ResourceVersion)
	}
	if writes != 1 {
		t.Errorf("%d writes, want the claim's status write alone (the registered Node left as it is)", writes)
	}
	if n := len(lt.node("node-a").Spec.Taints); n != 1 {
		t.Errorf("the Node has %d taints, want its 1 (the startup taint not back)", n)
	}
}

// A claim deleted while it launched — its instance created, the write
// recording it lost to the deletion's — has that instance terminated
// before its finalizer goes, not left to garbage collection.
func TestLifecycleFinalizesAClaimDeletedWhileItLaunched(t *testing.T) {
	lt := newLifecycleTest(t, interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		if nc, ok := obj.(*v1.NodeClaim); ok && nc.Labels[v1.LabelInstanceType] != "" && nc.DeletionTimestamp == nil {
			// The deletion comes between the launch and its write.
			if err := c.Delete(ctx, nc.DeepCopy()); err != nil {
				return err
			}
			return apierrors.NewConflict(schema.GroupResource{Group: v1.Group, Resource: "nodeclaims"}, nc.Name, nil)
		}
		return c.Update(ctx, obj, opts...)
	}}, newClaim("general-a"))
	lt.reconcile("general-a") // the finalizer and the launch; its write conflicts
	if nc := lt.claim("general-a"); nc.DeletionTimestamp == nil || nc.Status.ProviderID != "" || lt.cloud.created != 1 {
		t.Fatalf("setup: deleting %v, provider ID %q, %d launched; want a claim being deleted with its launch unrecorded", nc.DeletionTimestamp != nil, nc.Status.ProviderID, lt.cloud.created)
	}
	lt.reconcile("general-a")
	if want := []string{"p:///zone-a/i-general-a"}; fmt.Sprint(lt.cloud.deletedIDs) != fmt.Sprint(want) {
		t.Errorf("instances terminated: %v, want %v (the one launched for the claim)", lt.cloud.deletedIDs, want)
	}
	if err := lt.kube.Get(context.Background(), types.NamespacedName{Name: "general-a"}, &v1.NodeClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("the claim after its finalizer: %v, want gone", err)
	}
}

// A claim no offering could launch is deleted, with a Warning saying so.
func TestLifecycleDeletesAClaimNoOfferingCouldLaunch(t *testing.T) {
	lt := newLifecycleTest(t, interceptor.Funcs{}, newClaim("general-a"))
	lt.cloud.err = cloudprovider.NewInsufficientCapacityError(errors.New("no capacity for m5.large in zone-a"))
	lt.reconcile("general-a")
	if nc := lt.claim("general-a"); nc.DeletionTimestamp == nil {
		t.Error("a claim no offering could launch is not being deleted")
	}
	if e := lt.event(); !strings.HasPrefix(e, "Warning InsufficientCapacityError") || !strings.Contains(e, "no capacity for m5.large") {
		t.Errorf("event %q: want a Warning InsufficientCapacityError naming the shortage", e)
	}
}

// A launched claim whose Node has not registered within the registration
// TTL is deleted (liveness), not before.
func TestLifecycleRegistrationTTL(t *testing.T) {
	lt := newLifecycleTest(t, interceptor.Funcs{}, newClaim("general-a"))
	lt.reconcile("general-a")
	lt.reconcile("general-a")
	lt.clock.Step(lt.l.registrationTTL - time.Second)
	if res := lt.reconcile("general-a"); res.RequeueAfter != pollRegistration || lt.claim("general-a").DeletionTimestamp != nil {
		t.Fatalf("a second before the TTL: requeue %s, deleting %v; want a requeue and the claim kept", res.RequeueAfter, lt.claim("general-a").DeletionTimestamp != nil)
	}
	lt.clock.Step(time.Second)
	lt.reconcile("general-a")
	if lt.claim("general-a").DeletionTimestamp == nil {
		t.Error("a claim whose Node did not register within the TTL is kept")
	}
	if e := lt.event(); !strings.HasPrefix(e, "Warning FailedRegistration") {
		t.Errorf("event %q: want Warning FailedRegistration", e)
	}
}

// A claim being deleted has its Node tainted and drained (its pods
// evicted, a DaemonSet's last), then its Node and instance removed, and
// only then its finalizer.
func TestLifecycleFinalize(t *testing.T) {
	nc := newClaim("general-a")
	nc.Finalizers = []string{v1.TerminationFinalizer}
	nc.Status.ProviderID = "p:///zone-a/i-general-a"
	node := registering("node-a", nc.Status.ProviderID)
	node.Spec.Taints = nil
	node.Finalizers = []string{v1.TerminationFinalizer}
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: "rs", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-a"}}
	agent := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent-1", Namespace: "default",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: "node-a"}}
	lt := newLifecycleTest(t, interceptor.Funcs{}, nc, node, web, agent)
	if err := lt.kube.Delete(context.Background(), nc.DeepCopy()); err != nil {
		t.Fatal(err)
	}

	if res := lt.reconcile("general-a"); res.RequeueAfter != drainEvery {
		t.Errorf("draining: requeue after %s, want %s", res.RequeueAfter, drainEvery)
	}
	if !scheduling.HasTaint(lt.node("node-a").Spec.Taints, v1.DisruptedTaint) {
		t.Error("the draining Node is not tainted karpenter.sh/disrupted")
	}
	if err := lt.kube.Get(context.Background(), client.ObjectKeyFromObject(web), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("web-1 after the drain's first step: %v, want evicted", err)
	}
	if err := lt.kube.Get(context.Background(), client.ObjectKeyFromObject(agent), &corev1.Pod{}); err != nil {
		t.Errorf("the DaemonSet's pod: %v, want left for the drain's next step", err)
	}
	lt.reconcile("general-a")
	if err := lt.kube.Get(context.Background(), client.ObjectKeyFromObject(agent), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("the DaemonSet's pod after the second step: %v, want evicted", err)
	}
	if lt.cloud.deleted != 0 {
		t.Fatal("the instance was terminated before the drain was done")
	}

	lt.reconcile("general-a")
	if err := lt.kube.Get(context.Background(), types.NamespacedName{Name: "node-a"}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("the drained Node: %v, want deleted", err)
	}
	if lt.cloud.deleted != 1 {
		t.Errorf("%d instances terminated, want 1", lt.cloud.deleted)
	}
	if err := lt.kube.Get(context.Background(), types.NamespacedName{Name: "general-a"}, &v1.NodeClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("the claim after its finalizer: %v, want gone", err)
	}
}

// TestFinalizerOffABusyNode: the kubelet (kwok) writes a Node's status
// every few seconds; the drained Node's finalizer comes off in the
// reconcile that finds it drained even when such a write came between the
// read and the removal, as upstream's strategic merge patch has it. (An
// update of the read copy lost to the status write, and each drained node
// waited for a retry.)
func TestFinalizerOffABusyNode(t *testing.T) {
	nc := newClaim("general-a")
	nc.Finalizers = []string{v1.TerminationFinalizer}
	nc.Status.ProviderID = "p:///zone-a/i-general-a"
	node := registering("node-a", nc.Status.ProviderID)
	node.Spec.Taints = []corev1.Taint{v1.DisruptedTaint}
	node.Finalizers = []string{v1.TerminationFinalizer}
	heartbeat := func(ctx context.Context, c client.WithWatch, obj client.Object) {
		if n, ok := obj.(*corev1.Node); !ok || controllerutil.ContainsFinalizer(n, v1.TerminationFinalizer) {
			return // not the finalizer's removal
		}
		beat := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), beat); err != nil {
			t.Fatal(err)
		}
		beat.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}}
		if err := c.Update(ctx, beat); err != nil {
			t.Fatal(err)
		}
	}
	lt := newLifecycleTest(t, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			heartbeat(ctx, c, obj)
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			heartbeat(ctx, c, obj)
			return c.Patch(ctx, obj, patch, opts...)
		},
	}, nc, node)
	if err := lt.kube.Delete(context.Background(), nc.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	lt.reconcile("general-a")
	if err := lt.kube.Get(context.Background(), types.NamespacedName{Name: "node-a"}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("the drained Node after one reconcile: %v, want deleted", err)
	}
	if lt.cloud.deleted != 1 {
		t.Errorf("%d instances terminated, want 1", lt.cloud.deleted)
	}
}

// Nothing is decided before the gate opens: the claim is retried later.
func TestLifecycleWaitsForTheSyncGate(t *testing.T) {
	lt := newLifecycleTest(t, interceptor.Funcs{}, newClaim("general-a"))
	lt.l.gate = newSyncGate()
	if res := lt.reconcile("general-a"); res.RequeueAfter == 0 {
		t.Error("a reconcile before the gate opened is not retried")
	}
	if nc := lt.claim("general-a"); len(nc.Finalizers) != 0 || lt.cloud.created != 0 {
		t.Errorf("before the gate opened: finalizers %v, %d launches; want none", nc.Finalizers, lt.cloud.created)
	}
}

// TestRequeueOnConflict: a conflict is a quick read again, not an error;
// any other error, and a result without one, pass through.
func TestRequeueOnConflict(t *testing.T) {
	gr := schema.GroupResource{Group: "karpenter.sh", Resource: "nodeclaims"}
	conflict := fmt.Errorf("registering: %w", apierrors.NewConflict(gr, "c1", errors.New("the object has been modified")))
	if res, err := requeueOnConflict(reconcile.Result{}, conflict); err != nil || res.RequeueAfter != conflictRetry {
		t.Errorf("conflict: %+v, %v; want a requeue after %s and no error", res, err, conflictRetry)
	}
	other := apierrors.NewForbidden(gr, "c1", errors.New("no"))
	if _, err := requeueOnConflict(reconcile.Result{}, other); err != other {
		t.Errorf("forbidden: %v, want it returned", err)
	}
	want := reconcile.Result{RequeueAfter: time.Minute}
	if res, err := requeueOnConflict(want, nil); err != nil || res != want {
		t.Errorf("no error: %+v, %v; want %+v", res, err, want)
	}
}

// A launch cohort's member that records its launch, or is deleted, wakes
// the cohort's unregistered members (its Node may have appeared before
// the record, and the others wait for it); a member not launched, a
// registered one, a claim of no cohort, and upstream's decisions wake
// none.
func TestCohortOfClaim(t *testing.T) {
	member := func(name string, conds ...string) *v1.NodeClaim {
		nc := newClaim(name)
		nc.Annotations = map[string]string{state.AnnotationLaunchCohort: "c1"}
		for _, c := range conds {
			nc.Status.Conditions = append(nc.Status.Conditions, v1.Condition{Type: c, Status: metav1.ConditionTrue})
		}
		return nc
	}
	a := member("general-a", v1.ConditionLaunched)
	b := member("general-b")
	c := member("general-c", v1.ConditionLaunched, v1.ConditionRegistered)
	lone := newClaim("general-lone")
	lone.Status.Conditions = []v1.Condition{{Type: v1.ConditionLaunched, Status: metav1.ConditionTrue}}
	lt := newLifecycleTest(t, interceptor.Funcs{}, a, b, c, lone)
	names := func(rs []reconcile.Request) string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Name)
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	ctx := context.Background()
	if got := names(lt.l.cohortOfClaim(ctx, a)); got != "general-b" {
		t.Errorf("a launched member woke %q, want the unregistered other, general-b", got)
	}
	if got := names(lt.l.cohortOfClaim(ctx, b)); got != "" {
		t.Errorf("a member not launched woke %q, want none", got)
	}
	deleting := b.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	if got := names(lt.l.cohortOfClaim(ctx, deleting)); got != "general-a" {
		t.Errorf("a member being deleted woke %q, want general-a", got)
	}
	if got := names(lt.l.cohortOfClaim(ctx, c)); got != "" {
		t.Errorf("a registered member woke %q, want none", got)
	}
	if got := names(lt.l.cohortOfClaim(ctx, lone)); got != "" {
		t.Errorf("a claim of no cohort woke %q, want none", got)
	}
	lt.l.policy = provisioning.Policy{Decisions: provisioning.DecisionsKarpenter}
	if got := names(lt.l.cohortOfClaim(ctx, a)); got != "" {
		t.Errorf("under upstream's decisions a launched member woke %q, want none (no cohorts)", got)
	}
}
