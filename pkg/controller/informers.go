package controller

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourceapi "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/joiner-autoscaler/joiner/pkg/apis/autoscaling/v1beta1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// storeFeed feeds the Store from the manager's informers. Its callbacks
// only update the Store, note that the offerings are stale and wake
// provisioning: the cloud is called from the loops alone.
type storeFeed struct {
	store  *state.Store
	reader client.Reader // the manager's cache, which the relisted kinds are read from
	gate   *syncGate     // told of every handler's sync
	batch  *Batcher      // woken by what may leave pods without room
	// offeringsChanged says the instance types must be asked for again
	// and wakes provisioning.
	offeringsChanged func()
	// claimGone wakes disruption: a NodeClaim's budget is free (nil: no
	// one to wake).
	claimGone func()
	clock     clock.PassiveClock // times pods' startup and bindings
	// bindings is told when a pod seen pending is bound (nil: no one).
	bindings     *bindings
	nodeOverlays bool // the NodeOverlay feature gate
	dra          bool // --ignore-dra-requests=false: device objects are read
	// buffers, with the CapacityBuffer feature gate, is woken by what a
	// buffer resolves from.
	buffers *capacityBuffers
	// spreadDefaults are kube-scheduler's default topology spread
	// constraints (--scheduler-config); spread deduces their selectors
	// when there are any.
	spreadDefaults []corev1.TopologySpreadConstraint
	spread         *spreadSelectors
	// quietFirstVerdicts: kube-scheduler's first verdict on a pod the Store took
	// as provisionable already (its scheduler backlog) wakes no
	// provisioning (see podChanged).
	quietFirstVerdicts bool
	// relisting: the pods' watch broke and no pod event has come since;
	// the batch is held until one does (see podRelisted).
	relisting atomic.Bool
}

// watchBroke is what a broken watch of kind (its Reflector's type) does to
// the batch: the pods' holds it until a pod event (podWatchBroke), any
// other kind's for its relist (relistWait).
func (f *storeFeed) watchBroke(kind string) {
	if kind == podsKind {
		f.podWatchBroke()
	} else {
		f.batch.Extend(relistWait)
	}
}

// podWatchBroke holds the batch open until the next pod event, or its max.
// The informer relists after a backoff, and the list itself may take
// seconds on an API server busy with a burst: a 1,000-pod scale-out's
// batch, held the 2 s of relistWait, closed on 627 of its pods while the
// rest were still to be listed, and planned them in a second pass (a
// dearer layout, consolidated in the hold after). The relist, or a watch
// resumed where it broke, brings every pod that changed meanwhile.
func (f *storeFeed) podWatchBroke() {
	f.batch.Hold()
	f.relisting.Store(true) // after the hold: an event between them leaves it held till the next
}

// podRelisted: a pod event came, so the pods' informer is delivering again
// after a break; the batch's hold for it ends (the event's own trigger, if
// any, and those of the pods behind it, keep it open while they come),
// while another kind's relistWait, if one broke too, goes on.
func (f *storeFeed) podRelisted() {
	if f.relisting.CompareAndSwap(true, false) {
		f.batch.Release()
	}
}

// informerHandler is a handler for one kind's informer, named for the
// sync gate.
type informerHandler struct {
	name string
	obj  client.Object
	h    toolscache.ResourceEventHandler
}

