package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// Garbage collection, as upstream's: how often, and how old an instance
// without a NodeClaim must be before it is terminated (a claim being
// created may not be in the cache yet).
const (
	gcEvery       = 2 * time.Minute
	gcInstanceAge = 30 * time.Second
)

// garbageCollector removes what the cloud and the cluster no longer agree
// on: instances no claim claims, claims whose instance is gone.
type garbageCollector struct {
	gate   *syncGate
	client client.Client
	cloud  CloudProvider // metered
	clock  clock.WithTicker
}

// loop collects garbage every gcEvery until ctx ends.
func (g *garbageCollector) loop(ctx context.Context) error {
	return every(ctx, g.gate, g.clock, gcEvery, "collecting garbage", g.collect)
}

// collect is Controller.CollectGarbage.
func (g *garbageCollector) collect(ctx context.Context) error {
	if !g.gate.synced() {
		return ErrNotSynced
	}
	ctx = withController(ctx, "nodeclaim.garbagecollection")
	instances, err := g.cloud.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	var claims v1.NodeClaimList
	if err := g.client.List(ctx, &claims); err != nil {
		return err
	}
	unclaimed, gone := garbage(instances, pointers(claims.Items), g.clock.Now())
	var errs []error
	for _, in := range unclaimed {
		log.FromContext(ctx).Info("terminating an instance no NodeClaim claims", "providerID", in.Status.ProviderID)
		if err := g.cloud.Delete(ctx, in); err != nil && !cloudprovider.IsNodeClaimNotFoundError(err) {
			errs = append(errs, err)
		}
	}
	for _, nc := range gone {
		log.FromContext(ctx).Info("deleting a NodeClaim whose instance is gone", "nodeclaim", nc.Name, "providerID", nc.Status.ProviderID)
		if err := g.client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// garbage decides what collection removes at now: the instances no claim
// claims that are older than gcInstanceAge (a younger one's claim may not
// be in the cache yet), and the launched claims, not already being
// deleted, whose instance the cloud no longer runs.
func garbage(instances, claims []*v1.NodeClaim, now time.Time) (unclaimed, gone []*v1.NodeClaim) {
	claimed := map[string]bool{}
	for _, nc := range claims {
		claimed[nc.Status.ProviderID] = true
	}
	running := map[string]bool{}
	for _, in := range instances {
		running[in.Status.ProviderID] = true
		if claimed[in.Status.ProviderID] || now.Sub(in.CreationTimestamp.Time) < gcInstanceAge {
			continue
		}
		unclaimed = append(unclaimed, in)
	}
	for _, nc := range claims {
		if nc.Status.ProviderID == "" || running[nc.Status.ProviderID] || nc.DeletionTimestamp != nil || !conditionTrue(nc, v1.ConditionLaunched) {
			continue
		}
		gone = append(gone, nc)
	}
	return unclaimed, gone
}
