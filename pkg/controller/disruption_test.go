package controller

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// TestNextPass: the disruption loop's next decision is due at the polling
// period; a second after a command was carried out (upstream goes on at
// once); and when a queued command's validation is due, if that is sooner.
func TestNextPass(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	d := &disrupter{clock: clk}
	due := t0.Add(disruptionEvery)
	if got := d.nextPass(nil, due); !got.Equal(due) {
		t.Errorf("nothing happened: next pass at %s, want the polling period's %s", got, due)
	}
	executed := []disruption.Event{{What: disruption.EventTainted}, {What: disruption.EventExecuted}}
	if got := d.nextPass(executed, due); !got.Equal(t0.Add(afterExecuted)) {
		t.Errorf("a command carried out: next pass at %s, want %s", got, t0.Add(afterExecuted))
	}
	// Its decision left a candidate to a budget: the pass waits for the
	// command's nodes to be gone (claimGone wakes it), at most
	// afterHeldExecuted.
	d.held = (&disruption.Decision{Blocked: []disruption.Blocked{{Node: "n", Reason: disruption.BlockReason{Code: disruption.BlockBudget}}}}).HeldByBudget()
	if got := d.nextPass(executed, due); !got.Equal(t0.Add(afterHeldExecuted)) {
		t.Errorf("a command carried out, its decision held by a budget: next pass at %s, want %s", got, t0.Add(afterHeldExecuted))
	}
	d.held = (&disruption.Decision{Blocked: []disruption.Blocked{{Node: "n", Reason: disruption.BlockReason{Code: disruption.BlockPodDoNotDisrupt}}}}).HeldByBudget()
	if got := d.nextPass(executed, due); !got.Equal(t0.Add(afterExecuted)) {
		t.Errorf("a command carried out, its decision blocked only by a pod: next pass at %s, want %s", got, t0.Add(afterExecuted))
	}
	// A consolidation's command: its NodeClaims are waited for (holding),
	// its decision held by a budget or not.
	consolidated := []disruption.Event{{What: disruption.EventExecuted, Command: &disruption.Command{Method: disruption.MethodSingleNode}}}
	if got := d.nextPass(consolidated, due); !got.Equal(t0.Add(afterHeldExecuted)) {
		t.Errorf("a consolidation carried out, its decision not held: next pass at %s, want %s", got, t0.Add(afterHeldExecuted))
	}
	d.queue.Add(&disruption.Command{Method: disruption.MethodSingleNode}, t0)
	if got := d.nextPass(nil, due); !got.Equal(due) {
		t.Errorf("a validation due after the polling period: next pass at %s, want %s", got, due)
	}
	clk.Step(disruptionEvery)
	later := clk.Now().Add(disruptionEvery)
	if want := t0.Add(disruption.ValidationDelay); !d.nextPass(nil, later).Equal(want) {
		t.Errorf("a validation due before the next poll: next pass at %s, want %s", d.nextPass(nil, later), want)
	}
}

// TestWokenPass: a NodeClaim gone brings the next pass forward to now —
// but not sooner than afterExecuted after the last pass, and never later
// than it was due; claimGone never blocks, however often it is called.
func TestWokenPass(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	d := &disrupter{clock: clk, wake: make(chan struct{}, 1)}
	last := t0.Add(-5 * time.Second)
	if got := d.woken(last, last.Add(disruptionEvery)); !got.Equal(t0) {
		t.Errorf("woken 5 s after a pass: next pass at %s, want now (%s)", got, t0)
	}
	last = t0.Add(-afterExecuted / 2)
	if got, want := d.woken(last, last.Add(disruptionEvery)), last.Add(afterExecuted); !got.Equal(want) {
		t.Errorf("woken right after a pass: next pass at %s, want %s", got, want)
	}
	due := t0.Add(afterExecuted / 4)
	if got := d.woken(last, due); !got.Equal(due) {
		t.Errorf("woken with a pass due sooner: next pass at %s, want %s", got, due)
	}
	for range 3 {
		d.claimGone()
	}
	if len(d.wake) != 1 {
		t.Errorf("three claims gone: %d wake-ups pending, want 1", len(d.wake))
	}
	(&disrupter{}).claimGone() // no loop to wake: a no-op
}

// TestAwaitLastOfCommand: after a consolidation's command carried out, a
// NodeClaim gone brings the next pass forward only when it was the last
// of the command's: the others still hold their part of the budget. A
// drift's are not waited for; the timer and ctx end the wait as ever.
func TestAwaitLastOfCommand(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	store := state.NewStore(state.WaitForScheduler)
	for _, name := range []string{"a", "b", "c", "d"} {
		store.SetNodeClaim(&v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	// wake is unbuffered here: a send returns once await has taken it.
	d := &disrupter{clock: clk, store: store, wake: make(chan struct{})}
	d.held = true
	d.carriedOut(&disruption.Command{Method: disruption.MethodMultiNode, Candidates: []*disruption.Candidate{
		{NodeClaim: &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a"}}},
		{NodeClaim: &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "b"}}},
	}})

	// A drift's command acts at once: its NodeClaim (d, there to the end)
	// is not waited for.
	d.carriedOut(&disruption.Command{Method: disruption.MethodDrift, Candidates: []*disruption.Candidate{
		{NodeClaim: &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "d"}}},
	}})

	store.DeleteNodeClaim("a")
	if !d.holding() {
		t.Error("a gone, b left: not holding, want holding")
	}
	store.DeleteNodeClaim("c")
	if !d.holding() {
		t.Error("c (not the command's) gone, b left: not holding, want holding")
	}

	type result struct{ woken, done bool }
	run := func(ctx context.Context) chan result {
		out := make(chan result, 1)
		timer := clk.NewTimer(afterHeldExecuted)
		go func() {
			w, dn := d.await(ctx, timer)
			out <- result{w, dn}
		}()
		return out
	}
	// Holding: a wake-up does not end the wait — a second is taken, so the
	// first was looked at and waited past — and the timer does.
	out := run(context.Background())
	for i := range 2 {
		select {
		case d.wake <- struct{}{}:
		case r := <-out:
			t.Fatalf("holding, wake-up %d: the wait ended (%+v), want it to go on", i, r)
		}
	}
	clk.Step(afterHeldExecuted)
	if r := <-out; r.woken || r.done {
		t.Errorf("holding, then the timer: %+v, want neither woken nor done", r)
	}

	store.DeleteNodeClaim("b")
	if d.holding() {
		t.Error("the consolidation's NodeClaims all gone, the drift's left: holding, want not")
	}
	out = run(context.Background())
	d.wake <- struct{}{}
	if r := <-out; !r.woken || r.done {
		t.Errorf("the command's last NodeClaim gone: %+v, want woken", r)
	}

	// A decision no budget held: the consolidation's NodeClaims are waited
	// for all the same — the next decision may be held.
	store.SetNodeClaim(&v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "b"}})
	d.held = false
	if !d.holding() {
		t.Error("no held decision, the consolidation's b back: not holding, want holding")
	}

	ctx, cancel := context.WithCancel(context.Background())
	out = run(ctx)
	cancel()
	if r := <-out; !r.done {
		t.Errorf("ctx ended: %+v, want done", r)
	}
}
