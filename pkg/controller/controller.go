// Package controller is Joiner in a cluster: informers feed pkg/state, and
// the engine's decisions become API writes — NodeClaims for pending pods,
// instances launched through the cloud provider, Nodes registered and
// initialized. It keeps no state of its own: a restarted controller
// rebuilds everything from the API server, and decides nothing until it
// has (syncgate.go: every informer handler has had its whole list and the
// cloud has answered for the NodePools' instance types; /readyz says what
// is missing until then).
//
// One type per loop or reconciler (provisioner.go, disruption.go,
// lifecycle.go, nodepool.go, nodeclass.go, nodeoverlay.go, interruption.go,
// repair.go, gc.go, metrics.go), each given what it needs; informer
// callbacks only update the Store (informers.go), cloud calls happen in
// loops; the provider's optional capabilities are one declared set
// (capabilities.go). Controller assembles them.
package controller

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/decide"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/schedulerconfig"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// Upstream's defaults.
const (
	DefaultBatchIdle       = time.Second
	DefaultBatchMax        = 10 * time.Second
	DefaultRegistrationTTL = 15 * time.Minute
)

// DefaultLaunchMissAfter is Joiner's (upstream has no launch-loop guard):
// see Options.LaunchMissAfter.
const DefaultLaunchMissAfter = 30 * time.Second

// SchedulerBacklog is how long Joiner's decisions leave a new pod to
// kube-scheduler before provisioning for it untried (see
// state.Store.SetSchedulerBacklog): kube-scheduler tries a pod within
// milliseconds unless it is behind a burst, and a provisioning batch ends
// at most DefaultBatchMax after it began. A 1,000-pod burst took it 6 s
// to try on the 2-core control plane; the pass waits for the last pod's
// backlog, not for kube-scheduler to reach it. 2 s brought a 1,000-pod
// scale-out Running 5 s sooner on the scale benchmark, but at 5,000 pods
// the passes that came while the pods were still being created launched
// nodes that slowed their creation on the shared control plane (every pod
// Running at 235 s instead of 143 s, $168.00/h instead of $162.69/h):
// docs/scale.md, session 26. A burst whose pods have stopped arriving for
// a batch's idle window is provisioned for then, every pod of it, not
// waited for until its last pod's backlog runs out (the Store's quiet).
const SchedulerBacklog = 5 * time.Second

// CloudProvider is what the controller launches through; the optional
// capabilities it may have beyond are Capabilities'.
type CloudProvider = cloudprovider.CloudProvider

// Options configure a Controller.
type Options struct {
	CloudProvider CloudProvider
	// Clock times batches and the registration TTL (the real clock when nil).
	Clock clock.WithTicker
	// BatchIdle and BatchMax: see Batcher (upstream's 1 s and 10 s when 0).
	BatchIdle, BatchMax time.Duration
	// WatchBreaks, when the manager's cache was made with CacheOptions of
	// it, holds a provisioning batch open while an informer relists.
	WatchBreaks *WatchBreaks
	// RegistrationTTL: a claim whose Node has not registered by then is
	// deleted, and provisioning tries again (15 min when 0).
	RegistrationTTL time.Duration
	// SpotToSpot is upstream's SpotToSpotConsolidation feature gate: spot
	// nodes may be replaced by cheaper spot nodes (off by default).
	SpotToSpot bool
	// NodeRepair is upstream's NodeRepair feature gate: nodes unhealthy
	// past the cloud provider's repair policies are replaced (off by
	// default, as upstream's).
	NodeRepair bool
	// NodeOverlay is upstream's NodeOverlay feature gate: NodeOverlays
	// change the instance types' prices and capacity the engine decides
	// with (off by default, as upstream's; needs the NodeOverlay CRD).
	NodeOverlay bool
	// CapacityBuffer is upstream's CapacityBuffer feature gate: the
	// CapacityBuffers' virtual pods are provisioned for and kept in
	// consolidation's simulations (off by default, as upstream's; needs
	// the CapacityBuffer CRD).
	CapacityBuffer bool
	// SchedulerConfig is the cluster's kube-scheduler configuration that
	// decisions follow (--scheduler-config): its default topology spread
	// constraints apply to pods that declare none, with selectors deduced
	// from the Services and pod controllers the controller then watches.
	SchedulerConfig *schedulerconfig.Config
	// Policy is the engine's choices where Joiner and upstream differ
	// (--decisions, --min-values-policy, --ignore-dra-requests; see
	// provisioning.Policy; with ModelDRA the controller watches the
	// resource.k8s.io objects device claims are allocated from): the
	// zero value is Joiner's (never dearer than upstream's on a batch) and
	// Strict.
	Policy provisioning.Policy
	// LaunchMissAfter: a pod still pending this long after the node
	// launched for it was initialized missed that node; after
	// state.MaxLaunchRounds misses provisioning stops launching for it
	// (30 s when 0: kube-scheduler binds to a new node within seconds).
	LaunchMissAfter time.Duration
	// Restartable lets a process build a second Controller after the first
	// stopped (as a test restarting Joiner does): controller-runtime
	// otherwise refuses a second controller of the same name.
	Restartable bool
}

