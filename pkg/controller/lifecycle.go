package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
	"github.com/joiner-autoscaler/joiner/pkg/state"
	"github.com/joiner-autoscaler/joiner/pkg/termination"
)

// pollRegistration is how often a launched claim looks for its Node
// besides the Node events that wake it.
const pollRegistration = 10 * time.Second

// conflictRetry: how soon a claim whose write lost to another writer's is
// read again at the latest (see requeueOnConflict).
const conflictRetry = 100 * time.Millisecond

// staleRetry: how soon a copy of a claim from before a write of this
// controller's own is read again at the latest. The write's watch event
// runs the claim as soon as it arrives; this is the backstop.
const staleRetry = time.Second

// lifecycleWorkers is how many NodeClaims the lifecycle reconciler takes
// along at once, upstream's for its own (each claim is still one at a
// time). One at a time, the 22 claims of a 1,000-pod scale-out launched
// over 7 s after their creation, and their launch cohort, which registers
// its Nodes together, waited for the last: kube-scheduler bound the first
// pod 7 s after the claims were made, where upstream's nodes took 2 s.
const lifecycleWorkers = 1000

// lifecycle is the nodeclaim.lifecycle reconciler: it takes a NodeClaim
// through launch, registration and initialization, and terminates (drains)
// its node when the claim is deleted.
type lifecycle struct {
	gate   *syncGate
	client client.Client
	cloud  CloudProvider // metered
	events recorder
	clock  clock.PassiveClock
	// registrationTTL: a claim whose Node has not registered by then is
	// deleted.
	registrationTTL time.Duration
	// policy says whether a Node waits for its launch cohort.
	policy provisioning.Policy
	// launches are the instances launched whose claim has not recorded
	// them, and how far along its lifecycle each claim has been written.
	launches launchCache
	// dra, with --ignore-dra-requests=false, is the Store's device
	// objects: a claim planned onto DRA drivers' devices is Initialized
	// only once each has published a complete pool for its node.
	dra func() *provisioning.DRAObjects
}

// reconcile moves a NodeClaim along its lifecycle, as upstream's
// conditions mean it: Launched (the cloud has an instance for it),
// Registered (its Node, found by providerID, carries the claim's labels
// and taints and no longer Joiner's unregistered taint), Initialized (the
// Node is Ready and its startup taints are gone). A claim being deleted
// has its instance and Node removed before its finalizer goes. Each step
// writes once and returns: the write's own watch event runs the next.
// The claim's status is patched, locked to the copy's resourceVersion
// (patchStatus), and a copy from before a step this controller has
// written is not acted on (see step): on a lagging cache either one
// rewrote the conditions from stale copies.
func (l *lifecycle) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	return requeueOnConflict(l.step(ctx, req))
}

// requeueOnConflict reads a write that lost to another writer's (a Node's
// kubelet or kwok, the claim's own watch ahead of the cache) as a reason
// to read the object again, not as an error, as upstream's lifecycle
// does: a 1,000-pod scale-out, its claims reconciled at once, logged 45
// "Reconciler error"s of conflicts that the next read resolved. The other
// write's watch event runs the claim again; conflictRetry is the backstop.
func requeueOnConflict(res reconcile.Result, err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	return res, err
}

