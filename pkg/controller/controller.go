// Package controller is Joiner in a cluster: informers feed pkg/state, and
// the engine's decisions become API writes — NodeClaims for pending pods,
// instances launched through the cloud provider, Nodes registered and
// initialized. It keeps no state of its own: a restarted controller
// rebuilds everything from the API server.
package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// Upstream's defaults.
const (
	DefaultBatchIdle       = time.Second
	DefaultBatchMax        = 10 * time.Second
	DefaultRegistrationTTL = 15 * time.Minute
)

// CloudProvider is what the controller launches through. A provider that
// also has SetNodePools is told the NodePools whenever they change.
type CloudProvider = cloudprovider.CloudProvider

// Runner is a cloud provider with loops of its own, run while the
// controller leads.
type Runner interface {
	Run(ctx context.Context) error
}

// Options configure a Controller.
type Options struct {
	CloudProvider CloudProvider
	// Clock times batches and the registration TTL (the real clock when nil).
	Clock clock.WithTicker
	// BatchIdle and BatchMax: see Batcher (upstream's 1 s and 10 s when 0).
	BatchIdle, BatchMax time.Duration
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
	// Decisions and MinValuesPolicy are the engine's choices where Joiner
	// and upstream differ (--decisions, --min-values-policy): "" is
	// Joiner's (never dearer than upstream's on a batch) and Strict.
	Decisions       provisioning.Decisions
	MinValuesPolicy provisioning.MinValuesPolicy
	// Restartable lets a process build a second Controller after the first
	// stopped (as a test restarting Joiner does): controller-runtime
	// otherwise refuses a second controller of the same name.
	Restartable bool
}

// Controller is one Joiner in one cluster. It is safe for concurrent use:
// informer handlers, reconcilers and the provisioning loop share its Store.
type Controller struct {
	client  client.Client
	store   *state.Store
	cloud   CloudProvider // opts.CloudProvider, metered
	opts    Options
	batch   *Batcher
	disrupt disrupter
	events  events.EventRecorder
	// offeringsAt is the cloud's offerings version the Store's instance
	// types are of.
	offeringsMu sync.Mutex
	offeringsAt int
	overlays    overlayState // what setOfferings applied (NodeOverlay gate)
	// plan is the Planner for the Store's configuration version planAt.
	memo      *disruption.Memo // what disruption passes learn of unchanged nodes
	plannerMu sync.Mutex
	plan      *provisioning.Planner
	planAt    uint64
	gauges    gauges
	// launches are the instances launched whose claim has not recorded them.
	launches launchCache
	// gate holds every decision back until the Store is complete.
	gate *syncGate
	// reader is the manager's cache, which the relisted kinds are read from.
	reader client.Reader
	// offeringsStale says a NodePool or NodeOverlay changed since the
	// Store's instance types were asked of the cloud: the next pass asks
	// again (informer callbacks only note it; cloud calls are the loops').
	offeringsStale atomic.Bool
	offeringsWake  chan struct{} // the offerings loop's wake-up (buffered 1)
	refreshMu      sync.Mutex    // one refresh of the offerings at a time
}

// Field indexes: Nodes and NodeClaims by provider ID, Pods by node.
const (
	providerIDField = "joiner.providerID"
	nodeNameField   = "spec.nodeName"
)

