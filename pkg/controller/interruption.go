package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// interruptionLoop handles the cloud's interruption notices until ctx
// ends (the leader's alone, like every loop of the manager's).
func (c *Controller) interruptionLoop(notices <-chan cloudprovider.Interruption) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx = withController(ctx, "interruption")
		for {
			select {
			case <-ctx.Done():
				return nil
			case n := <-notices:
				if err := c.Interrupted(ctx, n); err != nil {
					logError(ctx, err, "handling an interruption notice")
					continue
				}
				if n.Handled != nil {
					n.Handled()
				}
			}
		}
	}
}

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
	var claim *v1.NodeClaim
	for _, node := range c.store.Nodes() {
		if node.NodeClaim != nil && node.NodeClaim.Status.ProviderID == n.ProviderID {
			claim = node.NodeClaim
		}
	}
	if claim == nil || claim.DeletionTimestamp != nil {
		return nil
	}
	if !n.Kind.Disrupts() {
		c.event(claim, nil, corev1.EventTypeNormal, string(n.Kind), "%s: the cloud recommends rebalancing instance %s (no action, as upstream)", n.Kind, n.ProviderID)
		return nil
	}
	log.FromContext(ctx).Info("deleting an interrupted NodeClaim", "nodeclaim", claim.Name, "kind", string(n.Kind))
	c.event(claim, nil, corev1.EventTypeWarning, string(n.Kind), "%s: instance %s goes away; draining its node", n.Kind, n.ProviderID)
	if err := c.client.Delete(ctx, claim); err != nil {
		return client.IgnoreNotFound(err)
	}
	nodeClaimsDisrupted.WithLabelValues(claim.Labels[v1.LabelNodePool], snakeCase(string(n.Kind)), claim.Labels[v1.LabelCapacityType]).Inc()
	return nil
}
