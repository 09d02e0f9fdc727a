package controller

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// claimCreator creates the NodeClaims the engine plans (provisioning,
// static NodePools, disruption's replacements).
type claimCreator struct {
	client   client.Client
	store    *state.Store
	overlays *overlays // nil unless the NodeOverlay gate is on
}

// create creates plan's claim and puts it in the Store at once, so the
// next pass counts it before its informer event arrives; reason is its
// karpenter_nodeclaims_created_total reason.
func (c claimCreator) create(ctx context.Context, plan *provisioning.NodeClaimPlan, reason string) (*v1.NodeClaim, error) {
	return c.createIn(ctx, plan, reason, "")
}

// createIn is create for a claim of the launch cohort named cohort ("":
// none; see state.AnnotationLaunchCohort).
func (c claimCreator) createIn(ctx context.Context, plan *provisioning.NodeClaimPlan, reason, cohort string) (*v1.NodeClaim, error) {
	nc := state.NewNodeClaim(plan, "", metav1.Time{})
	state.SetCohort(nc, cohort)
	c.overlays.annotate(nc, plan)
	if err := c.client.Create(ctx, nc); err != nil {
		return nil, err
	}
	c.store.AddNodeClaim(nc)
	nodeClaimsCreated.WithLabelValues(plan.NodePool.Name, reason).Inc()
	return nc, nil
}
