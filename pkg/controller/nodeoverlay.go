package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
// the Store gets them (setOfferings), so provisioning and disruption
// decide with the overlaid prices and capacity, and writes each overlay's
// ValidationSucceeded and Ready conditions: False, reason Conflict or
// RuntimeValidation, when it was refused (package overlay says which
// holds where several select the same offering). A claim whose instance
// types an overlay changed names the overlays in its
// joiner.sh/nodeoverlays-applied annotation.

// overlayAware is a cloud provider that launches by the overlaid prices
// (the AWS provider: a prioritized fleet, as upstream's).
type overlayAware interface {
	SetNodeOverlays(*overlay.Result)
}

// overlayState is what setOfferings applied, guarded by offeringsMu.
type overlayState struct {
	list   []*v1alpha1.NodeOverlay
	result *overlay.Result
}

// applyOverlays is setOfferings' step: its with the overlays applied.
// offeringsMu must be held.
func (c *Controller) applyOverlays(pools []*v1.NodePool, its map[string][]*cloudprovider.InstanceType) map[string][]*cloudprovider.InstanceType {
	if !c.opts.NodeOverlay {
		return its
	}
	mode := overlay.HighestWeight
	if c.opts.Decisions == provisioning.DecisionsKarpenter {
		mode = overlay.UpstreamMerge
	}
	c.overlays.result = overlay.Apply(pools, its, c.overlays.list, mode)
	if oa, ok := c.opts.CloudProvider.(overlayAware); ok {
		oa.SetNodeOverlays(c.overlays.result)
	}
	return c.overlays.result.InstanceTypes
}

// writeOverlayStatuses sets each overlay's conditions from the last Apply.
func (c *Controller) writeOverlayStatuses(ctx context.Context) error {
	c.offeringsMu.Lock()
	list, res := c.overlays.list, c.overlays.result
	c.offeringsMu.Unlock()
	if res == nil {
		return nil
	}
	var errs []error
	for _, o := range list {
		s, ok := res.Status(o.Name)
		if !ok {
			continue
		}
		cond := metav1.Condition{Type: v1alpha1.ConditionValidationSucceeded, Status: metav1.ConditionTrue, Reason: "Valid", ObservedGeneration: o.Generation,
			Message: fmt.Sprintf("applies to %d (NodePool, instance type) pairs", s.Selected)}
		if !s.Valid {
			cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, s.Reason, s.Message
		}
		ready := cond
		ready.Type = v1alpha1.ConditionReady
		if s.Valid {
			ready.Reason = "Ready"
		}
		updated := o.DeepCopy()
		meta.SetStatusCondition(&updated.Status.Conditions, cond)
		meta.SetStatusCondition(&updated.Status.Conditions, ready)
		if equality.Semantic.DeepEqual(updated.Status, o.Status) {
			continue
		}
		if err := c.client.Status().Patch(ctx, updated, client.MergeFromWithOptions(o, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("NodeOverlay %s: %w", o.Name, err))
			continue
		}
		if !s.Valid {
			c.event(updated, nil, corev1.EventTypeWarning, s.Reason, "%s", s.Message)
		}
	}
	return errors.Join(errs...)
}

// annotateOverlays names, on a claim about to be created, the overlays
// that changed its instance types.
func (c *Controller) annotateOverlays(nc *v1.NodeClaim, plan *provisioning.NodeClaimPlan) {
	if !c.opts.NodeOverlay {
		return
	}
	c.offeringsMu.Lock()
	res := c.overlays.result
	c.offeringsMu.Unlock()
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
