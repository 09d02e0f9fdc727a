package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/decide"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// provisioner turns the Store's pending pods into NodeClaims, a batch at a
// time.
type provisioner struct {
	gate      *syncGate
	batch     *Batcher
	store     *state.Store
	offerings *offerings
	decider   *decide.Decider
	claims    claimCreator
	events    recorder
	clock     clock.PassiveClock
}

// loop provisions after every batch until ctx ends, from the moment the
// Store is complete.
func (p *provisioner) loop(ctx context.Context) error {
	if !p.gate.wait(ctx) {
		return nil
	}
	for p.batch.Wait(ctx) {
		if _, err := p.provision(ctx); err != nil {
			logError(ctx, err, "provisioning")
		}
	}
	return nil
}

// provision is Controller.Provision.
func (p *provisioner) provision(ctx context.Context) ([]*v1.NodeClaim, error) {
	if !p.gate.synced() {
		return nil, ErrNotSynced
	}
	ctx = withController(ctx, "provisioner")
	if err := p.offerings.refresh(ctx); err != nil {
		logError(ctx, err, "refreshing instance types")
	}
	version := p.store.ConfigVersion()
	snap := p.store.ProvisioningSnapshot()
	schedulingQueueDepth.WithLabelValues("provisioner").Set(float64(len(snap.Pods)))
	if len(snap.Pods) == 0 {
		return nil, nil
	}
	start := p.clock.Now()
	res := p.decider.Provision(ctx, snap, version)
	schedulingDuration.WithLabelValues("provisioner").Observe(p.clock.Since(start).Seconds())
	var created []*v1.NodeClaim
	var errs []error
	for _, plan := range res.NewNodeClaims {
		nc, err := p.claims.create(ctx, plan, "provisioning")
		if err != nil {
			errs = append(errs, fmt.Errorf("creating a NodeClaim of NodePool %s: %w", plan.NodePool.Name, err))
			continue
		}
		created = append(created, nc)
		for _, pod := range plan.Pods {
			p.events.event(pod, nc, corev1.EventTypeNormal, "Nominated", "Pod should schedule on: nodeclaim/%s", nc.Name)
		}
	}
	// The engine's reason, per NodePool, for each pod nothing can hold; a
	// NodePool whose limits stop it is told once a pass.
	atLimit := map[string]string{}
	for _, pe := range res.Unschedulable {
		p.events.event(pe.Pod, nil, corev1.EventTypeWarning, "FailedScheduling", "Failed to schedule pod: %s", pe.Reason)
		for pool, code := range pe.CodeByNodePool {
			if code == provisioning.ReasonLimits {
				atLimit[pool] = pe.ByNodePool[pool]
			}
		}
	}
	for _, np := range snap.NodePools {
		if why, ok := atLimit[np.Name]; ok {
			p.events.event(np, nil, corev1.EventTypeWarning, "NodePoolLimitReached", "Pending pods cannot get a node from this NodePool: it %s", why)
		}
	}
	return created, errors.Join(errs...)
}
