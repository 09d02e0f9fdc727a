package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// resourceNodes is the node count among a NodePool's status.resources.
const resourceNodes corev1.ResourceName = "nodes"

// NodePoolHashVersion names the scheme of the template hash Joiner writes
// to karpenter.sh/nodepool-hash: claims hashed under another scheme are
// not compared for drift.
const NodePoolHashVersion = "joiner-v1"

// NodePool condition types, as upstream's.
const (
	ConditionReady               = "Ready"
	ConditionValidationSucceeded = "ValidationSucceeded"
	ConditionNodeClassReady      = "NodeClassReady"
)

// nodePoolStatus is the nodepool.status reconciler.
type nodePoolStatus struct {
	gate   *syncGate
	client client.Client
	cloud  CloudProvider // metered: its instance types say whether a pool is Ready
}

// reconcile keeps a NodePool's template hash annotation (what
// drift compares its claims with) and its status: the nodes it has, the
// capacity they add up to (what its limits count), and its conditions —
// Ready when it validated and the cloud offers it instance types.
func (r *nodePoolStatus) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if !r.gate.synced() {
		return reconcile.Result{RequeueAfter: time.Second}, nil // counted from a partial list, its status would be wrong
	}
	ctx = withController(ctx, "nodepool.status")
	np := &v1.NodePool{}
	if err := r.client.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if hash := disruption.TemplateHash(np); np.Annotations[v1.AnnotationNodePoolHash] != hash || np.Annotations[v1.AnnotationNodePoolHashVersion] != NodePoolHashVersion {
		if np.Annotations == nil {
			np.Annotations = map[string]string{}
		}
		np.Annotations[v1.AnnotationNodePoolHash] = hash
		np.Annotations[v1.AnnotationNodePoolHashVersion] = NodePoolHashVersion
		return reconcile.Result{}, r.client.Update(ctx, np) // its event brings us back for the status
	}
	status := np.Status.DeepCopy()
	// From the informer's cache, which the event that woke us is in; read
	// only, so not copied: every NodeClaim event lists the pool's claims,
	// and their copies were a fifth of what the controller had allocated
	// by the end of the 5,000-pod benchmark's scale-in (1.4 of 7.2 GB).
	var claims v1.NodeClaimList
	if err := r.client.List(ctx, &claims, client.MatchingLabels{v1.LabelNodePool: np.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	nodes := int64(len(claims.Items))
	var capacity []corev1.ResourceList
	for i := range claims.Items {
		capacity = append(capacity, claims.Items[i].Status.Capacity)
	}
	status.Nodes = &nodes
	status.Resources = scheduling.Add(capacity...)
	// As upstream, the node count is one of the resources too (and so a
	// karpenter_nodepools_usage series).
	status.Resources[resourceNodes] = *resource.NewQuantity(nodes, resource.DecimalSI)
	for name, q := range status.Resources {
		nodePoolUsage.WithLabelValues(np.Name, string(name)).Set(q.AsApproximateFloat64())
	}
	for name, q := range np.Spec.Limits {
		nodePoolLimit.WithLabelValues(np.Name, string(name)).Set(q.AsApproximateFloat64())
	}
	gen := np.Generation
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: ConditionValidationSucceeded, Status: metav1.ConditionTrue, Reason: "Valid", ObservedGeneration: gen,
		Message: "the API server's schema and CEL rules accepted it"})
	its, err := r.cloud.GetInstanceTypes(ctx, np)
	classReady := metav1.Condition{Type: ConditionNodeClassReady, Status: metav1.ConditionTrue, Reason: "Ready", ObservedGeneration: gen}
	if err != nil || len(its) == 0 {
		why := "no instance type of the cloud satisfies its requirements"
		if err != nil {
			why = err.Error()
		}
		classReady = metav1.Condition{Type: ConditionNodeClassReady, Status: metav1.ConditionFalse, Reason: "NoInstanceTypes", Message: why, ObservedGeneration: gen}
	}
	meta.SetStatusCondition(&status.Conditions, classReady)
	ready := metav1.Condition{Type: ConditionReady, Status: classReady.Status, Reason: classReady.Reason, Message: classReady.Message, ObservedGeneration: gen}
	if ready.Status == metav1.ConditionTrue {
		ready.Message = fmt.Sprintf("%d instance types to launch", len(its))
	}
	meta.SetStatusCondition(&status.Conditions, ready)
	if equality.Semantic.DeepEqual(status, &np.Status) {
		return reconcile.Result{}, nil
	}
	orig := np.DeepCopy()
	np.Status = *status
	return reconcile.Result{}, r.client.Status().Patch(ctx, np, client.MergeFrom(orig)) // the status is Joiner's alone
}

// poolOfClaim maps a NodeClaim event to its NodePool's request.
func poolOfClaim(_ context.Context, o client.Object) []reconcile.Request {
	if pool := o.GetLabels()[v1.LabelNodePool]; pool != "" {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pool}}}
	}
	return nil
}