// New wires a Controller into mgr: informers into its Store, the NodeClaim
// lifecycle reconciler, and the provisioning loop (started with mgr).
// mgr's scheme must know karpenter.sh/v1.
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
	c := &Controller{client: mgr.GetClient(), store: state.NewStore(false), cloud: metered{opts.CloudProvider, opts.Clock}, opts: opts,
		batch: NewBatcher(opts.Clock, opts.BatchIdle, opts.BatchMax), events: mgr.GetEventRecorder("karpenter"), memo: disruption.NewMemo(),
		gate: newSyncGate(), reader: mgr.GetCache(), offeringsWake: make(chan struct{}, 1)}
	c.disrupt.queue.Options = disruption.Options{SpotToSpot: opts.SpotToSpot}
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &corev1.Node{}, providerIDField, func(o client.Object) []string {
		return []string{o.(*corev1.Node).Spec.ProviderID}
	}); err != nil {
		return nil, err
	}
	if err := idx.IndexField(ctx, &v1.NodeClaim{}, providerIDField, func(o client.Object) []string {
		return []string{o.(*v1.NodeClaim).Status.ProviderID}
	}); err != nil {
		return nil, err
	}
	if err := idx.IndexField(ctx, &corev1.Pod{}, nodeNameField, func(o client.Object) []string {
		return []string{o.(*corev1.Pod).Spec.NodeName}
	}); err != nil {
		return nil, err
	}
	if err := c.watch(ctx, mgr); err != nil {
		return nil, err
	}
	err := builder.ControllerManagedBy(mgr).Named("nodeclaim.lifecycle").For(&v1.NodeClaim{}).
		WithOptions(crcontroller.Options{SkipNameValidation: &opts.Restartable}).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.claimOfNode)).
		Complete(reconcile.Func(c.reconcileClaim))
	if err != nil {
		return nil, err
	}
	err = builder.ControllerManagedBy(mgr).Named("nodepool.status").For(&v1.NodePool{}).
		Watches(&v1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(poolOfClaim)).
		WithOptions(crcontroller.Options{SkipNameValidation: &opts.Restartable}).
		Complete(reconcile.Func(c.reconcileNodePool))
	if err != nil {
		return nil, err
	}
	if r, ok := opts.CloudProvider.(NodeClassResolver); ok {
		if err := c.watchNodeClasses(mgr, r); err != nil {
			return nil, err
		}
		// The provider's drift checks and launches read them.
		inf, err := mgr.GetCache().GetInformer(ctx, &awsv1.EC2NodeClass{})
		if err != nil {
			return nil, err
		}
		c.gate.add("EC2NodeClasses", inf.HasSynced)
	}
	if err := mgr.Add(gateRunnable(func(ctx context.Context) error { return c.gate.run(ctx, c.complete) })); err != nil {
		return nil, err
	}
	if err := mgr.Add(gateRunnable(c.offeringsLoop)); err != nil {
		return nil, err
	}
	loops := []func(context.Context) error{c.gcLoop, c.disruptionLoop, c.metricsLoop}
	if opts.NodeRepair {
		loops = append(loops, c.repairLoop)
	}
	if i, ok := opts.CloudProvider.(cloudprovider.Interrupter); ok {
		loops = append(loops, c.interruptionLoop(i.Interruptions()))
	}
	// A provider's own loops (the AWS provider's price refreshes and
	// interruption queue), the leader's alone like the others.
	if r, ok := opts.CloudProvider.(Runner); ok {
		loops = append(loops, r.Run)
	}
	for _, loop := range loops {
		if err := mgr.Add(manager.RunnableFunc(loop)); err != nil {
			return nil, err
		}
	}
	return c, mgr.Add(manager.RunnableFunc(c.provisionLoop))
}

// planner is a provisioning Planner for the snapshot's NodePools, instance
// types and DaemonSets, kept while the Store says they are unchanged so
// passes and consolidation's simulations share its caches.
//
// version must be the Store's ConfigVersion read before the snapshot was
// taken: a change in between then only makes the next call build anew.
func (c *Controller) planner(snap *provisioning.Snapshot, version uint64) *provisioning.Planner {
	c.plannerMu.Lock()
	defer c.plannerMu.Unlock()
	if c.plan == nil || c.planAt != version {
		c.plan, c.planAt = provisioning.NewPlanner(snap.NodePools, snap.InstanceTypes, snap.DaemonSets), version
		c.plan.Concurrent = true // one batch at a time: its two ways may take two cores
	}
	return c.plan
}

