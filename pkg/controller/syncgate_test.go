package controller

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The gate stays shut, naming what is missing, until every source has
// synced and the last step succeeded; then it opens once and for all.
func TestSyncGate(t *testing.T) {
	g := newSyncGate()
	var pods, nodes atomic.Bool
	g.add("Pods", pods.Load)
	g.add("Nodes", nodes.Load)
	var throttled atomic.Bool
	throttled.Store(true)
	var completed atomic.Int32
	complete := func(context.Context) error {
		completed.Add(1)
		if throttled.Load() {
			return errors.New("NodePool general: throttled")
		}
		return nil
	}

	if err := g.check(nil); err == nil || !strings.Contains(err.Error(), "not started") {
		t.Fatalf("before the gate ran, /readyz says %v, want an error saying the informers have not started", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g.run(ctx, complete) }()

	// Each state is waited for through what the gate reports, not by time.
	waitFor := func(want string) {
		t.Helper()
		for {
			err := g.check(nil)
			if err != nil && strings.Contains(err.Error(), want) {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("/readyz never said %q (last: %v)", want, err)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	waitFor("waiting for Pods, Nodes")
	nodes.Store(true)
	waitFor("waiting for Pods")
	if g.synced() {
		t.Fatal("the gate opened with Pods not synced")
	}
	if completed.Load() != 0 {
		t.Fatal("the last step (instance types) ran before every source had synced")
	}
	pods.Store(true)
	waitFor("instance types (NodePool general: throttled)")
	if g.synced() {
		t.Fatal("the gate opened while the instance types were not known")
	}
	throttled.Store(false)
	if !g.wait(ctx) {
		t.Fatal("the gate did not open once everything had synced")
	}
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	if err := g.check(nil); err != nil {
		t.Fatalf("/readyz after the gate opened: %v", err)
	}
	// A source that falls behind later (a relist) does not shut it again:
	// the Store stays complete, kept by the same handlers.
	pods.Store(false)
	if !g.synced() || g.check(nil) != nil {
		t.Fatal("an open gate closed again")
	}
}

// A gate whose context ends before it opens says so to its waiters.
func TestSyncGateCancelled(t *testing.T) {
	g := newSyncGate()
	g.add("Pods", func() bool { return false })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.run(ctx, func(context.Context) error { return nil }) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run after its context ended: %v", err)
	}
	if g.synced() || g.wait(ctx) {
		t.Fatal("the gate opened although Pods never synced")
	}
}
