package disruption

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// Node repair, as upstream's node health controller: apart from the
// disruption methods (no budgets, no scheduling simulation, nothing
// launched ahead), a node whose condition has matched one of the cloud
// provider's repair policies for longer than the policy tolerates has its
// NodeClaim deleted — at once, its termination grace period ending now —
// and its pods are replaced as any deleted node's are. A NodePool with
// more of its nodes unhealthy than allowedUnhealthyPercent is left alone:
// so many failing at once is more likely the cluster's trouble (a network
// partition, a bad image) than the nodes', and replacing them all would
// make it worse.

// allowedUnhealthyPercent of a NodePool's nodes (rounded up, as a PDB's
// percentage) may be unhealthy for repair to act in it.
const allowedUnhealthyPercent = 20

// ReasonUnhealthy is the disruption reason of a repaired node, as
// upstream's metrics name it.
const ReasonUnhealthy = "Unhealthy"

// Repair is a node to replace now.
type Repair struct {
	Candidate *Candidate
	// Condition is the one that matched Policy longest past its toleration.
	Condition corev1.NodeCondition
	Policy    cloudprovider.RepairPolicy
	// Due is when the toleration ended.
	Due time.Time
}

// RepairHeld is a NodePool whose unhealthy nodes are not repaired: more of
// them are unhealthy than repair allows.
type RepairHeld struct {
	NodePool string
	// Unhealthy of the pool's Nodes are; at most Allowed may be.
	Unhealthy, Nodes, Allowed int
	// Due are its nodes past their toleration, held back.
	Due []*Candidate
}

// Reason says why the pool's nodes are not repaired.
func (h RepairHeld) Reason() string {
	return fmt.Sprintf("more than %d%% of NodePool %s's nodes are unhealthy (%d of %d): repair waits until at most %d are",
		allowedUnhealthyPercent, h.NodePool, h.Unhealthy, h.Nodes, h.Allowed)
}

// RepairDecision is what node repair does now.
type RepairDecision struct {
	// Replace are the nodes whose NodeClaims to delete, by name.
	Replace []Repair
	// Held are the NodePools held back by the unhealthy share, by name.
	Held []RepairHeld
	// Next is when the next unhealthy node's toleration ends (zero:
	// none is waiting): a host asks again then.
	Next time.Time
}

// Repairs is node repair over the cluster at c.Now, with the cloud
// provider's policies. Only registered nodes count, as upstream counts a
// pool's Node objects; a claim already being deleted is not repaired again.
func Repairs(c *Snapshot, policies []cloudprovider.RepairPolicy) RepairDecision {
	var d RepairDecision
	if len(policies) == 0 {
		return d
	}
	type pool struct {
		nodes, unhealthy int
		due              []Repair
	}
	pools := map[string]*pool{}
	for _, cand := range c.Nodes {
		if !cand.Registered {
			continue
		}
		p := pools[cand.NodePool]
		if p == nil {
			p = &pool{}
			pools[cand.NodePool] = p
		}
		p.nodes++
		r, unhealthy := unhealthyFor(cand, policies)
		if !unhealthy {
			continue
		}
		p.unhealthy++
		switch {
		case cand.NodeClaim != nil && cand.NodeClaim.DeletionTimestamp != nil:
		case c.Now.Before(r.Due):
			if d.Next.IsZero() || r.Due.Before(d.Next) {
				d.Next = r.Due
			}
		default:
			p.due = append(p.due, r)
		}
	}
	names := make([]string, 0, len(pools))
	for name := range pools {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := pools[name]
		if len(p.due) == 0 {
			continue
		}
		allowed := (p.nodes*allowedUnhealthyPercent + 99) / 100
		if p.unhealthy > allowed {
			h := RepairHeld{NodePool: name, Unhealthy: p.unhealthy, Nodes: p.nodes, Allowed: allowed}
			for _, r := range p.due {
				h.Due = append(h.Due, r.Candidate)
			}
			d.Held = append(d.Held, h)
			continue
		}
		d.Replace = append(d.Replace, p.due...)
	}
	sort.Slice(d.Replace, func(i, j int) bool { return d.Replace[i].Candidate.Node.Name < d.Replace[j].Candidate.Node.Name })
	return d
}

// unhealthyFor says whether a condition of the node matches a policy, and
// the match whose toleration ends first. A condition's time is taken no
// earlier than the claim's creation (a condition cannot predate its node;
// one without a time then has a bound).
func unhealthyFor(cand *Candidate, policies []cloudprovider.RepairPolicy) (Repair, bool) {
	var best Repair
	found := false
	for _, cond := range cand.Conditions {
		for _, pol := range policies {
			if cond.Type != pol.ConditionType || cond.Status != pol.ConditionStatus {
				continue
			}
			since := cond.LastTransitionTime.Time
			if cand.NodeClaim != nil && since.Before(cand.NodeClaim.CreationTimestamp.Time) {
				since = cand.NodeClaim.CreationTimestamp.Time
			}
			due := since.Add(pol.TolerationDuration)
			if !found || due.Before(best.Due) {
				best, found = Repair{Candidate: cand, Condition: cond, Policy: pol, Due: due}, true
			}
		}
	}
	return best, found
}