// event records a Kubernetes Event on obj (related, if set, is the other
// object it concerns), as upstream's reasons name them.
func (c *Controller) event(obj, related runtime.Object, eventType, reason, format string, args ...any) {
	c.events.Eventf(obj, related, eventType, reason, reason, format, args...)
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

// watch feeds the Store from the manager's informers.
func (c *Controller) watch(ctx context.Context, mgr manager.Manager) error {
	cache := mgr.GetCache()
	handlers := []struct {
		name string
		obj  client.Object
		h    toolscache.ResourceEventHandler
	}{
		{"Pods", &corev1.Pod{}, objectHandler(c.podChanged, func(p *corev1.Pod) { c.store.DeletePod(p.Namespace, p.Name) })},
		// A Node or NodeClaim that goes may leave pods without the room
		// planned for them: provisioning looks again.
		{"Nodes", &corev1.Node{}, objectHandler(c.store.SetNode, func(n *corev1.Node) { c.store.DeleteNode(n.Name); c.batch.Trigger() })},
		{"NodeClaims", &v1.NodeClaim{}, objectHandler(c.store.SetNodeClaim, func(nc *v1.NodeClaim) { c.store.DeleteNodeClaim(nc.Name); c.batch.Trigger() })},
		{"NodePools", &v1.NodePool{}, c.offeringsChanged()},
		{"DaemonSets", &appsv1.DaemonSet{}, c.relist(ctx, c.syncDaemonSets)},
		{"PodDisruptionBudgets", &policyv1.PodDisruptionBudget{}, c.relist(ctx, c.syncPDBs)},
		// Volumes pin the zones their pods' nodes may be in.
		{"PersistentVolumeClaims", &corev1.PersistentVolumeClaim{}, objectHandler(c.store.SetPersistentVolumeClaim, func(pvc *corev1.PersistentVolumeClaim) {
			c.store.DeletePersistentVolumeClaim(pvc.Namespace, pvc.Name)
		})},
		{"PersistentVolumes", &corev1.PersistentVolume{}, objectHandler(c.store.SetPersistentVolume, func(pv *corev1.PersistentVolume) { c.store.DeletePersistentVolume(pv.Name) })},
		{"StorageClasses", &storagev1.StorageClass{}, objectHandler(c.store.SetStorageClass, func(sc *storagev1.StorageClass) { c.store.DeleteStorageClass(sc.Name) })},
	}
	if c.opts.NodeOverlay {
		handlers = append(handlers, struct {
			name string
			obj  client.Object
			h    toolscache.ResourceEventHandler
		}{"NodeOverlays", &v1alpha1.NodeOverlay{}, c.offeringsChanged()})
	}
	for _, h := range handlers {
		inf, err := cache.GetInformer(ctx, h.obj)
		if _, overlay := h.obj.(*v1alpha1.NodeOverlay); overlay && meta.IsNoMatchError(err) {
			return fmt.Errorf("the NodeOverlay feature gate is on but the cluster does not serve karpenter.sh/v1alpha1 NodeOverlay: install its CRD (charts/joiner/crds/karpenter.sh_nodeoverlays.yaml) or turn the gate off: %w", err)
		}
		if err != nil {
			return err
		}
		reg, err := inf.AddEventHandler(h.h)
		if err != nil {
			return err
		}
		// The handler's own sync, not the informer's: the informer's cache
		// is full before its handlers have been handed all of it.
		c.gate.add(h.name, reg.HasSynced)
	}
	return nil
}

// podChanged records a pod: a pod kube-scheduler found no room for starts
// (or extends) a provisioning batch, and a pod seen turning Running is
// timed from its creation for karpenter_pods_startup_duration_seconds.
func (c *Controller) podChanged(p *corev1.Pod) {
	old := c.store.Pod(p.Namespace, p.Name)
	c.store.SetPod(p)
	if state.Provisionable(p, false) {
		c.batch.Trigger()
	}
	if old != nil && old.Status.Phase != corev1.PodRunning && p.Status.Phase == corev1.PodRunning {
		podStartup.Observe(c.opts.Clock.Since(p.CreationTimestamp.Time).Seconds())
	}
}

// objectHandler calls set on adds and updates and del on deletes
// (tombstones included).
func objectHandler[T client.Object](set, del func(T)) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { set(o.(T)) },
		UpdateFunc: func(_, o any) { set(o.(T)) },
		DeleteFunc: func(o any) {
			if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if obj, ok := o.(T); ok {
				del(obj)
			}
		},
	}
}

// relist calls sync, after any change of its kind, with the informer's
// whole list: DaemonSets and PDBs are few.
func (c *Controller) relist(ctx context.Context, sync func(context.Context, client.Reader) error) toolscache.ResourceEventHandler {
	run := func() {
		if err := sync(ctx, c.reader); err != nil {
			logError(ctx, err, "refreshing state")
		}
	}
	return toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { run() }, UpdateFunc: func(_, _ any) { run() }, DeleteFunc: func(any) { run() }}
}

// offeringsChanged is the handler of the kinds the instance types depend
// on (NodePools, NodeOverlays): it only notes that the next pass must ask
// the cloud again, and wakes provisioning — pods may fit a changed pool.
func (c *Controller) offeringsChanged() toolscache.ResourceEventHandler {
	changed := func() {
		c.offeringsStale.Store(true)
		c.wakeOfferings()
		c.batch.Trigger()
	}
	return toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { changed() }, UpdateFunc: func(_, _ any) { changed() }, DeleteFunc: func(any) { changed() }}
}

