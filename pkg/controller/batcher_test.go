package controller

import (
	"context"
	"io"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joiner-autoscaler/joiner/pkg/state"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// TestBatchWindow: a batch ends 1 s after its last trigger, but no later
// than 10 s after its first.
func TestBatchWindow(t *testing.T) {
	b := NewBatcher(clocktesting.NewFakeClock(t0), time.Second, 10*time.Second)
	for _, tc := range []struct {
		last time.Duration
		want time.Duration
	}{{0, time.Second}, {500 * time.Millisecond, 1500 * time.Millisecond}, {9 * time.Second, 10 * time.Second}, {9500 * time.Millisecond, 10 * time.Second}} {
		if got := b.due(t0, t0.Add(tc.last)).Sub(t0); got != tc.want {
			t.Errorf("last trigger at %s: due at %s, want %s", tc.last, got, tc.want)
		}
	}
}

// TestBatcherWaits: Wait returns when the fake clock reaches the batch's
// end, not before.
func TestBatcherWaits(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	b := NewBatcher(clk, time.Second, 10*time.Second)
	done := make(chan bool, 1)
	b.Trigger()
	go func() { done <- b.Wait(context.Background()) }()
	for !clk.HasWaiters() { // Wait has armed its timer
		select {
		case <-done:
			t.Fatal("returned before any time passed")
		default:
		}
	}
	clk.Step(999 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("returned before 1 s idle")
	default:
	}
	clk.Step(time.Millisecond)
	if !<-done {
		t.Fatal("want the batch complete")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if b.Wait(ctx) {
		t.Fatal("an ended context ends Wait")
	}
}

// TestBatchFull: Full says whether the batch Wait returned ended at its
// max with triggers still coming, not an idle after the last.
func TestBatchFull(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	b := NewBatcher(clk, time.Second, 10*time.Second)
	// batch triggers a batch, then again every 400 ms, triggers times,
	// and steps the clock 400 ms at a time until the batch ends: the
	// timer a trigger replaces is always 600 ms away, so no step fires it.
	batch := func(triggers int) bool {
		t.Helper()
		done := make(chan bool, 1)
		b.Trigger()
		go func() { done <- b.Wait(context.Background()) }()
		for i := 0; ; i++ {
			for !clk.HasWaiters() { // Wait has armed its timer, or returned
				select {
				case ok := <-done:
					if !ok {
						t.Fatal("want the batch complete")
					}
					return b.Full()
				default:
				}
			}
			if i < triggers {
				b.Trigger()
				for len(b.trigger) > 0 { // Wait has taken it
				}
			}
			clk.Step(400 * time.Millisecond)
		}
	}
	if batch(3) {
		t.Error("a batch that went idle 1 s after its last trigger reads full")
	}
	if !batch(100) {
		t.Error("a batch triggered every 400 ms until its 10 s max does not read full")
	}
	if batch(0) {
		t.Error("the next batch, idle after one trigger, still reads full")
	}
}

// TestBatchExtend: Extend holds a batch open past its idle end, never past
// its max; a trigger after the hold ends it an idle later as before.
func TestBatchExtend(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	b := NewBatcher(clk, time.Second, 10*time.Second)
	b.Extend(3 * time.Second)
	if got := b.due(t0, t0).Sub(t0); got != 3*time.Second {
		t.Errorf("held 3 s at the start: due at %s, want 3s", got)
	}
	if got := b.due(t0, t0.Add(2500*time.Millisecond)).Sub(t0); got != 3500*time.Millisecond {
		t.Errorf("a trigger at 2.5 s: due at %s, want 3.5s", got)
	}
	b.Extend(20 * time.Second)
	if got := b.due(t0, t0).Sub(t0); got != 10*time.Second {
		t.Errorf("held 20 s: due at %s, want the batch's max, 10s", got)
	}
	clk.Step(time.Minute) // a later batch: the old hold is past
	if got := b.due(clk.Now(), clk.Now()).Sub(clk.Now()); got != time.Second {
		t.Errorf("a later batch: due after %s, want the idle 1s", got)
	}
}

// TestWatchBreakHoldsTheBatch: a broken watch, told through the cache's
// error handler, holds the batch open: the pods' until the next pod event
// comes (at most the batch's max), another kind's for its relist
// (relistWait). A cache made without a WatchBreaks only logs.
func TestWatchBreakHoldsTheBatch(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	b := NewBatcher(clk, time.Second, 10*time.Second)
	f := &storeFeed{store: state.NewStore(state.WaitForScheduler), batch: b, clock: clk}
	breaks := &WatchBreaks{}
	breaks.on(f.watchBroke) // as the controller wires it
	triggered := func() bool {
		select {
		case <-b.trigger:
			return true
		default:
			return false
		}
	}
	reflector := func(obj runtime.Object) *toolscache.Reflector {
		return toolscache.NewReflector(&toolscache.ListWatch{}, obj, toolscache.NewStore(toolscache.MetaNamespaceKeyFunc), 0)
	}
	CacheOptions(breaks).DefaultWatchErrorHandler(context.Background(), reflector(&corev1.Node{}), io.ErrUnexpectedEOF)
	if got := b.due(t0, t0).Sub(t0); got != relistWait || !triggered() {
		t.Errorf("after the Nodes' watch broke the batch is due after %s, want %s, and started", got, relistWait)
	}
	clk.Step(relistWait)
	now := clk.Now()
	CacheOptions(breaks).DefaultWatchErrorHandler(context.Background(), reflector(&corev1.Pod{}), io.ErrUnexpectedEOF)
	if got := b.due(now, now).Sub(now); got != 10*time.Second || !triggered() {
		t.Errorf("after the pods' watch broke the batch is due after %s, want its max, and started", got)
	}
	clk.Step(3 * time.Second) // longer than relistWait: the relist is slow
	now = clk.Now()
	if got := b.due(now.Add(-3*time.Second), now).Sub(now); got != 7*time.Second {
		t.Errorf("with no pod event since the break the batch is due after %s, want the rest of its max", got)
	}
	f.podChanged(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "listed", Namespace: "default"}})
	if got := b.due(now, now).Sub(now); got != time.Second || !triggered() {
		t.Errorf("after the first pod event the batch is due after %s, want the idle 1s, and triggered", got)
	}
	CacheOptions(nil).DefaultWatchErrorHandler(context.Background(), reflector(&corev1.Pod{}), io.ErrUnexpectedEOF) // logs, no panic
}

// TestPodEventKeepsAnotherKindsHold: a pod event after a break of the
// pods' watch ends that hold only; the Nodes' watch, broken just before,
// still holds the batch for its relist.
func TestPodEventKeepsAnotherKindsHold(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	b := NewBatcher(clk, time.Second, 10*time.Second)
	f := &storeFeed{store: state.NewStore(state.WaitForScheduler), batch: b, clock: clk}
	f.watchBroke("*v1.Node")
	f.watchBroke(podsKind)
	clk.Step(500 * time.Millisecond)
	now := clk.Now()
	f.podChanged(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "listed", Namespace: "default"}})
	if got, want := b.due(t0, now), t0.Add(relistWait); !got.Equal(want) {
		t.Errorf("after the pod event the batch is due %s after the breaks, want %s (the Nodes' relistWait)", got.Sub(t0), relistWait)
	}
}