// watch registers a handler on each informer the decisions read, and
// each handler's sync with the gate.
func (f *storeFeed) watch(ctx context.Context, informers cache.Informers) error {
	handlers := []informerHandler{
		{"Pods", &corev1.Pod{}, objectHandler(f.podChanged, func(p *corev1.Pod) { f.podRelisted(); f.store.DeletePod(p.Namespace, p.Name) })},
		// A Node or NodeClaim that goes may leave pods without the room
		// planned for them: provisioning looks again.
		{"Nodes", &corev1.Node{}, objectHandler(f.store.SetNode, func(n *corev1.Node) { f.store.DeleteNode(n.Name); f.batch.Trigger() })},
		{"NodeClaims", &v1.NodeClaim{}, objectHandler(f.store.SetNodeClaim, func(nc *v1.NodeClaim) {
			f.store.DeleteNodeClaim(nc.Name)
			f.batch.Trigger()
			if f.claimGone != nil {
				f.claimGone()
			}
		})},
		{"NodePools", &v1.NodePool{}, anyChange(f.offeringsChanged)},
		{"DaemonSets", &appsv1.DaemonSet{}, f.relist(ctx, f.syncDaemonSets)},
		{"PodDisruptionBudgets", &policyv1.PodDisruptionBudget{}, f.relist(ctx, f.syncPDBs)},
		// Volumes pin the zones their pods' nodes may be in.
		{"PersistentVolumeClaims", &corev1.PersistentVolumeClaim{}, objectHandler(f.store.SetPersistentVolumeClaim, func(pvc *corev1.PersistentVolumeClaim) {
			f.store.DeletePersistentVolumeClaim(pvc.Namespace, pvc.Name)
		})},
		{"PersistentVolumes", &corev1.PersistentVolume{}, objectHandler(f.store.SetPersistentVolume, func(pv *corev1.PersistentVolume) { f.store.DeletePersistentVolume(pv.Name) })},
		{"StorageClasses", &storagev1.StorageClass{}, objectHandler(f.store.SetStorageClass, func(sc *storagev1.StorageClass) { f.store.DeleteStorageClass(sc.Name) })},
	}
	if f.nodeOverlays {
		handlers = append(handlers, informerHandler{"NodeOverlays", &v1alpha1.NodeOverlay{}, anyChange(f.offeringsChanged)})
	}
	if f.dra {
		// Device claims decide where their pods can run: a change may
		// give a pending pod room.
		handlers = append(handlers,
			informerHandler{"ResourceClaims", &resourceapi.ResourceClaim{}, objectHandler(triggered(f.batch, f.store.SetResourceClaim), func(c *resourceapi.ResourceClaim) {
				f.store.DeleteResourceClaim(c.Namespace, c.Name)
				f.batch.Trigger()
			})},
			informerHandler{"ResourceClaimTemplates", &resourceapi.ResourceClaimTemplate{}, objectHandler(f.store.SetResourceClaimTemplate, func(t *resourceapi.ResourceClaimTemplate) {
				f.store.DeleteResourceClaimTemplate(t.Namespace, t.Name)
			})},
			informerHandler{"DeviceClasses", &resourceapi.DeviceClass{}, objectHandler(triggered(f.batch, f.store.SetDeviceClass), func(c *resourceapi.DeviceClass) { f.store.DeleteDeviceClass(c.Name) })},
			informerHandler{"ResourceSlices", &resourceapi.ResourceSlice{}, objectHandler(triggered(f.batch, f.store.SetResourceSlice), func(s *resourceapi.ResourceSlice) { f.store.DeleteResourceSlice(s.Name) })})
	}
	if f.buffers != nil {
		wake := anyChange(f.buffers.changed)
		handlers = append(handlers, informerHandler{"CapacityBuffers", &v1beta1.CapacityBuffer{}, wake},
			informerHandler{"PodTemplates", &corev1.PodTemplate{}, wake}, informerHandler{"Deployments", &appsv1.Deployment{}, wake},
			informerHandler{"StatefulSets", &appsv1.StatefulSet{}, wake}, informerHandler{"ReplicaSets", &appsv1.ReplicaSet{}, wake})
	}
	if len(f.spreadDefaults) > 0 {
		log.FromContext(ctx).Info("scheduler-config: applying default topology spread constraints to pods that declare none", "defaultConstraints", f.spreadDefaults)
		f.spread = &spreadSelectors{reader: f.reader}
		f.store.SetSpreadDefaults(state.SpreadDefaults{Constraints: f.spreadDefaults, Selector: f.spread.selector})
		handlers = append(handlers, spreadHandlers(f.spread, f.store)...)
	}
	for _, h := range handlers {
		inf, err := informers.GetInformer(ctx, h.obj)
		if _, overlay := h.obj.(*v1alpha1.NodeOverlay); overlay && meta.IsNoMatchError(err) {
			return fmt.Errorf("the NodeOverlay feature gate is on but the cluster does not serve karpenter.sh/v1alpha1 NodeOverlay: install its CRD (charts/joiner/crds/karpenter.sh_nodeoverlays.yaml) or turn the gate off: %w", err)
		}
		if _, claim := h.obj.(*resourceapi.ResourceClaim); claim && meta.IsNoMatchError(err) {
			return fmt.Errorf("--ignore-dra-requests=false, but the cluster does not serve resource.k8s.io/v1 (Kubernetes 1.34 and later do): leave device claims ignored (--ignore-dra-requests=true) or upgrade: %w", err)
		}
		if _, buf := h.obj.(*v1beta1.CapacityBuffer); buf && meta.IsNoMatchError(err) {
			return fmt.Errorf("the CapacityBuffer feature gate is on but the cluster does not serve autoscaling.x-k8s.io/v1beta1 CapacityBuffer: install its CRD (charts/joiner/crds/autoscaling.x-k8s.io_capacitybuffers.yaml) or turn the gate off: %w", err)
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
		f.gate.add(h.name, reg.HasSynced)
	}
	return nil
}

// triggered is set, then b woken.
func triggered[T any](b *Batcher, set func(T)) func(T) {
	return func(o T) {
		set(o)
		b.Trigger()
	}
}

// podChanged records a pod: a pod kube-scheduler found no room for starts
// (or extends) a provisioning batch, and a pod seen turning Running is
// timed from its creation for karpenter_pods_startup_duration_seconds.
//
// Upstream wakes provisioning on every write to such a pod. Joiner's
// decisions take a pod kube-scheduler has not reached within
// SchedulerBacklog as if it had found no room (its backlog running out
// wakes provisioning: provisioner.wakeForBacklog), so kube-scheduler's
// first verdict on such a pod adds nothing and wakes nothing: a
// scale-out's verdicts, coming for seconds after its pods were all
// provisionable, held the batch open to its 10 s limit (a 1,000-pod
// scale-out's first pass came at 10.1 s, its last pod created at 3.1 s).
// A verdict again (kube-scheduler tried once more and found no room)
// wakes it as upstream's does. A new pod kube-scheduler has not tried
// starts (or extends) a batch: the batch ends a batch's idle window after
// the burst's last pod, when the burst's pods are provisionable
// (state.Store.SetSchedulerBacklog's quiet is that window); before, a
// 1,000-pod scale-out's first pass came at 8.0 s, its last pod created at
// 3.1 s.
func (f *storeFeed) podChanged(p *corev1.Pod) {
	f.podRelisted()
	old := f.store.Pod(p.Namespace, p.Name)
	f.store.SetPod(p)
	if !f.quietFirstVerdicts {
		if state.Provisionable(p, state.WaitForScheduler) {
			f.batch.Trigger()
		}
	} else if old == nil && f.store.AwaitsVerdict(p) {
		f.batch.Trigger() // a burst's pod arrived
	} else if f.store.IsProvisionable(p) { // a verdict, or the backlog run out
		firstVerdictOnBacklog := old != nil && !state.Provisionable(old, state.WaitForScheduler) && f.store.IsProvisionable(old)
		if !firstVerdictOnBacklog {
			f.batch.Trigger()
		}
	}
	if old != nil && old.Spec.NodeName == "" && p.Spec.NodeName != "" && f.bindings != nil {
		f.bindings.bound(p.Spec.NodeName, f.clock.Now())
	}
	if old != nil && old.Status.Phase != corev1.PodRunning && p.Status.Phase == corev1.PodRunning {
		podStartup.Observe(f.clock.Since(p.CreationTimestamp.Time).Seconds())
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

// anyChange calls f on every add, update and delete.
func anyChange(f func()) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { f() }, UpdateFunc: func(_, _ any) { f() }, DeleteFunc: func(any) { f() }}
}

// relist calls sync, after any change of its kind, with the informer's
// whole list: DaemonSets and PDBs are few.
func (f *storeFeed) relist(ctx context.Context, sync func(context.Context, client.Reader) error) toolscache.ResourceEventHandler {
	return anyChange(func() {
		if err := sync(ctx, f.reader); err != nil {
			logError(ctx, err, "refreshing state")
		}
	})
}

// complete reads the relisted kinds once more, once every handler has had
// its informer's whole list, and declares the volumes complete: the sync
// gate's last step before the offerings.
func (f *storeFeed) complete(ctx context.Context) error {
	if err := errors.Join(f.syncDaemonSets(ctx, f.reader), f.syncPDBs(ctx, f.reader)); err != nil {
		return err
	}
	// Every claim, volume and StorageClass there is has reached the Store:
	// one it has not seen holds its pods back, as upstream's.
	f.store.SetVolumesComplete(true)
	// Every Service and pod controller has reached the cache: each pod's
	// default spread selector can be deduced.
	if f.spread != nil {
		f.spread.ready.Store(true)
		f.spread.forget()
		f.store.Respread()
	}
	return nil
}

func (f *storeFeed) syncDaemonSets(ctx context.Context, r client.Reader) error {
	var list appsv1.DaemonSetList
	if err := r.List(ctx, &list); err != nil {
		return err
	}
	f.store.SetDaemonSets(pointers(list.Items))
	return nil
}

func (f *storeFeed) syncPDBs(ctx context.Context, r client.Reader) error {
	var list policyv1.PodDisruptionBudgetList
	if err := r.List(ctx, &list); err != nil {
		return err
	}
	f.store.SetPDBs(pointers(list.Items))
	return nil
}
