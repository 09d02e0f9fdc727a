package disruption

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// ValidationDelay is how long a consolidation decision waits before it is
// checked again against fresh state (upstream Karpenter waits 15 s).
const ValidationDelay = 15 * time.Second

// ReplacementState is how far a launched replacement has come.
type ReplacementState int

// Replacement states.
const (
	ReplacementPending ReplacementState = iota
	ReplacementInitialized
	ReplacementFailed
)

// Actions are what the host does for the queue: its writes to the cluster.
type Actions interface {
	// Launch creates a NodeClaim for the plan and returns its name.
	Launch(plan *provisioning.NodeClaimPlan) (string, error)
	// Replacement reports how far a launched NodeClaim has come.
	Replacement(name string) ReplacementState
	// DeleteReplacement removes a NodeClaim launched for an abandoned command.
	DeleteReplacement(name string) error
	// Taint puts karpenter.sh/disrupted:NoSchedule on a node; Untaint removes it.
	Taint(node string) error
	Untaint(node string) error
	// Terminate starts the node's termination (drain, then delete).
	Terminate(node string) error
}

// EventKind says what the queue did with a command.
type EventKind string

// What the queue does, in the order it does it.
const (
	// EventValidated: after ValidationDelay the command still holds.
	EventValidated EventKind = "validated"
	// EventCancelled: validation found the command no longer holds;
	// nothing had been done.
	EventCancelled EventKind = "cancelled"
	// EventTainted: the candidates carry karpenter.sh/disrupted.
	EventTainted EventKind = "tainted"
	// EventLaunched: the replacements were created.
	EventLaunched EventKind = "launched"
	// EventAbandoned: a step failed; what was done is undone (replacements
	// deleted, candidates untainted).
	EventAbandoned EventKind = "abandoned"
	// EventExecuted: the candidates' termination started.
	EventExecuted EventKind = "executed"
)

// Event is something the queue did, for logs, metrics and reports.
type Event struct {
	Time    time.Time
	Command *Command
	What    EventKind
	Detail  string
	// Err is the host's error that made the queue abandon the command (or,
	// for EventExecuted, that terminating a candidate returned), if any.
	Err error
}

type queued struct {
	cmd          *Command
	ready        time.Time // when validation may run
	validated    bool
	tainted      []string
	launched     bool
	replacements []string
	done         bool
}

// Queue carries commands out as upstream Karpenter does: a consolidation
// command waits ValidationDelay and is checked against fresh state (drift
// and interruption commands are not); then its candidates are tainted
// karpenter.sh/disrupted:NoSchedule, its replacements launched, and once
// they are initialized the candidates are terminated. When a step fails,
// exactly what was done is undone: the replacements launched are deleted
// and the candidates tainted are untainted. A Queue is not safe for
// concurrent use: one disruption controller owns it.
type Queue struct {
	Options Options
	items   []*queued
}

// Validates: the method's commands wait ValidationDelay and are checked
// again (consolidation's; drift and interruption act at once).
func Validates(m Method) bool {
	x := methodOf(m)
	return x != nil && x.consolidation()
}

// Add enqueues a command at now.
func (q *Queue) Add(cmd *Command, now time.Time) {
	q.items = append(q.items, &queued{cmd: cmd, ready: now.Add(ValidationDelay), validated: !Validates(cmd.Method)})
}

// Len is the number of commands not finished yet.
func (q *Queue) Len() int {
	n := 0
	for _, it := range q.items {
		if !it.done {
			n++
		}
	}
	return n
}

// Validating: a command waits for its validation. As upstream's
// disruption controller, a host computes no new command meanwhile: the
// candidates are not tainted yet, and a second pass would choose them
// again.
func (q *Queue) Validating() bool {
	for _, it := range q.items {
		if !it.done && !it.validated {
			return true
		}
	}
	return false
}

// NextValidation is when the first command waiting for its validation may
// be validated (zero when none waits).
func (q *Queue) NextValidation() time.Time {
	var next time.Time
	for _, it := range q.items {
		if !it.done && !it.validated && (next.IsZero() || it.ready.Before(next)) {
			next = it.ready
		}
	}
	return next
}

// AwaitingReplacements: a validated command waits for its replacements to
// initialize before its candidates are terminated.
func (q *Queue) AwaitingReplacements() bool {
	for _, it := range q.items {
		if !it.done && it.validated && it.launched && len(it.replacements) > 0 {
			return true
		}
	}
	return false
}

// Step advances every command as far as it can go at now. fresh returns the
// current cluster for validation.
func (q *Queue) Step(ctx context.Context, now time.Time, act Actions, fresh func() *Snapshot) []Event {
	var events []Event
	// The commands due for validation are validated first, against one
	// snapshot, before any of them acts: commands one pass decided
	// together (see BatchesSingleNode) are each checked on the cluster
	// they were decided for, not on one a batch-mate has just tainted
	// and whose replacement the snapshot does not show yet.
	var snap *Snapshot
	taken := map[string]int{} // the validated commands' nodes by pool: one budget for all
	for _, it := range q.items {
		if it.done || it.validated || now.Before(it.ready) {
			continue
		}
		if snap == nil {
			snap = fresh()
		}
		if err := revalidate(ctx, it.cmd, snap, q.Options, taken); err != nil {
			it.done = true
			events = append(events, Event{Time: now, Command: it.cmd, What: EventCancelled, Detail: err.Error()})
			continue
		}
		it.validated = true
		events = append(events, Event{Time: now, Command: it.cmd, What: EventValidated})
	}
	for _, it := range q.items {
		if !it.done {
			events = append(events, q.step(it, now, act)...)
		}
	}
	kept := q.items[:0]
	for _, it := range q.items {
		if !it.done {
			kept = append(kept, it)
		}
	}
	q.items = kept
	return events
}

