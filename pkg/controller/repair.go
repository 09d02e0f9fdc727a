package controller

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/joiner-autoscaler/joiner/pkg/disruption"
)

// repairEvery is how often node repair looks: the cloud provider's
// tolerations are minutes long (30 min for a Node not Ready on AWS).
const repairEvery = 30 * time.Second

// repairLoop runs node repair every repairEvery until ctx ends.
func (c *Controller) repairLoop(ctx context.Context) error {
	return c.every(ctx, repairEvery, "repairing nodes", func(ctx context.Context) error {
		_, err := c.Repair(ctx)
		return err
	})
}

// Repair runs node repair once, as upstream's node health controller
// (behind its NodeRepair feature gate): the NodeClaim of each node whose
// condition has matched one of the cloud provider's repair policies past
// its toleration is deleted — its node drained and replaced as any deleted
// claim's — unless more than 20 % of its NodePool's nodes are unhealthy,
// which an Event on the NodePool says. It returns the claims deleted.
func (c *Controller) Repair(ctx context.Context) ([]string, error) {
	if !c.gate.synced() {
		return nil, ErrNotSynced
	}
	ctx = withController(ctx, "node.health")
	d := disruption.Repairs(c.store.DisruptionCluster(c.opts.Clock.Now(), nil), c.cloud.RepairPolicies())
	var deleted []string
	var errs []error
	for _, r := range d.Replace {
		nc := r.Candidate.NodeClaim
		if nc == nil {
			continue
		}
		log.FromContext(ctx).Info("repairing an unhealthy node: deleting its NodeClaim", "nodeclaim", nc.Name, "node", r.Candidate.Node.Name,
			"condition", string(r.Condition.Type), "status", string(r.Condition.Status), "since", r.Condition.LastTransitionTime.Time)
		c.event(nc, nil, corev1.EventTypeWarning, "NodeRepair", "Node %s has had condition %s=%s since %s, past the %s toleration: replacing it",
			r.Candidate.Node.Name, r.Condition.Type, r.Condition.Status, r.Condition.LastTransitionTime.UTC().Format(time.RFC3339), r.Policy.TolerationDuration)
		if err := c.client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
			continue
		}
		nodeClaimsDisrupted.WithLabelValues(r.Candidate.NodePool, snakeCase(disruption.ReasonUnhealthy), r.Candidate.CapacityType).Inc()
		deleted = append(deleted, nc.Name)
	}
	for _, h := range d.Held {
		for _, np := range c.store.ProvisioningSnapshot().NodePools {
			if np.Name == h.NodePool {
				c.event(np, nil, corev1.EventTypeWarning, "NodeRepairBlocked", "%s", h.Reason())
			}
		}
	}
	return deleted, errors.Join(errs...)
}
