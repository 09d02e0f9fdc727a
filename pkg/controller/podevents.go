package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
)

// podEvents is the nodeclaim.podevents reconciler, upstream's: when a pod
// is bound to a node, or goes terminating or terminal there, the node's
// NodeClaim records the time in status.lastPodEventTime. A node's
// consolidateAfter counts from it, and a consolidation moves no pod onto
// a node still inside that window: without it a node that has just taken
// pods is a candidate again at once.
//
// Upstream also reconciles every pod the informer lists at start, so a
// restart begins every node's consolidateAfter anew; Joiner reacts to
// changes of a pod only, so a restart does not put consolidation off.
type podEvents struct {
	client client.Client
	clock  clock.PassiveClock
}

// podEventPredicate passes the pod updates that are pod events: bound,
// terminal or terminating, each the first time.
var podEventPredicate = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*corev1.Pod)
		cur, okCur := e.ObjectNew.(*corev1.Pod)
		if !okOld || !okCur {
			return false
		}
		bound := old.Spec.NodeName == "" && cur.Spec.NodeName != ""
		terminal := cur.Spec.NodeName != "" && !podutil.IsTerminal(old) && podutil.IsTerminal(cur)
		terminating := cur.Spec.NodeName != "" && old.DeletionTimestamp == nil && cur.DeletionTimestamp != nil
		return bound || terminal || terminating
	},
}

func (r *podEvents) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := r.client.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if pod.Spec.NodeName == "" || podutil.IsDaemonSetPod(pod) {
		return reconcile.Result{}, nil
	}
	node := &corev1.Node{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	claims, err := claimsOfNode(ctx, r.client, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(claims) != 1 { // not Joiner's node, or one it cannot tell the claim of
		return reconcile.Result{}, nil
	}
	nc := &claims[0]
	at, changed := disruption.PodEvent(nc.Status.LastPodEventTime.Time, r.clock.Now())
	if !changed {
		return reconcile.Result{}, nil
	}
	stored := nc.DeepCopy()
	nc.Status.LastPodEventTime = metav1.NewTime(at)
	return reconcile.Result{}, client.IgnoreNotFound(r.client.Status().Patch(ctx, nc, client.MergeFrom(stored)))
}