// Controller is one Joiner in one cluster: the assembly of its loops and
// reconcilers, each of which holds only what it needs. It is safe for
// concurrent use: informer handlers, reconcilers and loops share its Store.
type Controller struct {
	store        *state.Store
	gate         *syncGate
	provisioner  *provisioner
	disrupter    *disrupter
	gc           *garbageCollector
	demoter      *reservationDemoter
	repairer     *repairer
	interruption *interruption
	metrics      *metricsUpdater
}

// Field indexes: Nodes and NodeClaims by provider ID, Pods by node,
// NodeClaims by launch cohort.
const (
	providerIDField = "joiner.providerID"
	nodeNameField   = "spec.nodeName"
	cohortField     = "joiner.launchCohort"
)

// New wires a Controller into mgr: informers into its Store, the
// reconcilers (NodeClaim lifecycle, NodePool status, and the NodeClass
// status for a provider that resolves them), and the loops (provisioning,
// disruption, garbage collection, metrics; node repair and interruption
// when on and offered), all started with mgr. mgr's scheme must know
// karpenter.sh/v1.
// Its complexity is wiring: an if for each optional part (a
// provider's node classes, repair, interruption, overlays) and each error.
func New(ctx context.Context, mgr manager.Manager, opts Options) (*Controller, error) {
	if opts.CloudProvider == nil {
		return nil, errors.New("controller: Options.CloudProvider is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.BatchIdle == 0 {
		opts.BatchIdle = DefaultBatchIdle
	}
	if opts.BatchMax == 0 {
		opts.BatchMax = DefaultBatchMax
	}
	if opts.RegistrationTTL == 0 {
		opts.RegistrationTTL = DefaultRegistrationTTL
	}
	if opts.LaunchMissAfter == 0 {
		opts.LaunchMissAfter = DefaultLaunchMissAfter
	}
	if err := indexFields(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	caps := DiscoverCapabilities(opts.CloudProvider)
	kube := mgr.GetClient()
	store := state.NewStore(state.WaitForScheduler)
	if opts.Policy.ProvisionsSchedulerBacklog() {
		store.SetSchedulerBacklog(SchedulerBacklog, opts.BatchIdle, opts.Clock)
	}
	store.SetPinLaunchedPods(opts.Policy.PinsLaunchedPods())
	cloud := metered{opts.CloudProvider, opts.Clock}
	events := recorder{r: mgr.GetEventRecorder("karpenter"), nominations: newNominationFilter(opts.Clock)}
	gate := newSyncGate()
	batch := NewBatcher(opts.Clock, opts.BatchIdle, opts.BatchMax)
	off := &offerings{store: store, reader: mgr.GetCache(), cloud: cloud, pools: caps.NodePools, version: caps.Offerings,
		gate: gate, clock: opts.Clock, wake: make(chan struct{}, 1)}
	if opts.NodeOverlay {
		off.overlays = newOverlays(opts.Policy, caps.Overlays, overlayStatus{client: kube, events: events})
	}
	// What the instance types depend on changed: the offerings loop asks
	// the cloud again soon, and pods may fit a changed pool.
	offeringsChanged := func() {
		off.changed()
		batch.Trigger()
	}
	// The engine, once: the policy, the Planner for the Store's
	// configuration (provisioning passes and consolidation's simulations
	// share its caches) and the disruption memo.
	decider := decide.New(opts.Policy, decide.Options{Concurrent: true})
	claims := claimCreator{client: kube, store: store, overlays: off.overlays}
	c := &Controller{
		store: store,
		gate:  gate,
		provisioner: &provisioner{gate: gate, batch: batch, store: store, offerings: off, decider: decider, claims: claims, events: events,
			clock: opts.Clock, missAfter: opts.LaunchMissAfter},
		disrupter: &disrupter{gate: gate, client: kube, store: store, cloud: cloud, offerings: off, decider: decider, claims: claims, events: events,
			clock: opts.Clock, wake: make(chan struct{}, 1),
			queue: disruption.Queue{Options: disruption.Options{SpotToSpot: opts.SpotToSpot}}},
		gc:           &garbageCollector{gate: gate, client: kube, cloud: cloud, clock: opts.Clock},
		demoter:      &reservationDemoter{gate: gate, client: kube, cloud: cloud, clock: opts.Clock},
		repairer:     &repairer{gate: gate, client: kube, store: store, policies: cloud.RepairPolicies, events: events, clock: opts.Clock},
		interruption: &interruption{client: kube, store: store, events: events},
		metrics:      &metricsUpdater{gate: gate, store: store, clock: opts.Clock},
	}
	feed := &storeFeed{store: store, reader: mgr.GetCache(), gate: gate, batch: batch, offeringsChanged: offeringsChanged, claimGone: c.disrupter.claimGone,
		clock: opts.Clock, nodeOverlays: opts.NodeOverlay, dra: opts.Policy.ModelDRA, spreadDefaults: opts.SchedulerConfig.DefaultConstraints(),
		quietFirstVerdicts: opts.Policy.ProvisionsSchedulerBacklog()}
	if opts.Policy.WaitsForBinding() {
		feed.bindings = &bindings{}
		c.provisioner.bindings, c.provisioner.recheck = feed.bindings, make(chan time.Time, 1)
	}
	if opts.CapacityBuffer {
		feed.buffers = &capacityBuffers{reader: mgr.GetCache(), client: kube, store: store, batch: batch, clock: opts.Clock, wake: make(chan struct{}, 1)}
		c.provisioner.buffers = feed.buffers
		bufs := feed.buffers
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { return bufs.loop(ctx, gate) })); err != nil {
			return nil, err
		}
	}
	opts.WatchBreaks.on(feed.watchBroke)
	if err := feed.watch(ctx, mgr.GetCache()); err != nil {
		return nil, err
	}
	life := &lifecycle{gate: gate, client: kube, cloud: cloud, events: events, clock: opts.Clock, registrationTTL: opts.RegistrationTTL, policy: opts.Policy}
	if opts.Policy.ModelDRA {
		life.dra = store.DRA
	}
	err := builder.ControllerManagedBy(mgr).Named("nodeclaim.lifecycle").For(&v1.NodeClaim{}).
		WithOptions(crcontroller.Options{SkipNameValidation: &opts.Restartable, MaxConcurrentReconciles: lifecycleWorkers}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(life.claimOfNode)).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(life.cohortOfClaim)).
		Complete(reconcile.Func(life.reconcile))
	if err != nil {
		return nil, err
	}
	podEv := &podEvents{client: kube, clock: opts.Clock}
	err = builder.ControllerManagedBy(mgr).Named("nodeclaim.podevents").For(&corev1.Pod{}, builder.WithPredicates(podEventPredicate)).
		WithOptions(crcontroller.Options{SkipNameValidation: &opts.Restartable}).
		Complete(reconcile.Func(podEv.reconcile))
	if err != nil {
		return nil, err
	}
	pools := &nodePoolStatus{gate: gate, client: kube, cloud: cloud}
	err = builder.ControllerManagedBy(mgr).Named("nodepool.status").For(&v1.NodePool{}).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(poolOfClaim)).
		WithOptions(crcontroller.Options{SkipNameValidation: &opts.Restartable}).
		Complete(reconcile.Func(pools.reconcile))
	if err != nil {
		return nil, err
	}
	if caps.NodeClasses != nil {
		classes := &nodeClassStatus{client: kube, events: events, resolver: caps.NodeClasses, finalizer: caps.NodeClassFinalizer, changed: offeringsChanged}
		if err := classes.register(mgr, opts.Restartable); err != nil {
			return nil, err
		}
		// The provider's drift checks and launches read them.
		inf, err := mgr.GetCache().GetInformer(ctx, &awsv1.EC2NodeClass{})
		if err != nil {
			return nil, err
		}
		gate.add("EC2NodeClasses", inf.HasSynced)
	}
	// The gate's last step, once every handler has had its informer's
	// whole list: the relisted kinds read once more, the volumes declared
	// complete, and the NodePools' instance types asked of the cloud.
	complete := func(ctx context.Context) error {
		if err := feed.complete(ctx); err != nil {
			return err
		}
		off.markStale()
		return off.refresh(ctx)
	}
	if err := mgr.Add(gateRunnable(func(ctx context.Context) error { return gate.run(ctx, complete) })); err != nil {
		return nil, err
	}
	if err := mgr.Add(gateRunnable(off.loop)); err != nil {
		return nil, err
	}
	loops := []func(context.Context) error{c.gc.loop, c.disrupter.loop, c.metrics.loop, c.demoter.loop}
	if opts.NodeRepair {
		loops = append(loops, c.repairer.loop)
	}
	if caps.Interruptions != nil {
		c.interruption.notices = caps.Interruptions.Interruptions()
		loops = append(loops, c.interruption.loop)
	}
	// A provider's own loops (the AWS provider's price refreshes and
	// interruption queue), the leader's alone like the others.
	if caps.Runner != nil {
		loops = append(loops, caps.Runner.Run)
	}
	for _, loop := range loops {
		if err := mgr.Add(manager.RunnableFunc(loop)); err != nil {
			return nil, err
		}
	}
	return c, mgr.Add(manager.RunnableFunc(c.provisioner.loop))
}

