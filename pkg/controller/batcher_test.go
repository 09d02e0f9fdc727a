package controller

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
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