// step is one move of reconcile.
func (l *lifecycle) step(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if !l.gate.synced() {
		return reconcile.Result{RequeueAfter: time.Second}, nil // a claim's Node may not be in the Store yet
	}
	nc := &v1.NodeClaim{}
	if err := l.client.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if nc.DeletionTimestamp != nil {
		return l.finalize(withController(ctx, "nodeclaim.termination"), nc)
	}
	ctx = withController(ctx, "nodeclaim.lifecycle")
	if !controllerutil.ContainsFinalizer(nc, v1.TerminationFinalizer) && l.launches.get(nc.UID) != nil {
		// A copy from before the finalizer's write, which a launch
		// follows: the watch has not caught up. Its write would conflict.
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	if stepOf(nc) < l.launches.written(nc.UID, l.clock.Now()) {
		// A copy from before this controller's own write of a later
		// step: the watch has not caught up. Acted on, it would take the
		// step again and write the conditions it read. In a 5,000-pod
		// scale-out whose watches lagged 30 s, copies like it rewrote
		// the claims' conditions 2,600 times in a minute, each write
		// lagging the watches further (docs/scale.md, session 38).
		return reconcile.Result{RequeueAfter: staleRetry}, nil
	}
	if !controllerutil.ContainsFinalizer(nc, v1.TerminationFinalizer) {
		// The finalizer is written before anything is launched, and the
		// reconcile goes on with the claim as written, as upstream's does,
		// rather than waiting for the write's watch event (a round trip
		// through the API server; on the scale benchmark the launches
		// were recorded no sooner for it: docs/scale.md, session 31).
		controllerutil.AddFinalizer(nc, v1.TerminationFinalizer)
		if err := l.client.Update(ctx, nc); err != nil {
			return reconcile.Result{}, err
		}
	}
	switch stepOf(nc) {
	case stepNone:
		return l.launch(ctx, nc)
	case stepLaunched:
		return l.register(ctx, nc)
	case stepRegistered:
		return l.initialize(ctx, nc)
	}
	return reconcile.Result{}, nil
}

// launch asks the cloud for an instance. With no capacity for any allowed
// offering the claim is deleted, as upstream: the provider remembers the
// shortage and the next provisioning pass plans around it.
func (l *lifecycle) launch(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	// A launch whose result could not be written (a conflict with a stale
	// cache, say) is not launched again when the claim is retried: the
	// instance exists. Upstream keeps the same cache, by claim UID.
	now := l.clock.Now()
	launched, err := l.launches.get(nc.UID), error(nil)
	if launched == nil {
		launched, err = l.cloud.Create(ctx, nc)
		if err == nil {
			l.launches.put(nc.UID, launched, now)
		}
	}
	if cloudprovider.IsInsufficientCapacityError(err) {
		countDisrupted(nc, "insufficient_capacity", "", -1)
		log.FromContext(ctx).Info("deleting a NodeClaim no offering could launch", "nodeclaim", nc.Name, "error", err.Error())
		l.events.event(nc, nil, corev1.EventTypeWarning, "InsufficientCapacityError", "NodeClaim %s event: %s", nc.Name, err)
		return reconcile.Result{}, client.IgnoreNotFound(l.client.Delete(ctx, nc))
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("launching NodeClaim %s: %w", nc.Name, err)
	}
	if nc.Labels == nil {
		nc.Labels = map[string]string{}
	}
	for k, v := range launched.Labels {
		nc.Labels[k] = v
	}
	if err := l.client.Update(ctx, nc); err != nil {
		return reconcile.Result{}, err
	}
	orig := nc.DeepCopy()
	nc.Status.ProviderID = launched.Status.ProviderID
	nc.Status.ImageID = launched.Status.ImageID
	nc.Status.Capacity = launched.Status.Capacity
	nc.Status.Allocatable = launched.Status.Allocatable
	l.setCondition(nc, v1.ConditionLaunched, "Launched", "")
	return reconcile.Result{}, l.patchStatus(ctx, nc, orig)
}

// launchCacheTTL is how long a launch is remembered: a claim records it
// long before, but the informer's copy of the claim may lag behind the
// write, and a reconcile of that copy must not launch again.
const launchCacheTTL = 10 * time.Minute

// launchCache remembers, by claim UID, what was launched for a claim and
// the furthest step its status has been written at, for launchCacheTTL
// after the last. It is safe for concurrent use.
type launchCache struct {
	mu sync.Mutex
	m  map[types.UID]launchEntry
}

type launchEntry struct {
	claim *v1.NodeClaim
	step  lifecycleStep
	at    time.Time
}

func (l *launchCache) get(uid types.UID) *v1.NodeClaim {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m[uid].claim
}

// written is the furthest step the claim's status has been written at,
// as remembered at now: none once the TTL has passed since the last
// write, so a claim whose status went back (another writer's doing) is
// acted on again then, its writes locked (patchStatus).
func (l *launchCache) written(uid types.UID, now time.Time) lifecycleStep {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.m[uid]; ok && now.Sub(e.at) <= launchCacheTTL {
		return e.step
	}
	return stepNone
}

// put remembers a launch made at now, and forgets those older than the TTL.
func (l *launchCache) put(uid types.UID, nc *v1.NodeClaim, now time.Time) {
	l.update(uid, now, func(e *launchEntry) { e.claim = nc })
}

// wrote remembers that the claim's status was written at step at now.
func (l *launchCache) wrote(uid types.UID, step lifecycleStep, now time.Time) {
	l.update(uid, now, func(e *launchEntry) { e.step = max(e.step, step) })
}

// update changes the claim's entry at now, and forgets those older than
// the TTL.
func (l *launchCache) update(uid types.UID, now time.Time, change func(*launchEntry)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[types.UID]launchEntry{}
	}
	for k, e := range l.m {
		if now.Sub(e.at) > launchCacheTTL {
			delete(l.m, k)
		}
	}
	e := l.m[uid]
	change(&e)
	e.at = now
	l.m[uid] = e
}