// wakeOfferings has the offerings loop look at once.
func (c *Controller) wakeOfferings() {
	select {
	case c.offeringsWake <- struct{}{}:
	default: // a wake-up is already waiting
	}
}

// offeringsRetry is how soon a failed refresh of the offerings is tried
// again by the offerings loop (the passes try at every run too).
const offeringsRetry = 5 * time.Second

// offeringsLoop refreshes the Store's NodePools and instance types soon
// after one of the kinds they depend on changed, from the moment the Store
// is complete until ctx ends — on every replica, so a follower that takes
// over decides with current offerings.
func (c *Controller) offeringsLoop(ctx context.Context) error {
	if !c.gate.wait(ctx) {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-c.offeringsWake:
		}
		if err := c.refreshOfferings(ctx); err != nil {
			logError(ctx, err, "refreshing instance types")
			retry := c.opts.Clock.NewTimer(offeringsRetry)
			select {
			case <-ctx.Done():
				retry.Stop()
				return nil
			case <-retry.C():
				c.wakeOfferings()
			}
		}
	}
}

// complete is the sync gate's last step, once every handler has had its
// informer's whole list: the relisted kinds read once more, the volumes
// declared complete, and the NodePools' instance types asked of the cloud.
func (c *Controller) complete(ctx context.Context) error {
	if err := errors.Join(c.syncDaemonSets(ctx, c.reader), c.syncPDBs(ctx, c.reader)); err != nil {
		return err
	}
	// Every claim, volume and StorageClass there is has reached the Store:
	// one it has not seen holds its pods back, as upstream's.
	c.store.SetVolumesComplete(true)
	c.offeringsStale.Store(true)
	return c.refreshOfferings(ctx)
}

// versioned is a cloud provider whose offerings' availability has a
// version (the simulated EC2's and kwok's).
type versioned interface{ Version() int }

// refreshOfferings asks the cloud for the NodePools' instance types again
// when a NodePool, NodeOverlay or NodeClass changed, or their availability
// did since the Store got them (an insufficient-capacity error the
// provider learned is planned around). A refresh that failed is tried
// again by the next pass.
func (c *Controller) refreshOfferings(ctx context.Context) error {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	stale := c.offeringsStale.Swap(false)
	if v, ok := c.opts.CloudProvider.(versioned); ok && !stale {
		c.offeringsMu.Lock()
		stale = v.Version() != c.offeringsAt
		c.offeringsMu.Unlock()
	}
	if !stale {
		return nil
	}
	ctx = withController(ctx, "nodepool.state")
	var list v1.NodePoolList
	if err := c.reader.List(ctx, &list); err != nil {
		c.offeringsStale.Store(true)
		return err
	}
	pools := pointers(list.Items)
	if c.opts.NodeOverlay {
		var overlays v1alpha1.NodeOverlayList
		if err := c.reader.List(ctx, &overlays); err != nil {
			c.offeringsStale.Store(true)
			return err
		}
		c.offeringsMu.Lock()
		c.overlays.list = pointers(overlays.Items)
		c.offeringsMu.Unlock()
	}
	var errs []error
	if s, ok := c.opts.CloudProvider.(interface{ SetNodePools([]*v1.NodePool) error }); ok {
		errs = append(errs, s.SetNodePools(pools))
	}
	errs = append(errs, c.setOfferings(ctx, pools))
	if err := errors.Join(errs...); err != nil {
		c.offeringsStale.Store(true)
		return err
	}
	if c.opts.NodeOverlay {
		// A conflict may come or go with a pool or an overlay.
		return c.writeOverlayStatuses(ctx)
	}
	return nil
}

