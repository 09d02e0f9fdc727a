package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// offerings keeps the Store's NodePools and their instance types (the
// NodeOverlays applied) as the cloud offers them. Informer callbacks and
// reconcilers only mark them stale; the loops refresh them, so the cloud
// is called from the loops alone. It is safe for concurrent use.
type offerings struct {
	store  *state.Store
	reader client.Reader // the manager's cache: NodePools, NodeOverlays
	cloud  CloudProvider // metered
	// pools and version are the provider's capabilities (nil when it has
	// not them).
	pools   NodePoolAware
	version VersionedOfferings
	// overlays is nil unless the NodeOverlay feature gate is on.
	overlays *overlays

	mu sync.Mutex
	at int // the cloud's offerings version the Store's instance types are of
	// stale says a NodePool, NodeOverlay or NodeClass changed since the
	// Store's instance types were asked of the cloud: the next pass asks
	// again.
	stale     atomic.Bool
	refreshMu sync.Mutex    // one refresh at a time
	wake      chan struct{} // the loop's wake-up (buffered 1; nil: no loop)
	// gate and clock: the loop runs once the Store is complete, and
	// retries a failed refresh after offeringsRetry.
	gate  *syncGate
	clock clock.WithTicker
}

// markStale says the next refresh must ask the cloud again.
func (o *offerings) markStale() { o.stale.Store(true) }

// changed says a kind the instance types depend on changed (a NodePool,
// NodeOverlay or NodeClass): the next refresh asks the cloud again, and
// the loop refreshes soon.
func (o *offerings) changed() {
	o.markStale()
	o.wakeLoop()
}

// wakeLoop has the loop look at once.
func (o *offerings) wakeLoop() {
	select {
	case o.wake <- struct{}{}:
	default: // a wake-up is already waiting
	}
}

// offeringsRetry is how soon a failed refresh of the offerings is tried
// again by the loop (the passes try at every run too).
const offeringsRetry = 5 * time.Second

// loop refreshes the Store's NodePools and instance types soon after one
// of the kinds they depend on changed, from the moment the Store is
// complete until ctx ends — on every replica, so a follower that takes
// over decides with current offerings.
func (o *offerings) loop(ctx context.Context) error {
	if !o.gate.wait(ctx) {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-o.wake:
		}
		if err := o.refresh(ctx); err != nil {
			logError(ctx, err, "refreshing instance types")
			retry := o.clock.NewTimer(offeringsRetry)
			select {
			case <-ctx.Done():
				retry.Stop()
				return nil
			case <-retry.C():
				o.wakeLoop()
			}
		}
	}
}

// refresh asks the cloud for the NodePools' instance types again when a
// NodePool, NodeOverlay or NodeClass changed, or their availability did
// since the Store got them (an insufficient-capacity error the provider
// learned is planned around). A refresh that failed is tried again by the
// next pass.
func (o *offerings) refresh(ctx context.Context) error {
	o.refreshMu.Lock()
	defer o.refreshMu.Unlock()
	stale := o.stale.Swap(false)
	if o.version != nil && !stale {
		o.mu.Lock()
		stale = o.version.Version() != o.at
		o.mu.Unlock()
	}
	if !stale {
		return nil
	}
	ctx = withController(ctx, "nodepool.state")
	var list v1.NodePoolList
	if err := o.reader.List(ctx, &list); err != nil {
		o.stale.Store(true)
		return err
	}
	pools := pointers(list.Items)
	if o.overlays != nil {
		var list v1alpha1.NodeOverlayList
		if err := o.reader.List(ctx, &list); err != nil {
			o.stale.Store(true)
			return err
		}
		o.overlays.setList(pointers(list.Items))
	}
	var errs []error
	if o.pools != nil {
		errs = append(errs, o.pools.SetNodePools(pools))
	}
	errs = append(errs, o.set(ctx, pools))
	if err := errors.Join(errs...); err != nil {
		o.stale.Store(true)
		return err
	}
	if o.overlays != nil {
		// A conflict may come or go with a pool or an overlay.
		return o.overlays.writeStatuses(ctx)
	}
	return nil
}

// set puts the NodePools and their instance types in the Store. A
// NodePool whose NodeClass is not ready gets none (logged, as upstream
// leaves such a pool out); any other error is returned.
func (o *offerings) set(ctx context.Context, pools []*v1.NodePool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.version != nil {
		o.at = o.version.Version()
	}
	var errs []error
	its := map[string][]*cloudprovider.InstanceType{}
	for _, np := range pools {
		got, err := o.cloud.GetInstanceTypes(ctx, np)
		if cloudprovider.IsNodeClassNotReadyError(err) {
			log.FromContext(ctx).Info("leaving out a NodePool whose NodeClass is not ready", "nodepool", np.Name, "reason", err.Error())
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("NodePool %s: %w", np.Name, err))
			continue
		}
		its[np.Name] = got
	}
	if o.overlays != nil {
		its = o.overlays.apply(pools, its)
	}
	o.store.SetNodePoolsAndTypes(pools, its)
	return errors.Join(errs...)
}
