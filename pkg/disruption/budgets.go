// Package disruption decides which nodes may be taken away, and when: the
// disruption budgets of a NodePool today; the voluntary methods (empty,
// drifted, consolidation) arrive with their issue. Pure code over values and
// an injected time.
package disruption

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// Reasons are the voluntary disruption reasons budgets can name.
var Reasons = []v1.DisruptionReason{v1.DisruptionReasonEmpty, v1.DisruptionReasonDrifted, v1.DisruptionReasonUnderutilized}

// PoolNodes is what a NodePool's budgets are computed over.
type PoolNodes struct {
	// Total is the number of the pool's nodes.
	Total int
	// Disrupting counts nodes already being disrupted, NotReady, or marked
	// for deletion: they count against every allowance.
	Disrupting int
}

// budgetNodesOf counts a pool's candidates as its budgets do. As
// upstream, only initialized nodes count, toward the total and toward
// those already disrupting (deleting, or not Ready).
func budgetNodesOf(pool []*Candidate) PoolNodes {
	var nodes PoolNodes
	for _, cand := range pool {
		if !cand.Initialized {
			continue
		}
		nodes.Total++
		if cand.Disrupting || cand.NotReady {
			nodes.Disrupting++
		}
	}
	return nodes
}

// Allowance is how many more nodes of a pool may be disrupted now for one
// reason, and which budget decides it.
type Allowance struct {
	Reason  v1.DisruptionReason
	Allowed int
	// Binding is the index in spec.disruption.budgets of the budget that
	// sets Allowed (the most restrictive active one); -1 when none applies
	// and disruption is unbounded.
	Binding int
	// Err is set when a budget could not be evaluated: it then allows 0.
	Err error
}

func (a Allowance) String() string {
	switch {
	case a.Err != nil:
		return fmt.Sprintf("%s: 0 allowed (budget %d cannot be evaluated: %v)", a.Reason, a.Binding, a.Err)
	case a.Binding < 0:
		return fmt.Sprintf("%s: unbounded (no budget applies)", a.Reason)
	default:
		return fmt.Sprintf("%s: %d allowed (budget %d binds)", a.Reason, a.Allowed, a.Binding)
	}
}

// Allowed computes, for the given reason, the minimum over the pool's
// budgets that are active at now and list that reason (or list none) of
// their node count — a number, or a percentage of Total rounded up — less
// the nodes already disrupting, floored at 0. The empty reason, a static
// NodePool's scale-down (see StaticScale), counts only the budgets that
// list none. A budget whose schedule or nodes cannot be parsed fails
// closed: it allows 0.
func Allowed(np *v1.NodePool, reason v1.DisruptionReason, nodes PoolNodes, now time.Time) Allowance {
	a := Allowance{Reason: reason, Allowed: math.MaxInt32, Binding: -1}
	for i := range np.Spec.Disruption.Budgets {
		b := &np.Spec.Disruption.Budgets[i]
		if !appliesTo(b, reason) {
			continue
		}
		n, err := budgetNodes(b, nodes.Total, now)
		if err != nil {
			return Allowance{Reason: reason, Allowed: 0, Binding: i, Err: err}
		}
		if n < a.Allowed {
			a.Allowed, a.Binding = n, i
		}
	}
	if a.Binding >= 0 {
		a.Allowed = max(a.Allowed-nodes.Disrupting, 0)
	}
	return a
}

// AllowedByReason computes the allowance for every reason.
func AllowedByReason(np *v1.NodePool, nodes PoolNodes, now time.Time) []Allowance {
	out := make([]Allowance, 0, len(Reasons))
	for _, r := range Reasons {
		out = append(out, Allowed(np, r, nodes, now))
	}
	return out
}

func appliesTo(b *v1.Budget, reason v1.DisruptionReason) bool {
	if len(b.Reasons) == 0 {
		return true
	}
	if reason == "" {
		return false
	}
	for _, r := range b.Reasons {
		if r == reason {
			return true
		}
	}
	return false
}