// fieldIndex is a field index the reconcilers list by.
type fieldIndex struct {
	obj   client.Object
	field string
	value client.IndexerFunc
}

// fieldIndexes are the manager cache's indexes (and a unit test's fake
// client's): Nodes and NodeClaims by provider ID, Pods by node name,
// NodeClaims by launch cohort.
var fieldIndexes = []fieldIndex{
	{&corev1.Node{}, providerIDField, func(o client.Object) []string { return []string{o.(*corev1.Node).Spec.ProviderID} }},
	{&v1.NodeClaim{}, providerIDField, func(o client.Object) []string { return []string{o.(*v1.NodeClaim).Status.ProviderID} }},
	{&corev1.Pod{}, nodeNameField, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }},
	{&v1.NodeClaim{}, cohortField, func(o client.Object) []string { return []string{state.Cohort(o.(*v1.NodeClaim))} }},
}

// indexFields adds the field indexes the reconcilers list by.
func indexFields(ctx context.Context, idx client.FieldIndexer) error {
	for _, f := range fieldIndexes {
		if err := idx.IndexField(ctx, f.obj, f.field, f.value); err != nil {
			return err
		}
	}
	return nil
}

// Store is the controller's view of the cluster.
func (c *Controller) Store() *state.Store { return c.store }