func (q *Queue) step(it *queued, now time.Time, act Actions) []Event {
	var events []Event
	ev := func(what EventKind, detail string, err error) {
		events = append(events, Event{Time: now, Command: it.cmd, What: what, Detail: detail, Err: err})
	}
	if !it.validated {
		return nil // not due yet: Step validates the due ones first
	}
	if it.tainted == nil {
		it.tainted = []string{}
		for _, c := range it.cmd.Candidates {
			if err := act.Taint(c.Node.Name); err != nil {
				ev(EventAbandoned, "tainting "+c.Node.Name, q.rollBack(it, act, err))
				return events
			}
			it.tainted = append(it.tainted, c.Node.Name)
		}
		ev(EventTainted, fmt.Sprint(it.tainted), nil)
	}
	if !it.launched {
		it.launched = true
		for _, plan := range it.cmd.Replacements {
			name, err := act.Launch(plan)
			if err != nil {
				ev(EventAbandoned, "launching a replacement", q.rollBack(it, act, err))
				return events
			}
			it.replacements = append(it.replacements, name)
		}
		if len(it.replacements) > 0 {
			ev(EventLaunched, fmt.Sprint(it.replacements), nil)
		}
	}
	for _, name := range it.replacements {
		switch act.Replacement(name) {
		case ReplacementPending:
			return events
		case ReplacementFailed:
			ev(EventAbandoned, "replacement "+name+" failed to initialize", q.rollBack(it, act, fmt.Errorf("replacement %s failed to initialize", name)))
			return events
		}
	}
	it.done = true
	var errs []error
	for _, c := range it.cmd.Candidates {
		if err := act.Terminate(c.Node.Name); err != nil {
			errs = append(errs, fmt.Errorf("terminating %s: %w", c.Node.Name, err))
		}
	}
	ev(EventExecuted, "", errors.Join(errs...))
	return events
}

// rollBack undoes what the command did — deletes the replacements it
// launched, untaints the candidates it tainted — and returns cause with
// any error the undoing met.
func (q *Queue) rollBack(it *queued, act Actions, cause error) error {
	it.done = true
	errs := []error{cause}
	for _, name := range it.replacements {
		if err := act.DeleteReplacement(name); err != nil {
			errs = append(errs, fmt.Errorf("deleting replacement %s: %w", name, err))
		}
	}
	for _, name := range it.tainted {
		if err := act.Untaint(name); err != nil {
			errs = append(errs, fmt.Errorf("untainting %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// Revalidate checks a command against fresh state: every candidate must
// still be there, undisrupted, unblocked and within its budget, and the
// method must still choose to act on them the same way.
func Revalidate(ctx context.Context, cmd *Command, c *Snapshot, opts Options) error {
	return revalidate(ctx, cmd, c, opts, nil)
}

// revalidate is Revalidate with the nodes of each pool other commands
// validated on the same snapshot take from the budget first (taken, nil
// for none); a command that holds counts its own into taken.
func revalidate(ctx context.Context, cmd *Command, c *Snapshot, opts Options, taken map[string]int) error {
	p := newPass(ctx, c, opts)
	byName := map[string]*Candidate{}
	for _, cand := range c.Nodes {
		byName[cand.Node.Name] = cand
	}
	m := methodOf(cmd.Method)
	if m == nil {
		return fmt.Errorf("%s commands are not validated", cmd.Method)
	}
	graceful, eventual := p.eligible()
	cands := graceful
	if m.eventual() {
		cands = eventual
	}
	eligible := map[*Candidate]bool{}
	for _, cand := range cands {
		eligible[cand] = true
	}
	var fresh []*Candidate
	for _, old := range cmd.Candidates {
		cand, ok := byName[old.Node.Name]
		if !ok {
			return fmt.Errorf("node %s is gone", old.Node.Name)
		}
		if !eligible[cand] {
			return fmt.Errorf("node %s can no longer be disrupted", old.Node.Name)
		}
		fresh = append(fresh, cand)
	}
	if err := m.validate(p, cmd, fresh); err != nil {
		return err
	}
	need := map[string]int{}
	for _, cand := range fresh {
		need[cand.NodePool]++
	}
	for pool, n := range need {
		if p.remain[pool][cmd.Reason]-taken[pool] < n {
			return fmt.Errorf("NodePool %s's budget no longer allows %d %s disruption(s)", pool, n, cmd.Reason)
		}
	}
	if taken != nil {
		for pool, n := range need {
			taken[pool] += n
		}
	}
	return nil
}
