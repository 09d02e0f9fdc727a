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
func ExplainNode(ctx context.Context, c *Snapshot, name string, opts Options) ([]Answer, error) {
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
	switch {
	case cand.Disrupting:
		return []Answer{{Method: "any", Why: "it is already being disrupted or deleted"}}, nil
	case !cand.Initialized:
		return []Answer{{Method: "any", Why: "it is not initialized yet: nothing disrupts a node still starting"}}, nil
	}
	p.eligible() // the Balanced policy's totals tell candidates from the other nodes
	e := &explainer{ctx: ctx, p: p, cand: cand, np: np, blocked: c.blocker(cand).String()}
	e.waitWhy = e.notConsolidatableWhy()
	// Each method in turn; the first that acts ends the answer.
	for _, method := range []func() bool{e.expiration, e.emptiness, e.drift, e.consolidation} {
		if method() {
			break
		}
	}
	return e.out, nil
}

// explainer gathers one node's answers, method by method.
type explainer struct {
	ctx  context.Context
	p    *pass
	cand *Candidate
	np   *v1.NodePool
	// blocked is what keeps graceful methods off the node ("" for none);
	// waitWhy why consolidation may not take it yet ("" when it may).
	blocked, waitWhy string
	out              []Answer
}

// acting answers that method acts on the node, and why.
func (e *explainer) acting(method Method, format string, args ...any) {
	e.out = append(e.out, Answer{Method: method, Acts: true, Why: fmt.Sprintf(format, args...)})
}

// notActing answers that method leaves the node alone, and why.
func (e *explainer) notActing(method Method, format string, args ...any) {
	e.out = append(e.out, Answer{Method: method, Why: fmt.Sprintf(format, args...)})
}

func (e *explainer) held(method Method, reason v1.DisruptionReason, format string, args ...any) {
	e.out = append(e.out, Answer{Method: method, Why: fmt.Sprintf(format, args...), ByBudget: reason})
}

// budget says why the pool's budget allows no disruption for reason now
// ("" when it allows one).
func (e *explainer) budget(reason v1.DisruptionReason) string {
	if e.p.remain[e.cand.NodePool][reason] > 0 {
		return ""
	}
	return fmt.Sprintf("NodePool %s's budget allows no %s disruption now", e.cand.NodePool, reason)
}

// notConsolidatableWhy: consolidateAfter Never, a static pool, or
// consolidateAfter not passed since the last pod change.
func (e *explainer) notConsolidatableWhy() string {
	after := e.np.Spec.Disruption.ConsolidateAfter
	switch {
	case after.IsNever():
		return "consolidateAfter is Never"
	case e.np.IsStatic():
		return "a static NodePool is not consolidated"
	case !e.p.consolidatable(e.cand):
		last := e.cand.NodeClaim.Status.LastPodEventTime.Time
		if last.IsZero() {
			last = e.cand.NodeClaim.CreationTimestamp.Time
		}
		return fmt.Sprintf("consolidateAfter %s has not passed since its last pod change at %s (until %s)", after.Duration, last.UTC().Format(time.RFC3339), last.Add(*after.Duration).UTC().Format(time.RFC3339))
	}
	return ""
}

// gated says, for a graceful method, the first of blocker, consolidateAfter
// and budget that holds the node back (false when none does).
func (e *explainer) gated(method Method, reason v1.DisruptionReason) bool {
	switch {
	case e.blocked != "":
		e.notActing(method, "%s", e.blocked)
	case e.waitWhy != "":
		e.notActing(method, "%s", e.waitWhy)
	case e.budget(reason) != "":
		e.held(method, reason, "%s", e.budget(reason))
	default:
		return false
	}
	return true
}

func (e *explainer) expiration() bool {
	e.p.expire()
	exp := e.cand.NodeClaim.Spec.ExpireAfter
	switch {
	case exp.IsNever():
		e.notActing("expiration", "expireAfter is Never")
	case containsCandidate(e.p.decision.Expired, e.cand):
		e.acting("expiration", "it expired at %s (expireAfter %s): it is drained regardless of budgets and do-not-disrupt", e.cand.NodeClaim.CreationTimestamp.Add(*exp.Duration).UTC().Format(time.RFC3339), exp.Duration)
		return true
	default:
		e.notActing("expiration", "it expires at %s (expireAfter %s)", e.cand.NodeClaim.CreationTimestamp.Add(*exp.Duration).UTC().Format(time.RFC3339), exp.Duration)
	}
	return false
}

func (e *explainer) emptiness() bool {
	switch pods := e.p.podsOf(e.cand); {
	case !e.p.isEmpty(e.cand):
		e.notActing(MethodEmpty, "it runs %d pod(s) that would have to move", len(pods))
	case e.p.c.BufferPods[e.cand.Node.Name] > 0:
		e.notActing(MethodEmpty, "it holds %d virtual pod(s) of CapacityBuffers: its room is their spare capacity", e.p.c.BufferPods[e.cand.Node.Name])
	case e.gated(MethodEmpty, v1.DisruptionReasonEmpty):
	default:
		e.acting(MethodEmpty, "it is empty: it is deleted")
		return true
	}
	return false
}

func (e *explainer) drift() bool {
	drift := e.p.driftReason(e.cand)
	switch {
	case drift == "":
		e.notActing(MethodDrift, "it has not drifted")
	case e.blocked != "" && e.cand.NodeClaim.Spec.TerminationGracePeriod == nil:
		e.notActing(MethodDrift, "drifted (%s), but %s and its claim has no terminationGracePeriod", drift, e.blocked)
	case e.budget(v1.DisruptionReasonDrifted) != "":
		e.held(MethodDrift, v1.DisruptionReasonDrifted, "drifted (%s), but %s", drift, e.budget(v1.DisruptionReasonDrifted))
	default:
		if _, ok := e.p.simulate(e.ctx, []*Candidate{e.cand}); !ok {
			e.notActing(MethodDrift, "drifted (%s), but its pods would have nowhere to go", drift)
			return false
		}
		e.acting(MethodDrift, "drifted (%s): it is replaced", drift)
		return true
	}
	return false
}

// consolidation answers as single-node consolidation would.
func (e *explainer) consolidation() bool {
	switch {
	case e.np.Spec.Disruption.ConsolidationPolicy == v1.ConsolidationPolicyWhenEmpty:
		e.notActing(MethodSingleNode, "consolidationPolicy WhenEmpty: a node with pods is not consolidated")
	case e.gated(MethodSingleNode, v1.DisruptionReasonUnderutilized):
	default:
		cmd, why := e.p.consolidateWhy(e.ctx, []*Candidate{e.cand}, MethodSingleNode)
		switch {
		case cmd == nil:
			e.notActing(MethodSingleNode, "%s", why)
		case len(cmd.Replacements) == 0:
			e.acting(MethodSingleNode, "its pods fit on the other nodes: it is deleted, saving %.4f USD/h", cmd.Savings)
		default:
			e.acting(MethodSingleNode, "it is replaced by a cheaper %s, saving %.4f USD/h", cmd.Replacements[0].InstanceTypes[0].Name, cmd.Savings)
		}
		return cmd != nil
	}
	return false
}

func containsCandidate(cs []*Candidate, c *Candidate) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}