// Synced says whether the Store has seen the whole cluster: every informer
// the decisions read has handed it its whole list, and the NodePools'
// instance types are known. No decision is made before.
func (c *Controller) Synced() bool { return c.gate.synced() }

// WaitSynced blocks until Synced (true) or ctx ends (false).
func (c *Controller) WaitSynced(ctx context.Context) bool { return c.gate.wait(ctx) }

// ReadyzCheck is a /readyz check: not ready, naming what is missing, until
// Synced.
func (c *Controller) ReadyzCheck() healthz.Checker { return c.gate.check }

// Provision runs one provisioning pass over the Store and creates the
// NodeClaims it plans, returning them. Each is put in the Store at once,
// so the next pass counts it before its informer event arrives. Before the
// Store is complete it decides nothing and returns ErrNotSynced.
func (c *Controller) Provision(ctx context.Context) ([]*v1.NodeClaim, error) {
	return c.provisioner.provision(ctx)
}

// Disrupt runs one disruption pass, as upstream's disruption controller:
// expired claims are deleted; unless a command is waiting for its
// validation, the engine's next commands are queued; then the queue
// advances (validate, taint, launch replacements, wait for them, delete
// the candidates' claims). It returns what the queue did.
func (c *Controller) Disrupt(ctx context.Context) ([]disruption.Event, error) {
	return c.disrupter.disrupt(ctx)
}

// CollectGarbage terminates instances the cloud runs for no NodeClaim, and
// deletes launched NodeClaims whose instance is gone (their Node goes with
// them).
func (c *Controller) CollectGarbage(ctx context.Context) error { return c.gc.collect(ctx) }

// DemoteReservedClaims relabels reserved claims, and their Nodes, whose
// instance the cloud says runs on-demand now, as the controller does
// every minute.
func (c *Controller) DemoteReservedClaims(ctx context.Context) error { return c.demoter.demote(ctx) }

// Repair runs node repair once, as upstream's node health controller
// (behind its NodeRepair feature gate): the NodeClaim of each node whose
// condition has matched one of the cloud provider's repair policies past
// its toleration is deleted — its node drained and replaced as any deleted
// claim's — unless more than 20 % of its NodePool's nodes are unhealthy,
// which an Event on the NodePool says. It returns the claims deleted.
func (c *Controller) Repair(ctx context.Context) ([]string, error) { return c.repairer.repair(ctx) }

// Interrupted handles one notice as upstream's interruption controller
// does: for a notice that the instance goes away (every kind but a
// rebalance recommendation) the instance's NodeClaim is deleted at once —
// its termination taints and drains the node, and provisioning finds the
// evicted pods a place — whatever the budgets say, since the instance goes
// regardless; a rebalance recommendation is only recorded as an Event.
// A notice for an instance no claim has, or whose claim is already going,
// is done. A notice not handled (an error) is not acknowledged, so the
// cloud sends it again.
func (c *Controller) Interrupted(ctx context.Context, n cloudprovider.Interruption) error {
	return c.interruption.handle(ctx, n)
}

// UpdateGauges sets karpenter_nodes_total_pod_requests per node and
// joiner_nodepool_cost_per_hour_usd per NodePool from the Store; the
// series of nodes and pools that are gone are deleted.
func (c *Controller) UpdateGauges() { c.metrics.update() }

// pointers are pointers to a list's items.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
