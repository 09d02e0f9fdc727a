package controller

import (
	"sync"

	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// plannerCache keeps a provisioning Planner for the Store's NodePools,
// instance types and DaemonSets while the Store says they are unchanged,
// so provisioning passes and consolidation's simulations share its caches.
// It is safe for concurrent use.
type plannerCache struct {
	mu   sync.Mutex
	plan *provisioning.Planner
	at   uint64 // the Store's ConfigVersion plan is for
}

// get is the Planner for the snapshot's configuration. version must be the
// Store's ConfigVersion read before the snapshot was taken: a change in
// between then only makes the next call build anew.
func (p *plannerCache) get(snap *provisioning.Snapshot, version uint64) *provisioning.Planner {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.plan == nil || p.at != version {
		p.plan, p.at = provisioning.NewPlanner(snap.NodePools, snap.InstanceTypes, snap.DaemonSets), version
		p.plan.Concurrent = true // one batch at a time: its two ways may take two cores
	}
	return p.plan
}
