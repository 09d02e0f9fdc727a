package disruption

import (
	"context"
	"fmt"
	"time"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// Answer is what one method makes of a node: Acts says it would disrupt it
// (within its budget), Why says why it does or does not.
type Answer struct {
	Method Method
	Acts   bool
	Why    string
	// ByBudget is set when the NodePool's budget for that reason holds it.
	ByBudget v1.DisruptionReason
}

// ExplainNode says, method by method in the order a pass tries them, what
// each makes of the node: expiration, emptiness, drift, consolidation. It
// runs the same checks as Compute, for this node alone (consolidation as
// single-node: multi-node depends on the other nodes), and changes nothing.
func ExplainNode(ctx context.Context, c *Cluster, name string, opts Options) ([]Answer, error) {
	var cand *Candidate
	for _, n := range c.Nodes {
		if n.Node.Name == name {
			cand = n
		}
	}
	if cand == nil {
		return nil, fmt.Errorf("node %s is not one Joiner manages here (no NodeClaim joins it)", name)
	}
	p := newPass(ctx, c, opts)
	np := p.pools[cand.NodePool]
	if np == nil {
		return nil, fmt.Errorf("node %s: its NodePool %q is gone", name, cand.NodePool)
	}
	var out []Answer
	add := func(method Method, acts bool, format string, args ...any) {
		out = append(out, Answer{Method: method, Acts: acts, Why: fmt.Sprintf(format, args...)})
	}
	held := func(method Method, reason v1.DisruptionReason, format string, args ...any) {
		out = append(out, Answer{Method: method, Why: fmt.Sprintf(format, args...), ByBudget: reason})
	}
	switch {
	case cand.Disrupting:
		return append(out, Answer{Method: "any", Why: "it is already being disrupted or deleted"}), nil
	case !cand.Initialized:
		return append(out, Answer{Method: "any", Why: "it is not initialized yet: nothing disrupts a node still starting"}), nil
	}
	p.expire()
	expired := len(p.decision.Expired) > 0 && containsCandidate(p.decision.Expired, cand)
	if exp := cand.NodeClaim.Spec.ExpireAfter; exp.IsNever() {
		add("expiration", false, "expireAfter is Never")
	} else if expired {
		add("expiration", true, "it expired at %s (expireAfter %s): it is drained regardless of budgets and do-not-disrupt", cand.NodeClaim.CreationTimestamp.Add(*exp.Duration).UTC().Format(time.RFC3339), exp.Duration)
		return out, nil
	} else {
		add("expiration", false, "it expires at %s (expireAfter %s)", cand.NodeClaim.CreationTimestamp.Add(*exp.Duration).UTC().Format(time.RFC3339), exp.Duration)
	}
	blocked := c.blocker(cand)
	budget := func(reason v1.DisruptionReason) string {
		if p.remain[cand.NodePool][reason] > 0 {
			return ""
		}
		return fmt.Sprintf("NodePool %s's budget allows no %s disruption now", cand.NodePool, reason)
	}
	pods := p.podsOf(cand)
	after := np.Spec.Disruption.ConsolidateAfter
	waited := p.consolidatable(cand)
	waitWhy := ""
	switch {
	case after.IsNever():
		waitWhy = "consolidateAfter is Never"
	case np.IsStatic():
		waitWhy = "a static NodePool is not consolidated"
	case !waited:
		last := cand.NodeClaim.Status.LastPodEventTime.Time
		if last.IsZero() {
			last = cand.NodeClaim.CreationTimestamp.Time
		}
		waitWhy = fmt.Sprintf("consolidateAfter %s has not passed since its last pod change at %s (until %s)", after.Duration, last.UTC().Format(time.RFC3339), last.Add(*after.Duration).UTC().Format(time.RFC3339))
	}
	// gated says, for a graceful method, the first of blocker, consolidateAfter
	// and budget that holds the node back (false when none does).
	gated := func(method Method, reason v1.DisruptionReason) bool {
		switch {
		case blocked != "":
			add(method, false, "%s", blocked)
		case waitWhy != "":
			add(method, false, "%s", waitWhy)
		case budget(reason) != "":
			held(method, reason, "%s", budget(reason))
		default:
			return false
		}
		return true
	}
	// Emptiness.
	switch {
	case len(pods) > 0:
		add(MethodEmpty, false, "it runs %d pod(s) that would have to move", len(pods))
	case gated(MethodEmpty, v1.DisruptionReasonEmpty):
	default:
		add(MethodEmpty, true, "it is empty: it is deleted")
		return out, nil
	}
	// Drift.
	drift := p.driftReason(cand)
	switch {
	case drift == "":
		add(MethodDrift, false, "it has not drifted")
	case blocked != "" && cand.NodeClaim.Spec.TerminationGracePeriod == nil:
		add(MethodDrift, false, "drifted (%s), but %s and its claim has no terminationGracePeriod", drift, blocked)
	case budget(v1.DisruptionReasonDrifted) != "":
		held(MethodDrift, v1.DisruptionReasonDrifted, "drifted (%s), but %s", drift, budget(v1.DisruptionReasonDrifted))
	default:
		if _, ok := p.simulate(ctx, []*Candidate{cand}); !ok {
			add(MethodDrift, false, "drifted (%s), but its pods would have nowhere to go", drift)
		} else {
			add(MethodDrift, true, "drifted (%s): it is replaced", drift)
			return out, nil
		}
	}
	// Consolidation, as single-node.
	switch {
	case np.Spec.Disruption.ConsolidationPolicy == v1.ConsolidationPolicyWhenEmpty:
		add(MethodSingleNode, false, "consolidationPolicy WhenEmpty: a node with pods is not consolidated")
	case gated(MethodSingleNode, v1.DisruptionReasonUnderutilized):
	default:
		if cmd, why := p.consolidateWhy(ctx, []*Candidate{cand}, MethodSingleNode); cmd == nil {
			add(MethodSingleNode, false, "%s", why)
		} else if len(cmd.Replacements) == 0 {
			add(MethodSingleNode, true, "its pods fit on the other nodes: it is deleted, saving %.4f USD/h", cmd.Savings)
		} else {
			add(MethodSingleNode, true, "it is replaced by a cheaper %s, saving %.4f USD/h", cmd.Replacements[0].InstanceTypes[0].Name, cmd.Savings)
		}
	}
	return out, nil
}

func containsCandidate(cs []*Candidate, c *Candidate) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}