// register finds the claim's Node by providerID and makes it the claim's:
// its labels, its taints (once), no unregistered taint, Joiner's
// finalizer. A claim whose Node does not come within the registration TTL
// is deleted.
func (l *lifecycle) register(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	node, err := l.nodeOf(ctx, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	if node == nil {
		launched := conditionTime(nc, v1.ConditionLaunched)
		if l.clock.Since(launched) >= l.registrationTTL {
			log.FromContext(ctx).Info("deleting a NodeClaim whose Node never registered", "nodeclaim", nc.Name, "ttl", l.registrationTTL)
			l.events.event(nc, nil, corev1.EventTypeWarning, "FailedRegistration", "NodeClaim %s: its Node did not register within %s; deleting it so provisioning tries again", nc.Name, l.registrationTTL)
			if err := l.client.Delete(ctx, nc); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			// Upstream's liveness check counts these under reason liveness.
			countDisrupted(nc, "liveness", "", -1)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{RequeueAfter: pollRegistration}, nil
	}
	// kube-scheduler is not told which pods the claim was launched for
	// (status.nominatedNodeName, KEP-5278). Tried twice: at 1,000 pods
	// they landed where the plan put them, but at 5,000 kube-scheduler
	// v1.37, weighing every node with its nominated pods copied in, bound
	// a few pods a second (docs/scale.md, sessions 35 and 37).
	if hold, err := l.cohortHold(ctx, nc); err != nil || hold > 0 {
		return reconcile.Result{RequeueAfter: hold}, err
	}
	stored := node.DeepCopy()
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	for k, v := range nc.Labels {
		node.Labels[k] = v
	}
	var taints []corev1.Taint
	for _, t := range node.Spec.Taints {
		if !t.MatchTaint(&v1.UnregisteredTaint) {
			taints = append(taints, t)
		}
	}
	for _, t := range append(append([]corev1.Taint(nil), nc.Spec.Taints...), nc.Spec.StartupTaints...) {
		if !scheduling.HasTaint(taints, t) {
			taints = append(taints, t)
		}
	}
	node.Spec.Taints = taints
	controllerutil.AddFinalizer(node, v1.TerminationFinalizer)
	if registeredBefore(stored) {
		// Its claim's write was lost (a conflict), or the copy of the
		// claim is stale: the Node is already the claim's, and the
		// startup taints its agent has taken off must not come back.
		node = stored
	} else if err := l.client.Patch(ctx, node, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		// As upstream: a patch of what changed, locked, for a merge
		// patch replaces the taints and finalizers lists whole.
		return reconcile.Result{}, err
	}
	orig := nc.DeepCopy()
	nc.Status.NodeName = node.Name
	l.setCondition(nc, v1.ConditionRegistered, "Registered", "")
	return reconcile.Result{}, l.patchStatus(ctx, nc, orig)
}

// registeredBefore: the Node has been made a claim's, its finalizer on
// and the unregistered taint off (register writes both at once).
func registeredBefore(node *corev1.Node) bool {
	return controllerutil.ContainsFinalizer(node, v1.TerminationFinalizer) && !scheduling.HasTaint(node.Spec.Taints, v1.UnregisteredTaint)
}

// cohortHold is how much longer the claim's Node, which has appeared,
// stays unregistered for the rest of its launch cohort
// (state.RegistrationHold); a member's Node appearing, or its claim
// recording the launch, wakes the others (claimOfNode, cohortOfClaim), so
// the hold ends when the last one comes, not at a poll.
// While it holds, the claim's Registered condition is Unknown, reason
// AwaitingLaunchCohort, since the hold began: the cap counts from that
// time on the controller's clock, across restarts.
func (l *lifecycle) cohortHold(ctx context.Context, nc *v1.NodeClaim) (time.Duration, error) {
	name := state.Cohort(nc)
	if name == "" || !l.policy.LaunchCohorts() {
		return 0, nil
	}
	members, err := l.cohortOf(ctx, name)
	if err != nil {
		return 0, err
	}
	var others []state.CohortMember
	for i := range members {
		m := &members[i]
		if m.UID == nc.UID {
			continue
		}
		if m.DeletionTimestamp != nil {
			others = append(others, state.CohortMember{Gone: true})
			continue
		}
		mn, err := l.nodeOf(ctx, m)
		if err != nil {
			return 0, err
		}
		others = append(others, state.CohortMember{Appeared: mn != nil})
	}
	now := l.clock.Now()
	since, held := cohortHoldSince(nc)
	if !held {
		since = now
	}
	hold := state.RegistrationHold(since, others, now)
	if hold <= 0 || held {
		return hold, nil
	}
	log.FromContext(ctx).V(1).Info("holding a Node's registration for the rest of its launch cohort", "nodeclaim", nc.Name, "cohort", name, "members", len(members), "atMost", hold)
	orig := nc.DeepCopy()
	l.putCondition(nc, v1.Condition{Type: v1.ConditionRegistered, Status: metav1.ConditionUnknown, Reason: reasonAwaitingCohort,
		Message:            fmt.Sprintf("its Node waits for the other NodeClaims of launch cohort %s (%d) to have theirs, at most %s", name, len(members)-1, state.CohortHold),
		LastTransitionTime: metav1.NewTime(now), ObservedGeneration: nc.Generation})
	return hold, l.patchStatus(ctx, nc, orig)
}

// reasonAwaitingCohort is the Registered condition's reason while a
// claim's Node waits for its launch cohort.
const reasonAwaitingCohort = "AwaitingLaunchCohort"

// cohortHoldSince is when the claim's cohort hold began, if it has.
func cohortHoldSince(nc *v1.NodeClaim) (time.Time, bool) {
	for _, c := range nc.Status.Conditions {
		if c.Type == v1.ConditionRegistered && c.Status == metav1.ConditionUnknown && c.Reason == reasonAwaitingCohort {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// cohortOf lists the claims of the launch cohort named name: the cache's
// own objects, not copies (a cohort is as large as a scale-out, and Node
// updates ask often) — read them, never change them.
func (l *lifecycle) cohortOf(ctx context.Context, name string) ([]v1.NodeClaim, error) {
	var claims v1.NodeClaimList
	if err := l.client.List(ctx, &claims, client.MatchingFields{cohortField: name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return claims.Items, nil
}

// initialize marks the claim Initialized once its Node is Ready with no
// startup or ephemeral taints left, and labels the Node so.
func (l *lifecycle) initialize(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	node, err := l.nodeOf(ctx, nc)
	if err != nil || node == nil {
		return reconcile.Result{RequeueAfter: pollRegistration}, err
	}
	if !nodeReady(node) {
		return reconcile.Result{}, nil // its next status update wakes us
	}
	for _, t := range node.Spec.Taints {
		if scheduling.HasTaint(nc.Spec.StartupTaints, t) || t.Key == corev1.TaintNodeNotReady || t.Key == "node.cloudprovider.kubernetes.io/uninitialized" {
			return reconcile.Result{}, nil
		}
	}
	if missing := l.unpublishedDriver(nc, node.Name); missing != "" {
		// As upstream's initialization: DRADriverPoolsNotPublished until
		// the driver's slices are there (they wake no reconcile: poll).
		if l.setWaiting(nc, v1.ConditionInitialized, "DRADriverPoolsNotPublished", fmt.Sprintf("DRA driver %q has not published a complete resource pool", missing)) {
			orig := nc.DeepCopy()
			orig.Status.Conditions = nil
			if err := l.patchStatus(ctx, nc, orig); err != nil {
				return reconcile.Result{}, err
			}
		}
		return reconcile.Result{RequeueAfter: draPublishPoll}, nil
	}
	if node.Labels[v1.LabelNodeInitialized] != "true" {
		// A merge patch of one label, as upstream's: it cannot conflict
		// with the kubelet's (kwok's) writes to a Node just come up.
		orig := node.DeepCopy()
		node.Labels[v1.LabelNodeInitialized] = "true"
		if err := l.client.Patch(ctx, node, client.MergeFrom(orig)); err != nil {
			return reconcile.Result{}, err
		}
	}
	orig := nc.DeepCopy()
	l.setCondition(nc, v1.ConditionInitialized, "Initialized", "")
	return reconcile.Result{}, l.patchStatus(ctx, nc, orig)
}

// patchStatus writes the claim's status as changed from orig, locked to
// orig's resourceVersion: a merge patch replaces the conditions list
// whole, so a patch from a stale copy would put back the conditions it
// read. A conflict reads the claim again (requeueOnConflict). The step
// the status now shows is remembered (see step).
func (l *lifecycle) patchStatus(ctx context.Context, nc, orig *v1.NodeClaim) error {
	if err := l.client.Status().Patch(ctx, nc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	l.launches.wrote(nc.UID, stepOf(nc), l.clock.Now())
	return nil
}

// lifecycleStep is how far along its lifecycle a claim is: the conditions
// Launched, Registered and Initialized True, each after the one before.
type lifecycleStep int

const (
	stepNone lifecycleStep = iota
	stepLaunched
	stepRegistered
	stepInitialized
)

// stepOf is the step the claim's conditions show.
func stepOf(nc *v1.NodeClaim) lifecycleStep {
	switch {
	case !conditionTrue(nc, v1.ConditionLaunched):
		return stepNone
	case !conditionTrue(nc, v1.ConditionRegistered):
		return stepLaunched
	case !conditionTrue(nc, v1.ConditionInitialized):
		return stepRegistered
	}
	return stepInitialized
}

// finalize terminates the claim's node as upstream does: taint it
// karpenter.sh/disrupted:NoSchedule, drain it through the Eviction API in
// termination's order (PDBs honoured; after the claim's
// terminationGracePeriod what is left is deleted), then remove the Node
// and the instance, and only then the claim's finalizer.
func (l *lifecycle) finalize(ctx context.Context, nc *v1.NodeClaim) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(nc, v1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	inst := l.instanceOf(nc)
	node, err := l.nodeOf(ctx, inst)
	if err != nil {
		return reconcile.Result{}, err
	}
	if node != nil {
		if done, err := l.drain(ctx, nc, node); err != nil || !done {
			return reconcile.Result{RequeueAfter: drainEvery}, err
		}
		stored := node.DeepCopy()
		if controllerutil.RemoveFinalizer(node, v1.TerminationFinalizer) {
			// As upstream: a strategic merge patch removes the one
			// finalizer, so kwok's (the kubelet's) status writes to the
			// Node cost no conflict, where an update lost to each.
			if err := l.client.Patch(ctx, node, client.StrategicMergeFrom(stored)); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, err
			}
		}
		if err := l.client.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
	}
	if inst.Status.ProviderID != "" {
		if err := l.cloud.Delete(ctx, inst); err != nil && !cloudprovider.IsNodeClaimNotFoundError(err) {
			return reconcile.Result{}, fmt.Errorf("terminating the instance of NodeClaim %s: %w", nc.Name, err)
		}
	}
	controllerutil.RemoveFinalizer(nc, v1.TerminationFinalizer)
	if err := l.client.Update(ctx, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	nodeClaimsTerminated.WithLabelValues(nc.Labels[v1.LabelNodePool]).Inc()
	return reconcile.Result{}, nil
}

// instanceOf is the claim as its instance: the claim itself once it has
// recorded its launch, else what launch remembers launching for it. A
// claim deleted while it launched (a scale to zero a second after its
// pods asked for it) had its instance created but the write recording it
// lost to the deletion's; finalized by the claim alone, that instance and
// its Node were left to garbage collection, minutes later.
func (l *lifecycle) instanceOf(nc *v1.NodeClaim) *v1.NodeClaim {
	if nc.Status.ProviderID != "" {
		return nc
	}
	if launched := l.launches.get(nc.UID); launched != nil {
		return launched
	}
	return nc
}

// drainEvery is how often a drain looks again at what is left, as
// upstream's termination controller does: the pods it evicted are gone
// within a second or two, and the node with them (5 s, before session 34,
// added up to 4 s to every consolidation and drift wave).
const drainEvery = time.Second

// drain takes one step of the node's drain; done when nothing that
// matters is left on it.
func (l *lifecycle) drain(ctx context.Context, nc *v1.NodeClaim, node *corev1.Node) (bool, error) {
	if !scheduling.HasTaint(node.Spec.Taints, v1.DisruptedTaint) {
		node.Spec.Taints = append(node.Spec.Taints, v1.DisruptedTaint)
		if err := l.client.Update(ctx, node); err != nil {
			return false, err
		}
	}
	var pods corev1.PodList
	if err := l.client.List(ctx, &pods, client.MatchingFields{nodeNameField: node.Name}); err != nil {
		return false, err
	}
	var pdbs policyv1.PodDisruptionBudgetList
	if err := l.client.List(ctx, &pdbs); err != nil {
		return false, err
	}
	d := termination.Drain{Started: nc.DeletionTimestamp.Time}
	if g := nc.Spec.TerminationGracePeriod; g != nil {
		d.GracePeriod = &g.Duration
	}
	for i := range pods.Items {
		d.Pods = append(d.Pods, &pods.Items[i])
	}
	for i := range pdbs.Items {
		d.PDBs = append(d.PDBs, &pdbs.Items[i])
	}
	step := termination.Next(d, l.clock.Now())
	if step.Done {
		return true, nil
	}
	var errs []error
	for _, p := range step.Evict {
		eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		err := l.client.SubResource("eviction").Create(ctx, p, eviction)
		// 429: a PodDisruptionBudget allows none now; try again later.
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsTooManyRequests(err) {
			errs = append(errs, fmt.Errorf("evicting %s/%s: %w", p.Namespace, p.Name, err))
		}
	}
	for _, p := range step.Delete {
		if err := l.client.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
		}
	}
	return false, errors.Join(errs...)
}

// nodeOf is the claim's Node (by providerID), or nil.
func (l *lifecycle) nodeOf(ctx context.Context, nc *v1.NodeClaim) (*corev1.Node, error) {
	if nc.Status.ProviderID == "" {
		return nil, nil
	}
	var nodes corev1.NodeList
	if err := l.client.List(ctx, &nodes, client.MatchingFields{providerIDField: nc.Status.ProviderID}); err != nil {
		return nil, err
	}
	if len(nodes.Items) == 0 {
		return nil, nil
	}
	return &nodes.Items[0], nil
}

// claimsOfNode are the NodeClaims whose provider ID is the Node's (none
// for a Node without one).
func claimsOfNode(ctx context.Context, r client.Reader, node *corev1.Node) ([]v1.NodeClaim, error) {
	if node.Spec.ProviderID == "" {
		return nil, nil
	}
	var claims v1.NodeClaimList
	if err := r.List(ctx, &claims, client.MatchingFields{providerIDField: node.Spec.ProviderID}); err != nil {
		return nil, err
	}
	return claims.Items, nil
}

// claimOfNode maps a Node event to its claim's reconcile request.
func (l *lifecycle) claimOfNode(ctx context.Context, o client.Object) []reconcile.Request {
	claims, err := claimsOfNode(ctx, l.client, o.(*corev1.Node))
	if err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, nc := range claims {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}})
		if name := state.Cohort(&nc); name != "" && l.policy.LaunchCohorts() && !conditionTrue(&nc, v1.ConditionRegistered) {
			// The members held for this one's Node look again (once it is
			// registered, its Node's updates concern them no more).
			out = append(out, l.heldFor(ctx, name, nc.Name)...)
		}
	}
	return out
}

// cohortOfClaim maps a NodeClaim event to the reconcile requests of its
// launch cohort's unregistered members when the claim may end their hold:
// it is launched (its Node, if it has appeared, is now known as its) or
// being deleted. A member's Node often appears before its claim records
// the launch; woken by Node events alone, the others waited for the next
// one.
func (l *lifecycle) cohortOfClaim(ctx context.Context, o client.Object) []reconcile.Request {
	nc := o.(*v1.NodeClaim)
	name := state.Cohort(nc)
	if name == "" || !l.policy.LaunchCohorts() || conditionTrue(nc, v1.ConditionRegistered) {
		return nil
	}
	if nc.DeletionTimestamp == nil && !conditionTrue(nc, v1.ConditionLaunched) {
		return nil
	}
	return l.heldFor(ctx, name, nc.Name)
}

// heldFor are the reconcile requests of launch cohort name's unregistered
// members but the claim named member: those its Node may hold (none if
// the cohort cannot be read).
func (l *lifecycle) heldFor(ctx context.Context, name, member string) []reconcile.Request {
	members, err := l.cohortOf(ctx, name)
	if err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, m := range members {
		if m.Name != member && !conditionTrue(&m, v1.ConditionRegistered) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: m.Name}})
		}
	}
	return out
}

