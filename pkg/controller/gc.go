package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// gcLoop collects garbage every gcEvery until ctx ends.
func (c *Controller) gcLoop(ctx context.Context) error {
	return c.every(ctx, gcEvery, "collecting garbage", c.CollectGarbage)
}

// every runs f every period until ctx ends, logging its errors, from the
// moment the Store is complete.
func (c *Controller) every(ctx context.Context, period time.Duration, what string, f func(context.Context) error) error {
	if !c.gate.wait(ctx) {
		return nil
	}
	t := c.opts.Clock.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			if err := f(ctx); err != nil {
				logError(ctx, err, what)
			}
		}
	}
}

// CollectGarbage terminates instances the cloud runs for no NodeClaim, and
// deletes launched NodeClaims whose instance is gone (their Node goes with
// them).
func (c *Controller) CollectGarbage(ctx context.Context) error {
	if !c.gate.synced() {
		return ErrNotSynced
	}
	ctx = withController(ctx, "nodeclaim.garbagecollection")
	instances, err := c.cloud.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	var claims v1.NodeClaimList
	if err := c.client.List(ctx, &claims); err != nil {
		return err
	}
	claimed := map[string]bool{}
	for _, nc := range claims.Items {
		claimed[nc.Status.ProviderID] = true
	}
	var errs []error
	for _, in := range instances {
		if claimed[in.Status.ProviderID] || c.opts.Clock.Since(in.CreationTimestamp.Time) < gcInstanceAge {
			continue
		}
		log.FromContext(ctx).Info("terminating an instance no NodeClaim claims", "providerID", in.Status.ProviderID)
		if err := c.cloud.Delete(ctx, in); err != nil && !cloudprovider.IsNodeClaimNotFoundError(err) {
			errs = append(errs, err)
		}
	}
	running := map[string]bool{}
	for _, in := range instances {
		running[in.Status.ProviderID] = true
	}
	for i := range claims.Items {
		nc := &claims.Items[i]
		if nc.Status.ProviderID == "" || running[nc.Status.ProviderID] || nc.DeletionTimestamp != nil || !conditionTrue(nc, v1.ConditionLaunched) {
			continue
		}
		log.FromContext(ctx).Info("deleting a NodeClaim whose instance is gone", "nodeclaim", nc.Name, "providerID", nc.Status.ProviderID)
		if err := c.client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
