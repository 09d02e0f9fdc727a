package disruption

import (
	"fmt"
	"sort"
	"strconv"
	"time"

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
	// Held are the surplus nodes the pool's budgets keep for a later
	// pass, in removal order; Budget is the allowance that holds them,
	// Nodes what it was computed over, and Until when the binding budget's
	// window closes (zero for one without schedule). All are unset when
	// nothing is held.
	Held   []*Candidate
	Budget Allowance
	Nodes  PoolNodes
	Until  time.Time
}

// String says what a scale-down held back by budgets does now, for people:
// "static NodePool web: 6 surplus node(s), 2 removed now, 4 wait for the
// budget: budgets[0] (nodes 20%) allows 2 disruption(s) now". It is ""
// when nothing is held.
func (s StaticScaling) String() string {
	if len(s.Held) == 0 {
		return ""
	}
	var why string
	if s.Budget.Err != nil {
		why = "a budget that cannot be read allows none: " + s.Budget.Err.Error()
	} else {
		why = fmt.Sprintf("%s allows %d disruption(s) now", DescribeBudget(s.NodePool, s.Budget.Binding), s.Budget.Allowed)
		if s.Nodes.Disrupting > 0 {
			why += fmt.Sprintf(", %d of the pool's %d initialized node(s) being disrupted already", s.Nodes.Disrupting, s.Nodes.Total)
		}
		if !s.Until.IsZero() {
			why += ", until " + s.Until.UTC().Format("Mon 15:04 MST")
		}
	}
	return fmt.Sprintf("static NodePool %s: %d surplus node(s), %d removed now, %d wait for the budget: %s",
		s.NodePool.Name, len(s.Remove)+len(s.Held), len(s.Remove), len(s.Held), why)
}

// StaticScale answers for every static NodePool whose node count is not
// its replicas. Nodes being deleted do not count; a node being disrupted
// (drift replacing it) counts against launching, not for removal, so its
// replacement is neither launched twice nor removed. Launches
// stop at limits.nodes, counting every node of the pool, and are never
// held by budgets. What is removed on a scale-down, in upstream's order:
// claims not launched yet, then nodes with no pod to move, then busy ones,
// those a pod asks not to be disrupted last; among unlaunched and busy
// ones, a higher karpenter.sh/deprovisioning-priority first, then (busy
// ones) the cheapest to disrupt, as consolidation ranks them; then by name.
//
// By default a scale-down stays within the NodePool's disruption budgets:
// of the surplus, it removes no more initialized nodes at once than the
// budgets allow now, counted as for every other method (initialized nodes
// the base, those already disrupting, deleting or not Ready taken off the
// allowance, a scheduled budget only inside its window); the rest wait in
// Held for a later pass. Nodes not initialized yet run nothing to protect
// and, as everywhere, budgets do not count them: they go regardless. Only
// the budgets that name no reasons limit a scale-down: a budget's reasons
// scope it to those methods (Empty, Drifted, Underutilized), and a smaller
// replica count is none of them — a "no consolidation during business
// hours" budget should not freeze a scale-down the operator asked for,
// while "at most 20% of my nodes at once, whatever the reason" should
// pace it. A drift command of the same pass is revalidated against the
// budget after these removals start, so the two do not overspend it.
//
// With c.Policy's decisions karpenter, as upstream's (its docs: "scale operations
// bypass node disruption budgets but respect PodDisruptionBudgets"), the
// whole surplus goes at once; in either mode the drains respect
// PodDisruptionBudgets.
func StaticScale(c *Snapshot) []StaticScaling {
	var out []StaticScaling
	for _, np := range c.NodePools {
		if !np.IsStatic() {
			continue
		}
		var pool, removable []*Candidate
		all, running := 0, int64(0)
		for _, cand := range c.Nodes {
			if cand.NodePool != np.Name {
				continue
			}
			pool = append(pool, cand)
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
				out = append(out, StaticScaling{NodePool: np, Launch: int(n), Plan: provisioning.StaticPlan(np, c.InstanceTypes[np.Name], c.Policy.OverheadDaemonSets(c.DaemonSets))})
			}
		case have > want:
			surplus := c.removalOrder(removable)[:have-want]
			if c.Policy.Karpenter() {
				out = append(out, StaticScaling{NodePool: np, Remove: surplus})
				continue
			}
			out = append(out, withinBudget(np, surplus, budgetNodesOf(pool), c.Now))
		}
	}
	return out
}

// withinBudget removes of the surplus (in removal order) what the pool's
// reason-less budgets allow now, and holds the rest.
func withinBudget(np *v1.NodePool, surplus []*Candidate, nodes PoolNodes, now time.Time) StaticScaling {
	a := Allowed(np, "", nodes, now)
	s := StaticScaling{NodePool: np}
	left := a.Allowed
	for _, cand := range surplus {
		switch {
		case !cand.Initialized:
			s.Remove = append(s.Remove, cand)
		case left > 0:
			left--
			s.Remove = append(s.Remove, cand)
		default:
			s.Held = append(s.Held, cand)
		}
	}
	if len(s.Held) > 0 {
		s.Budget, s.Nodes = a, nodes
		if a.Err == nil {
			_, s.Until, _ = Window(&np.Spec.Disruption.Budgets[a.Binding], now)
		}
	}
	return s
}

func (c *Snapshot) removalOrder(cands []*Candidate) []*Candidate {
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
		case !c.podAsksNotToBeDisrupted(cand.Node).at(c.Now).None():
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
