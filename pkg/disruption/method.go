package disruption

import (
	"fmt"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// method is one way of disrupting nodes, as upstream's disruption methods
// are. A pass tries them in order (emptiness, drift, multi-node then
// single-node consolidation); the first that returns commands wins. Each
// says which candidates it would act on, computes its commands, gives the
// reason its budgets count, and re-checks a command against fresh state.
type method interface {
	kind() Method
	reason() v1.DisruptionReason
	// eventual methods also take a blocked node whose claim has a
	// terminationGracePeriod (its drain ends by then whatever pods ask);
	// graceful ones take only nodes nothing blocks.
	eventual() bool
	// consolidation methods are skipped with Options.SkipConsolidation,
	// and their commands wait ValidationDelay and are validated again.
	consolidation() bool
	// shouldDisrupt: the method would act on the candidate, budgets aside.
	shouldDisrupt(p *pass, cand *Candidate) bool
	// compute returns the method's commands over the eligible candidates.
	compute(p *pass, eligible []*Candidate) []*Command
	// validate re-checks a command whose candidates are fresh against the
	// pass's state; nil when it still holds. It may update cmd's
	// replacements from the fresh simulation.
	validate(p *pass, cmd *Command, fresh []*Candidate) error
}

// methods are the disruption methods in the order a pass tries them.
var methods = []method{emptiness{}, drift{}, multiNodeConsolidation{}, singleNodeConsolidation{}}

// methodOf is the method that makes commands of kind m (nil for
// interruption commands, which no method makes).
func methodOf(m Method) method {
	for _, x := range methods {
		if x.kind() == m {
			return x
		}
	}
	return nil
}

type emptiness struct{}

func (emptiness) kind() Method                { return MethodEmpty }
func (emptiness) reason() v1.DisruptionReason { return v1.DisruptionReasonEmpty }
func (emptiness) eventual() bool              { return false }
func (emptiness) consolidation() bool         { return true }
func (emptiness) shouldDisrupt(p *pass, cand *Candidate) bool {
	return p.isEmpty(cand) && p.consolidatable(cand)
}
func (emptiness) compute(p *pass, eligible []*Candidate) []*Command { return p.empty(eligible) }
func (m emptiness) validate(p *pass, _ *Command, fresh []*Candidate) error {
	for _, cand := range fresh {
		if !m.shouldDisrupt(p, cand) {
			return fmt.Errorf("node %s is no longer empty", cand.Node.Name)
		}
	}
	return nil
}

type drift struct{}

func (drift) kind() Method                { return MethodDrift }
func (drift) reason() v1.DisruptionReason { return v1.DisruptionReasonDrifted }
func (drift) eventual() bool              { return true }
func (drift) consolidation() bool         { return false }
func (drift) shouldDisrupt(p *pass, cand *Candidate) bool {
	return p.driftReason(cand) != ""
}
func (drift) compute(p *pass, eligible []*Candidate) []*Command { return p.drift(eligible) }
func (m drift) validate(p *pass, _ *Command, fresh []*Candidate) error {
	for _, cand := range fresh {
		if !m.shouldDisrupt(p, cand) {
			return fmt.Errorf("node %s is no longer empty", cand.Node.Name)
		}
	}
	return nil
}

// consolidationValidate is both consolidation methods' validation: the
// candidates still consolidatable, and the method still choosing to act on
// them the same way.
func consolidationValidate(p *pass, cmd *Command, fresh []*Candidate) error {
	for _, cand := range fresh {
		if !p.consolidatable(cand) {
			return fmt.Errorf("a pod was scheduled to or removed from node %s", cand.Node.Name)
		}
	}
	again, why := p.consolidateWhy(p.ctx, fresh, cmd.Method)
	switch {
	case again == nil:
		return fmt.Errorf("consolidation no longer pays off the same way: %s", why)
	case len(again.Replacements) != len(cmd.Replacements):
		return fmt.Errorf("consolidation no longer pays off the same way: it would now launch %d replacement(s), not %d", len(again.Replacements), len(cmd.Replacements))
	}
	cmd.Replacements = again.Replacements
	return nil
}

func consolidates(p *pass, cand *Candidate) bool {
	return p.pools[cand.NodePool].Spec.Disruption.ConsolidationPolicy != v1.ConsolidationPolicyWhenEmpty && p.consolidatable(cand) && !p.isEmpty(cand)
}

type multiNodeConsolidation struct{}

func (multiNodeConsolidation) kind() Method                { return MethodMultiNode }
func (multiNodeConsolidation) reason() v1.DisruptionReason { return v1.DisruptionReasonUnderutilized }
func (multiNodeConsolidation) eventual() bool              { return false }
func (multiNodeConsolidation) consolidation() bool         { return true }
func (multiNodeConsolidation) shouldDisrupt(p *pass, cand *Candidate) bool {
	return consolidates(p, cand)
}
func (multiNodeConsolidation) compute(p *pass, eligible []*Candidate) []*Command {
	return p.multiNode(eligible)
}
func (multiNodeConsolidation) validate(p *pass, cmd *Command, fresh []*Candidate) error {
	return consolidationValidate(p, cmd, fresh)
}

type singleNodeConsolidation struct{}

func (singleNodeConsolidation) kind() Method                { return MethodSingleNode }
func (singleNodeConsolidation) reason() v1.DisruptionReason { return v1.DisruptionReasonUnderutilized }
func (singleNodeConsolidation) eventual() bool              { return false }
func (singleNodeConsolidation) consolidation() bool         { return true }
func (singleNodeConsolidation) shouldDisrupt(p *pass, cand *Candidate) bool {
	return consolidates(p, cand)
}
func (singleNodeConsolidation) compute(p *pass, eligible []*Candidate) []*Command {
	return p.singleNode(eligible)
}
func (singleNodeConsolidation) validate(p *pass, cmd *Command, fresh []*Candidate) error {
	return consolidationValidate(p, cmd, fresh)
}
