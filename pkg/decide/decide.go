// Package decide is the engine as a host holds it: the Policy it decides
// under, the provisioning Planner prepared for the cluster's NodePools,
// instance types and DaemonSets (rebuilt when they change), and what
// disruption passes remember of unchanged nodes (a disruption.Memo).
//
// Every host — the controller, the simulator, plan and explain — builds one
// Decider from its flags and asks it for each provisioning and disruption
// decision; none sets the engine's fields (a Snapshot's Policy, a
// disruption Snapshot's Planner, Memo and Policy) itself, so the same input
// and Policy give the same decisions in every host.
package decide

import (
	"context"
	"sync"

	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// Options of a Decider.
type Options struct {
	// Concurrent lets a batch's two plans (Joiner's way and upstream's)
	// take a core each: for a controller, which plans one batch at a time.
	// Decisions do not depend on it.
	Concurrent bool
}

// A Decider is safe for concurrent use.
type Decider struct {
	policy provisioning.Policy
	opts   Options
	memo   *disruption.Memo

	mu      sync.Mutex
	planner *provisioning.Planner
	at      uint64 // the configuration version planner is for
}

// New is a Decider deciding under policy.
func New(policy provisioning.Policy, opts Options) *Decider {
	return &Decider{policy: policy, opts: opts, memo: disruption.NewMemo()}
}

// Policy is what the Decider decides under.
func (d *Decider) Policy() provisioning.Policy { return d.policy }

// plannerFor is the Planner for a configuration: the NodePools, instance types
// and DaemonSets given, which version names. A host passes the version its
// source had before it took the configuration (a change in between only
// makes the next call build anew); the same version must mean the same
// configuration.
func (d *Decider) plannerFor(version uint64, snap *provisioning.Snapshot) *provisioning.Planner {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.planner == nil || d.at != version {
		if d.planner != nil {
			d.memo.ForgetSimulations() // the old Planner's; it can go
		}
		d.planner, d.at = provisioning.NewPlanner(snap.NodePools, snap.InstanceTypes, d.policy.OverheadDaemonSets(snap.DaemonSets)), version
		d.planner.Concurrent = d.opts.Concurrent
	}
	return d.planner
}

// Provision plans the snapshot's pending pods under the policy, with the
// Planner for the configuration version.
func (d *Decider) Provision(ctx context.Context, snap *provisioning.Snapshot, version uint64) *provisioning.Results {
	return d.plannerFor(version, d.PrepareSnapshot(snap)).Solve(ctx, snap)
}

// ProvisionPinned plans snap, whose pods awaiting the claims launched for
// them are pinned there (state.Store.ProvisioningSnapshots), and — when
// that plan makes new NodeClaims and repacked, the same cluster with every
// pending pod to place again, is given — repacked too, and keeps repacked's
// plan when it leaves fewer pods unplaced, or as many for less. A new
// NodeClaim is made only where neither way of binding what is pending
// finds room: the pins keep an earlier pass's plan, which a repack,
// largest first, may need more nodes for (a 1,000-pod scale-out's second
// pass planned a c6g.8xlarge for 55 pods its first batch had room for),
// while once kube-scheduler has bound other pods onto the pins' claims a
// repack may find room the pins do not.
func (d *Decider) ProvisionPinned(ctx context.Context, snap, repacked *provisioning.Snapshot, version uint64) *provisioning.Results {
	res := d.Provision(ctx, snap, version)
	if repacked == nil || len(res.NewNodeClaims) == 0 {
		return res
	}
	alt := d.Provision(ctx, repacked, version)
	if a, b := len(alt.Unschedulable), len(res.Unschedulable); a < b || a == b && alt.Price() < res.Price()-1e-9 {
		return alt
	}
	return res
}

// PrepareSnapshot readies a provisioning Snapshot for the engine (its
// Policy) for a host that hands it to provisioning's explanations.
func (d *Decider) PrepareSnapshot(snap *provisioning.Snapshot) *provisioning.Snapshot {
	snap.Policy = d.policy
	return snap
}

// Prepare readies a disruption Snapshot for the engine: its Planner (for
// the configuration version), Memo and Policy, before a host hands it to
// disruption.Compute, the queue's validation or StaticScale.
func (d *Decider) Prepare(c *disruption.Snapshot, version uint64) *disruption.Snapshot {
	c.Planner = d.plannerFor(version, &provisioning.Snapshot{NodePools: c.NodePools, InstanceTypes: c.InstanceTypes, DaemonSets: c.DaemonSets})
	c.Memo, c.Policy = d.memo, d.policy
	return c
}
