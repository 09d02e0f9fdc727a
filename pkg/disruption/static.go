package disruption

import (
	"sort"
	"strconv"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// StaticScaling is what keeps one static NodePool (spec.replicas) at its
// replica count, as upstream's static provisioning and deprovisioning
// controllers do: Launch so many NodeClaims like Plan, or Remove these
// nodes' claims. Emptiness and consolidation leave such pools alone.
type StaticScaling struct {
	NodePool *v1.NodePool
	Launch   int
	// Plan is the NodeClaim to launch (nil when no type can be).
	Plan   *provisioning.NodeClaimPlan
	Remove []*Candidate
}

// StaticScale answers for every static NodePool whose node count is not
// its replicas. Nodes being deleted do not count; a node being disrupted
// (drift replacing it) counts against launching, not for removal, so its
// replacement is neither launched twice nor removed. Launches
// stop at limits.nodes, counting every node of the pool. What is removed
// on a scale-down, in upstream's order: claims not launched yet, then
// nodes with no pod to move, then busy ones, those a pod asks not to be
// disrupted last; among unlaunched and busy ones, a higher
// karpenter.sh/deprovisioning-priority first, then (busy ones) the
// cheapest to disrupt, as consolidation ranks them; then by name.
//
// As upstream's, a scale-down bypasses the NodePool's disruption budgets
// (its drains still respect PodDisruptionBudgets): the replica count is
// the operator's explicit wish, and budgets are for what Karpenter
// decides on its own.
func StaticScale(c *Cluster) []StaticScaling {
	var out []StaticScaling
	for _, np := range c.NodePools {
		if !np.IsStatic() {
			continue
		}
		var removable []*Candidate
		all, running := 0, int64(0)
		for _, cand := range c.Nodes {
			if cand.NodePool != np.Name {
				continue
			}
			all++
			if cand.Node.MarkedForDeletion {
				continue
			}
			running++
			if !cand.Disrupting {
				removable = append(removable, cand)
			}
		}
		want := *np.Spec.Replicas
		switch have := int64(len(removable)); {
		case running < want:
			n := want - running
			if q, ok := np.Spec.Limits["nodes"]; ok {
				n = min(n, q.Value()-int64(all))
			}
			if n > 0 {
				out = append(out, StaticScaling{NodePool: np, Launch: int(n), Plan: provisioning.StaticPlan(np, c.InstanceTypes[np.Name], c.DaemonSets)})
			}
		case have > want:
			out = append(out, StaticScaling{NodePool: np, Remove: c.removalOrder(removable)[:have-want]})
		}
	}
	return out
}

func (c *Cluster) removalOrder(cands []*Candidate) []*Candidate {
	type ranked struct {
		cand       *Candidate
		rank, prio int
		cost       float64
	}
	rs := make([]ranked, len(cands))
	for i, cand := range cands {
		pods := reschedulable(cand.Node)
		r := ranked{cand: cand, prio: deprovisioningPriority(cand)}
		switch {
		case cand.NodeClaim != nil && cand.NodeClaim.Status.ProviderID == "":
			r.rank = 0 // not launched yet
		case c.podAsksNotToBeDisrupted(cand.Node).at(c.Now) != "":
			r.rank = 3
		case len(pods) == 0:
			r.rank, r.prio = 1, 0 // empty nodes go in any order: by name
		default:
			r.rank = 2
		}
		if r.rank >= 2 {
			r.cost = disruptionCost(c.Memo, cand, pods, c.Now)
		}
		rs[i] = r
	}
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		switch {
		case a.rank != b.rank:
			return a.rank < b.rank
		case a.prio != b.prio:
			return a.prio > b.prio
		case a.cost != b.cost:
			return a.cost < b.cost
		}
		return a.cand.Node.Name < b.cand.Node.Name
	})
	out := make([]*Candidate, len(rs))
	for i, r := range rs {
		out[i] = r.cand
	}
	return out
}

// deprovisioningPriority is the claim's karpenter.sh/deprovisioning-priority
// (0 when unset or not an integer).
func deprovisioningPriority(cand *Candidate) int {
	if cand.NodeClaim == nil {
		return 0
	}
	p, err := strconv.Atoi(cand.NodeClaim.Annotations[v1.AnnotationDeprovisioningPriority])
	if err != nil {
		return 0
	}
	return p
}