// budgetNodes is the budget's node count at now: unbounded outside its
// window, else its count or percentage of total (rounded up, like a PDB's
// maxUnavailable).
func budgetNodes(b *v1.Budget, total int, now time.Time) (int, error) {
	active, err := IsActive(b, now)
	if err != nil {
		return 0, err
	}
	if !active {
		return math.MaxInt32, nil
	}
	var v intstr.IntOrString
	if n, err := strconv.Atoi(b.Nodes); err == nil {
		v = intstr.FromInt32(int32(n))
	} else {
		if !strings.HasSuffix(b.Nodes, "%") {
			return 0, fmt.Errorf("nodes %q is neither a count nor a percentage", b.Nodes)
		}
		v = intstr.FromString(b.Nodes)
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, total, true)
	if err != nil {
		return 0, fmt.Errorf("nodes %q: %w", b.Nodes, err)
	}
	return n, nil
}

// Window reports whether the budget's window is open at now and when that
// next changes: when it closes if open, when it opens if not. An always
// active budget (no schedule) never changes: next is zero.
func Window(b *v1.Budget, now time.Time) (active bool, next time.Time, err error) {
	active, err = IsActive(b, now)
	if err != nil || b.Schedule == nil {
		return active, time.Time{}, err
	}
	sched, _ := cron.ParseStandard("TZ=UTC " + *b.Schedule) // IsActive parsed it
	now = now.UTC()
	if active {
		return true, sched.Next(now.Add(-b.Duration.Duration)).Add(b.Duration.Duration), nil
	}
	return false, sched.Next(now), nil
}

// IsActive reports whether the budget's window is open at now. A budget
// without schedule and duration is always active. The window opens at each
// schedule hit (UTC) and stays open for duration: it is open when the next
// hit after now−duration is not after now.
func IsActive(b *v1.Budget, now time.Time) (bool, error) {
	if b.Schedule == nil && b.Duration == nil {
		return true, nil
	}
	if b.Schedule == nil || b.Duration == nil {
		return false, fmt.Errorf("schedule and duration must be set together")
	}
	sched, err := cron.ParseStandard("TZ=UTC " + *b.Schedule)
	if err != nil {
		return false, fmt.Errorf("schedule %q: %w", *b.Schedule, err)
	}
	now = now.UTC()
	next := sched.Next(now.Add(-b.Duration.Duration))
	return !next.After(now), nil
}

// DescribeBudget renders spec.disruption.budgets[i] as a person reads it.
func DescribeBudget(np *v1.NodePool, i int) string {
	b := np.Spec.Disruption.Budgets[i]
	s := fmt.Sprintf("budgets[%d] (nodes %s", i, b.Nodes)
	if len(b.Reasons) > 0 {
		var rs []string
		for _, r := range b.Reasons {
			rs = append(rs, string(r))
		}
		s += ", reasons " + strings.Join(rs, ",")
	}
	if b.Schedule != nil && b.Duration != nil {
		s += fmt.Sprintf(", from %q for %s", *b.Schedule, b.Duration.Duration)
	}
	return s + ")"
}

// Explain says, for people, what the allowance holds back in np at now:
// "budgets[0] (nodes 10%, reasons Drifted) allows 0 Drifted disruptions
// until Mon 17:00 UTC".
func (a Allowance) Explain(np *v1.NodePool, now time.Time) string {
	switch {
	case a.Err != nil:
		return fmt.Sprintf("a budget that cannot be read allows no %s disruptions: %v", a.Reason, a.Err)
	case a.Binding < 0:
		return fmt.Sprintf("no budget limits %s disruptions", a.Reason)
	}
	s := fmt.Sprintf("%s allows %d %s disruption(s)", DescribeBudget(np, a.Binding), a.Allowed, a.Reason)
	if _, next, err := Window(&np.Spec.Disruption.Budgets[a.Binding], now); err == nil && !next.IsZero() {
		s += " until " + next.UTC().Format("Mon 15:04 MST")
	}
	return s
}
