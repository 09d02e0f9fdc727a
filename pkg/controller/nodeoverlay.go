package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/overlay"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// NodeOverlays (upstream's NodeOverlay feature gate): the controller reads
// every NodeOverlay, applies them to each NodePool's instance types before
// the Store gets them (offerings.set), so provisioning and disruption
// decide with the overlaid prices and capacity, and writes each overlay's
// ValidationSucceeded and Ready conditions: False, reason Conflict or
// RuntimeValidation, when it was refused (package overlay says which
// holds where several select the same offering). A claim whose instance
// types an overlay changed names the overlays in its
// joiner.sh/nodeoverlays-applied annotation.

// overlays is what the offerings last applied of the NodeOverlays. It is
// safe for concurrent use; a nil *overlays (the gate off) applies nothing.
type overlays struct {
	mode   overlay.Mode
	aware  OverlayAware // the provider's capability, or nil
	status overlayStatus

	mu     sync.Mutex
	list   []*v1alpha1.NodeOverlay
	result *overlay.Result
}

// newOverlays applies overlays in the policy's merge mode.
func newOverlays(policy provisioning.Policy, aware OverlayAware, status overlayStatus) *overlays {
	return &overlays{mode: policy.OverlayMode(), aware: aware, status: status}
}

// setList is the NodeOverlays the next apply applies.
func (o *overlays) setList(list []*v1alpha1.NodeOverlay) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.list = list
}

// apply returns its with the overlays applied, and tells an overlay-aware
// provider the result.
func (o *overlays) apply(pools []*v1.NodePool, its map[string][]*cloudprovider.InstanceType) map[string][]*cloudprovider.InstanceType {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.result = overlay.Apply(pools, its, o.list, o.mode)
	if o.aware != nil {
		o.aware.SetNodeOverlays(o.result)
	}
	return o.result.InstanceTypes
}

// writeStatuses sets each overlay's conditions from the last apply.
func (o *overlays) writeStatuses(ctx context.Context) error {
	o.mu.Lock()
	list, res := o.list, o.result
	o.mu.Unlock()
	return o.status.write(ctx, list, res)
}

// annotate names, on a claim about to be created, the overlays that
// changed its instance types.
func (o *overlays) annotate(nc *v1.NodeClaim, plan *provisioning.NodeClaimPlan) {
	if o == nil {
		return
	}
	o.mu.Lock()
	res := o.result
	o.mu.Unlock()
	if res == nil {
		return
	}
	names := res.Behind(plan.NodePool.Name, plan.InstanceTypes)
	if len(names) == 0 {
		return
	}
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[v1alpha1.AppliedAnnotationKey] = strings.Join(names, ",")
}

// overlayStatus writes the NodeOverlays' conditions.
type overlayStatus struct {
	client client.Client
	events recorder
}

// write sets each overlay's conditions from res, the Apply of list.
func (s overlayStatus) write(ctx context.Context, list []*v1alpha1.NodeOverlay, res *overlay.Result) error {
	if res == nil {
		return nil
	}
	var errs []error
	for _, o := range list {
		st, ok := res.Status(o.Name)
		if !ok {
			continue
		}
		cond := metav1.Condition{Type: v1alpha1.ConditionValidationSucceeded, Status: metav1.ConditionTrue, Reason: "Valid", ObservedGeneration: o.Generation,
			Message: fmt.Sprintf("applies to %d (NodePool, instance type) pairs", st.Selected)}
		if !st.Valid {
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, st.Reason, st.Message
		}
		ready := cond
		ready.Type = v1alpha1.ConditionReady
		if st.Valid {
			ready.Reason = "Ready"
		}
		updated := o.DeepCopy()
		meta.SetStatusCondition(&updated.Status.Conditions, cond)
		meta.SetStatusCondition(&updated.Status.Conditions, ready)
		if equality.Semantic.DeepEqual(updated.Status, o.Status) {
			continue
		}
		if err := s.client.Status().Patch(ctx, updated, client.MergeFromWithOptions(o, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("NodeOverlay %s: %w", o.Name, err))
			continue
		}
		if !st.Valid {
			s.events.event(updated, nil, corev1.EventTypeWarning, st.Reason, "%s", st.Message)
		}
	}
	return errors.Join(errs...)
}