// setCondition sets condition t True with reason and message.
func (l *lifecycle) setCondition(nc *v1.NodeClaim, t, reason, message string) {
	l.putCondition(nc, v1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: reason, Message: message})
}

// putCondition puts c in place of the claim's condition of its type (or
// adds it) and says whether that changed anything. The transition time is
// c's when it has one; otherwise the old condition's when the status stays
// the same, and now when it changes.
func (l *lifecycle) putCondition(nc *v1.NodeClaim, c v1.Condition) bool {
	explicit := !c.LastTransitionTime.IsZero()
	if !explicit {
		c.LastTransitionTime = metav1.NewTime(l.clock.Now())
	}
	if c.ObservedGeneration == 0 {
		c.ObservedGeneration = nc.Generation
	}
	for i := range nc.Status.Conditions {
		old := &nc.Status.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message && !explicit {
			return false
		}
		if old.Status == c.Status && !explicit {
			c.LastTransitionTime = old.LastTransitionTime
		}
		*old = c
		return true
	}
	nc.Status.Conditions = append(nc.Status.Conditions, c)
	return true
}

// draPublishPoll is how often a claim waiting for its DRA drivers' slices
// looks again.
const draPublishPoll = 5 * time.Second

// unpublishedDriver is the first driver of the claim's requested DRA
// drivers with no complete pool for the node ("" when none is missing,
// or DRA is not modelled).
func (l *lifecycle) unpublishedDriver(nc *v1.NodeClaim, node string) string {
	want := strings.TrimSpace(nc.Annotations[v1.AnnotationDRADrivers])
	if l.dra == nil || want == "" {
		return ""
	}
	have := provisioning.PublishedDrivers(l.dra(), node)
	for _, d := range strings.Split(want, ",") {
		if d = strings.TrimSpace(d); d != "" && !have[d] {
			return d
		}
	}
	return ""
}

// setWaiting sets condition t Unknown with reason and message; it says
// whether that changed anything.
func (l *lifecycle) setWaiting(nc *v1.NodeClaim, t, reason, message string) bool {
	return l.putCondition(nc, v1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: reason, Message: message})
}

func conditionTrue(nc *v1.NodeClaim, t string) bool {
	for _, c := range nc.Status.Conditions {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

func conditionTime(nc *v1.NodeClaim, t string) time.Time {
	for _, c := range nc.Status.Conditions {
		if c.Type == t {
			return c.LastTransitionTime.Time
		}
	}
	return nc.CreationTimestamp.Time
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func logError(ctx context.Context, err error, msg string) {
	log.FromContext(ctx).Error(err, msg)
}

func isInsufficientCapacity(err error) bool { return cloudprovider.IsInsufficientCapacityError(err) }
func isNotFound(err error) bool             { return cloudprovider.IsNodeClaimNotFoundError(err) }