// setOfferings puts the NodePools and their instance types in the Store.
// A NodePool whose NodeClass is not ready gets none (logged, as upstream
// leaves such a pool out); any other error is returned.
func (c *Controller) setOfferings(ctx context.Context, pools []*v1.NodePool) error {
	c.offeringsMu.Lock()
	defer c.offeringsMu.Unlock()
	if v, ok := c.opts.CloudProvider.(versioned); ok {
		c.offeringsAt = v.Version()
	}
	var errs []error
	its := map[string][]*cloudprovider.InstanceType{}
	for _, np := range pools {
		got, err := c.cloud.GetInstanceTypes(ctx, np)
		if cloudprovider.IsNodeClassNotReadyError(err) {
			log.FromContext(ctx).Info("leaving out a NodePool whose NodeClass is not ready", "nodepool", np.Name, "reason", err.Error())
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("NodePool %s: %w", np.Name, err))
			continue
		}
		its[np.Name] = got
	}
	c.store.SetNodePoolsAndTypes(pools, c.applyOverlays(pools, its))
	return errors.Join(errs...)
}

func (c *Controller) syncDaemonSets(ctx context.Context, r client.Reader) error {
	var list appsv1.DaemonSetList
	if err := r.List(ctx, &list); err != nil {
		return err
	}
	c.store.SetDaemonSets(pointers(list.Items))
	return nil
}

func (c *Controller) syncPDBs(ctx context.Context, r client.Reader) error {
	var list policyv1.PodDisruptionBudgetList
	if err := r.List(ctx, &list); err != nil {
		return err
	}
	c.store.SetPDBs(pointers(list.Items))
	return nil
}

// provisionLoop provisions after every batch until ctx ends, from the
// moment the Store is complete.
func (c *Controller) provisionLoop(ctx context.Context) error {
	if !c.gate.wait(ctx) {
		return nil
	}
	for c.batch.Wait(ctx) {
		if _, err := c.Provision(ctx); err != nil {
			logError(ctx, err, "provisioning")
		}
	}
	return nil
}

// Provision runs one provisioning pass over the Store and creates the
// NodeClaims it plans, returning them. Each is put in the Store at once,
// so the next pass counts it before its informer event arrives. Before the
// Store is complete it decides nothing and returns ErrNotSynced.
func (c *Controller) Provision(ctx context.Context) ([]*v1.NodeClaim, error) {
	if !c.gate.synced() {
		return nil, ErrNotSynced
	}
	ctx = withController(ctx, "provisioner")
	if err := c.refreshOfferings(ctx); err != nil {
		logError(ctx, err, "refreshing instance types")
	}
	version := c.store.ConfigVersion()
	snap := c.store.ProvisioningSnapshot()
	snap.Decisions, snap.MinValuesPolicy = c.opts.Decisions, c.opts.MinValuesPolicy
	schedulingQueueDepth.WithLabelValues("provisioner").Set(float64(len(snap.Pods)))
	if len(snap.Pods) == 0 {
		return nil, nil
	}
	start := c.opts.Clock.Now()
	res := c.planner(snap, version).Solve(ctx, snap)
	schedulingDuration.WithLabelValues("provisioner").Observe(c.opts.Clock.Since(start).Seconds())
	var created []*v1.NodeClaim
	var errs []error
	for _, plan := range res.NewNodeClaims {
		nc := state.NewNodeClaim(plan, "", metav1.Time{})
		c.annotateOverlays(nc, plan)
		if err := c.client.Create(ctx, nc); err != nil {
			errs = append(errs, fmt.Errorf("creating a NodeClaim of NodePool %s: %w", plan.NodePool.Name, err))
			continue
		}
		c.store.SetNodeClaim(nc)
		nodeClaimsCreated.WithLabelValues(plan.NodePool.Name, "provisioning").Inc()
		created = append(created, nc)
		for _, p := range plan.Pods {
			c.event(p, nc, corev1.EventTypeNormal, "Nominated", "Pod should schedule on: nodeclaim/%s", nc.Name)
		}
	}
	// The engine's reason, per NodePool, for each pod nothing can hold; a
	// NodePool whose limits stop it is told once a pass.
	atLimit := map[string]string{}
	for _, pe := range res.Unschedulable {
		c.event(pe.Pod, nil, corev1.EventTypeWarning, "FailedScheduling", "Failed to schedule pod: %s", pe.Reason)
		for pool, why := range pe.ByNodePool {
			if strings.HasPrefix(why, provisioning.LimitsReasonPrefix) {
				atLimit[pool] = why
			}
		}
	}
	for _, np := range snap.NodePools {
		if why, ok := atLimit[np.Name]; ok {
			c.event(np, nil, corev1.EventTypeWarning, "NodePoolLimitReached", "Pending pods cannot get a node from this NodePool: it %s", why)
		}
	}
	return created, errors.Join(errs...)
}

// pointers are pointers to a list's items.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
