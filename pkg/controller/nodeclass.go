package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// ConditionCapacityReservationsReady is an EC2NodeClass's condition that
// its capacityReservationSelectorTerms resolved (upstream's name).
const ConditionCapacityReservationsReady = "CapacityReservationsReady"

// FinalizerNodeClass holds an EC2NodeClass until its NodeClaims are gone
// and what the provider made for it is removed: upstream's name.
const FinalizerNodeClass = "karpenter.k8s.aws/termination"

// nodeClassResync is how often a NodeClass is resolved again although it
// did not change: the cloud's side (a new AMI behind an alias, a subnet
// tagged) changes without an event.
const nodeClassResync = 5 * time.Minute

// nodeClassStatus is the nodeclass.status reconciler, for a provider
// that resolves EC2NodeClasses.
type nodeClassStatus struct {
	client    client.Client
	events    recorder
	resolver  NodeClassResolver  // the provider's capability
	finalizer NodeClassFinalizer // the provider's capability, or nil
	// changed says the instance types must be asked for again (and wakes
	// provisioning): what a class resolves to decides what its pools offer.
	changed func()
}

// register adds the reconciler to mgr; mgr's scheme must know
// karpenter.k8s.aws/v1.
func (r *nodeClassStatus) register(mgr manager.Manager, restartable bool) error {
	return builder.ControllerManagedBy(mgr).Named("nodeclass.status").For(&awsv1.EC2NodeClass{}).
		WithOptions(crcontroller.Options{SkipNameValidation: &restartable}).
		Watches(&v1.NodePool{}, handler.EnqueueRequestsFromMapFunc(classOfPool)).
		Complete(reconcile.Func(r.reconcile))
}

// reconcile resolves an EC2NodeClass and writes the result: the
// resolved resources and Ready True, or Ready False with the resolver's
// error (which names the selector and the fix) and the last good
// resources kept, so running nodes are not taken for drifted by a passing
// API failure. A change of what a NodeClass resolves to changes the
// instance types its NodePools offer (zones, architectures): they are
// asked for again.
func (r *nodeClassStatus) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ctx = withController(ctx, "nodeclass.status")
	nc := &awsv1.EC2NodeClass{}
	if err := r.client.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if r.finalizer != nil {
		if nc.DeletionTimestamp != nil {
			return r.finalize(ctx, nc)
		}
		if controllerutil.AddFinalizer(nc, FinalizerNodeClass) {
			return reconcile.Result{}, r.client.Update(ctx, nc) // its event brings us back
		}
	}
	resolved, resolveErr := r.resolver.ResolveNodeClass(ctx, nc)
	status := nc.Status.DeepCopy()
	ready := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", ObservedGeneration: nc.Generation,
		Message: "subnets, security groups, AMIs and instance profile resolved"}
	if resolveErr != nil {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "ResolutionFailed", resolveErr.Error()
	} else {
		conds := status.Conditions
		*status = resolved
		status.Conditions = conds
	}
	meta.SetStatusCondition(&status.Conditions, ready)
	if len(nc.Spec.CapacityReservationSelectorTerms) > 0 {
		meta.SetStatusCondition(&status.Conditions, reservationsReady(nc, resolveErr, len(resolved.CapacityReservations)))
	}
	if !equality.Semantic.DeepEqual(status, &nc.Status) {
		orig := nc.DeepCopy()
		nc.Status = *status
		if err := r.client.Status().Patch(ctx, nc, client.MergeFrom(orig)); err != nil {
			return reconcile.Result{}, err
		}
		if resolveErr == nil {
			// The pools' instance types depend on what their class
			// resolved to: the next pass asks for them again.
			r.changed()
		}
	}
	if resolveErr != nil {
		logError(ctx, resolveErr, "resolving EC2NodeClass "+nc.Name)
		return reconcile.Result{RequeueAfter: time.Minute}, nil
	}
	return reconcile.Result{RequeueAfter: nodeClassResync}, nil
}

// reservationsReady is the class's CapacityReservationsReady condition, as
// upstream's provider sets it: False when its reservations did not
// resolve (Ready is False then too), else True.
func reservationsReady(nc *awsv1.EC2NodeClass, resolveErr error, n int) metav1.Condition {
	c := metav1.Condition{Type: ConditionCapacityReservationsReady, Status: metav1.ConditionTrue, Reason: "CapacityReservationsReady", ObservedGeneration: nc.Generation,
		Message: fmt.Sprintf("%d capacity reservation(s) selected", n)}
	if cloudprovider.IsCapacityReservationsError(resolveErr) {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, "CapacityReservationsNotResolved", resolveErr.Error()
	}
	return c
}

// finalize lets a deleted EC2NodeClass go once no NodeClaim
// uses it (their instances need its launch templates and profile until
// they are terminated) and the provider has removed what it made for it.
func (r *nodeClassStatus) finalize(ctx context.Context, nc *awsv1.EC2NodeClass) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(nc, FinalizerNodeClass) {
		return reconcile.Result{}, nil
	}
	var claims v1.NodeClaimList
	if err := r.client.List(ctx, &claims); err != nil {
		return reconcile.Result{}, err
	}
	var using []string
	for _, claim := range claims.Items {
		if ref := claim.Spec.NodeClassRef; ref != nil && ref.Kind == "EC2NodeClass" && ref.Name == nc.Name {
			using = append(using, claim.Name)
		}
	}
	if len(using) > 0 {
		r.events.event(nc, nil, corev1.EventTypeNormal, "WaitingOnNodeClaimTermination", "EC2NodeClass %s waits for %d NodeClaim(s) to terminate: %s",
			nc.Name, len(using), strings.Join(using, ", "))
		return reconcile.Result{RequeueAfter: 10 * time.Second}, nil
	}
	if err := r.finalizer.FinalizeNodeClass(ctx, nc); err != nil {
		return reconcile.Result{}, fmt.Errorf("removing what EC2NodeClass %s had in the cloud: %w", nc.Name, err)
	}
	orig := nc.DeepCopy()
	controllerutil.RemoveFinalizer(nc, FinalizerNodeClass)
	return reconcile.Result{}, client.IgnoreNotFound(r.client.Patch(ctx, nc, client.MergeFrom(orig)))
}

// classOfPool maps a NodePool event to its EC2NodeClass's request, so a
// new pool finds its class resolved.
func classOfPool(_ context.Context, o client.Object) []reconcile.Request {
	np, ok := o.(*v1.NodePool)
	if !ok || np.Spec.Template.Spec.NodeClassRef == nil || np.Spec.Template.Spec.NodeClassRef.Kind != "EC2NodeClass" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: np.Spec.Template.Spec.NodeClassRef.Name}}}
}
