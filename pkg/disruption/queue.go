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

// MethodInterruption marks a command made for a spot interruption notice.
const MethodInterruption = "interruption"

// ReplacementState is how far a launched replacement has come.
type ReplacementState int

// Replacement states.
const (
	ReplacementPending ReplacementState = iota
	ReplacementInitialized
	ReplacementFailed
)

// Actions are what the host (controller or simulator) does for the queue.
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

// Event is something the queue did, for logs, metrics and reports.
type Event struct {
	Time    time.Time
	Command *Command
	What    string // "validated", "cancelled", "launched", "abandoned", "executed"
	Detail  string
}

type queued struct {
	cmd          *Command
	ready        time.Time // when validation may run
	validated    bool
	replacements []string
	done         bool
}

// Queue executes commands replacement-first: a command waits
// ValidationDelay and is re-checked against fresh state; then its
// replacements are launched and must initialize before the candidates are
// tainted and terminated. A replacement that fails abandons the command:
// the launched replacements are deleted and the candidates untainted.
type Queue struct {
	Options Options
	items   []*queued
}

// Add enqueues a command at now. Interruption commands skip validation.
func (q *Queue) Add(cmd *Command, now time.Time) {
	q.items = append(q.items, &queued{cmd: cmd, ready: now.Add(ValidationDelay), validated: cmd.Method == MethodInterruption})
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

// Step advances every command as far as it can go at now. fresh returns the
// current cluster for validation.
func (q *Queue) Step(ctx context.Context, now time.Time, act Actions, fresh func() *Cluster) []Event {
	var events []Event
	ev := func(it *queued, what, detail string) {
		events = append(events, Event{Time: now, Command: it.cmd, What: what, Detail: detail})
	}
	for _, it := range q.items {
		if it.done {
			continue
		}
		if !it.validated {
			if now.Before(it.ready) {
				continue
			}
			if err := Revalidate(ctx, it.cmd, fresh(), q.Options); err != nil {
				it.done = true
				ev(it, "cancelled", err.Error())
				continue
			}
			it.validated = true
			ev(it, "validated", "")
		}
		if it.replacements == nil && len(it.cmd.Replacements) > 0 {
			for _, plan := range it.cmd.Replacements {
				name, err := act.Launch(plan)
				if err != nil {
					q.abandon(it, act)
					ev(it, "abandoned", fmt.Sprintf("launching a replacement: %v", err))
					break
				}
				it.replacements = append(it.replacements, name)
			}
			if it.done {
				continue
			}
			ev(it, "launched", fmt.Sprint(it.replacements))
		}
		if it.cmd.Method == MethodInterruption {
			// The node is going in two minutes: drain now, do not wait.
			q.execute(it, act)
			ev(it, "executed", "interruption: drained without waiting for replacements")
			continue
		}
		ready, failed := true, ""
		for _, name := range it.replacements {
			switch act.Replacement(name) {
			case ReplacementPending:
				ready = false
			case ReplacementFailed:
				failed = name
			}
		}
		if failed != "" {
			q.abandon(it, act)
			ev(it, "abandoned", "replacement "+failed+" failed to initialize")
			continue
		}
		if !ready {
			continue
		}
		q.execute(it, act)
		ev(it, "executed", "")
	}
	return events
}

func (q *Queue) execute(it *queued, act Actions) {
	for _, c := range it.cmd.Candidates {
		_ = act.Taint(c.Node.Name)
		_ = act.Terminate(c.Node.Name)
	}
	it.done = true
}

func (q *Queue) abandon(it *queued, act Actions) {
	for _, name := range it.replacements {
		_ = act.DeleteReplacement(name)
	}
	for _, c := range it.cmd.Candidates {
		_ = act.Untaint(c.Node.Name)
	}
	it.done = true
}

// Revalidate checks a command against fresh state: every candidate must
// still be there, undisrupted, unblocked and within its budget, and the
// method must still choose to act on them the same way.
func Revalidate(ctx context.Context, cmd *Command, c *Cluster, opts Options) error {
	p := newPass(ctx, c, opts)
	byName := map[string]*Candidate{}
	for _, cand := range c.Nodes {
		byName[cand.Node.Name] = cand
	}
	graceful, eventual := p.eligible()
	cands := graceful
	if cmd.Method == MethodDrift {
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
	switch cmd.Method {
	case MethodEmpty:
		for _, cand := range fresh {
			if len(reschedulable(cand.Node)) > 0 || !p.consolidatable(cand) {
				return fmt.Errorf("node %s is no longer empty", cand.Node.Name)
			}
		}
	case MethodDrift:
		if p.driftReason(fresh[0]) == "" {
			return fmt.Errorf("node %s is no longer drifted", fresh[0].Node.Name)
		}
	case MethodSingleNode, MethodMultiNode:
		if c.PendingPods > 0 {
			return fmt.Errorf("%d pods are waiting for capacity", c.PendingPods)
		}
		for _, cand := range fresh {
			if !p.consolidatable(cand) {
				return fmt.Errorf("a pod was scheduled to or removed from node %s", cand.Node.Name)
			}
		}
		again := p.consolidate(ctx, fresh, cmd.Method)
		if again == nil || len(again.Replacements) != len(cmd.Replacements) {
			return errors.New("consolidation no longer pays off the same way")
		}
		cmd.Replacements = again.Replacements
	}
	need := map[string]int{}
	for _, cand := range fresh {
		need[cand.NodePool]++
	}
	for pool, n := range need {
		if p.remain[pool][cmd.Reason] < n {
			return fmt.Errorf("NodePool %s's budget no longer allows %d %s disruption(s)", pool, n, cmd.Reason)
		}
	}
	return nil
}

// Interruption makes the command for a spot interruption notice on node:
// drain it at once and launch replacement capacity for its pods, whatever
// the budgets and blockers say (the node goes in two minutes regardless).
func Interruption(ctx context.Context, c *Cluster, node string) (*Command, error) {
	p := newPass(ctx, c, Options{})
	for _, cand := range c.Nodes {
		if cand.Node.Name != node {
			continue
		}
		res, _ := p.simulate(ctx, []*Candidate{cand})
		return &Command{Method: MethodInterruption, Reason: "Interrupted", Candidates: []*Candidate{cand}, Replacements: res.NewNodeClaims}, nil
	}
	return nil, fmt.Errorf("interruption notice for unknown node %s", node)
}
