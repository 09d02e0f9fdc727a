package controller

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// repairEvery is how often node repair looks: the cloud provider's
// tolerations are minutes long (30 min for a Node not Ready on AWS).
const repairEvery = 30 * time.Second

// repairer replaces nodes unhealthy past the cloud provider's repair
// policies (the NodeRepair feature gate).
type repairer struct {
	gate     *syncGate
	client   client.Client
	store    *state.Store
	policies func() []cloudprovider.RepairPolicy // the provider's RepairPolicies
	events   recorder
	clock    clock.WithTicker
}

// loop runs node repair every repairEvery until ctx ends.
func (r *repairer) loop(ctx context.Context) error {
	return every(ctx, r.gate, r.clock, repairEvery, "repairing nodes", func(ctx context.Context) error {
		_, err := r.repair(ctx)
		return err
	})
}

// repair is Controller.Repair.
func (r *repairer) repair(ctx context.Context) ([]string, error) {
	if !r.gate.synced() {
		return nil, ErrNotSynced
	}
	ctx = withController(ctx, "node.health")
	d := disruption.Repairs(r.store.DisruptionSnapshot(r.clock.Now(), nil), r.policies())
	var deleted []string
	var errs []error
	for _, rep := range d.Replace {
		nc := rep.Candidate.NodeClaim
		if nc == nil {
			continue
		}
		log.FromContext(ctx).Info("repairing an unhealthy node: deleting its NodeClaim", "nodeclaim", nc.Name, "node", rep.Candidate.Node.Name,
			"condition", string(rep.Condition.Type), "status", string(rep.Condition.Status), "since", rep.Condition.LastTransitionTime.Time)
		r.events.event(nc, nil, corev1.EventTypeWarning, "NodeRepair", "Node %s has had condition %s=%s since %s, past the %s toleration: replacing it",
			rep.Candidate.Node.Name, rep.Condition.Type, rep.Condition.Status, rep.Condition.LastTransitionTime.UTC().Format(time.RFC3339), rep.Policy.TolerationDuration)
		if err := r.client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
			continue
		}
		countDisrupted(nc, snakeCase(disruption.ReasonUnhealthy), "", len(rep.Candidate.Reschedulable))
		deleted = append(deleted, nc.Name)
	}
	for _, h := range d.Held {
		for _, np := range r.store.ProvisioningSnapshot().NodePools {
			if np.Name == h.NodePool {
				r.events.event(np, nil, corev1.EventTypeWarning, "NodeRepairBlocked", "%s", h.Reason())
			}
		}
	}
	return deleted, errors.Join(errs...)
}
