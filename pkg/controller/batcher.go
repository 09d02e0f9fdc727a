package controller

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Batcher gathers triggers into batches as upstream's provisioner does: a
// batch starts with the first trigger and ends after idle without another,
// or max after its start, whichever comes first. It is safe for concurrent
// use: any goroutine may Trigger; one waits.
type Batcher struct {
	clk       clock.WithTicker
	idle, max time.Duration
	trigger   chan struct{}
	mu        sync.Mutex
	hold      time.Time // Extend's: no batch ends before it (but at its max)
	held      time.Time // Hold's, until Release: the same
	full      bool      // the last batch Wait returned ended at its max
}

// NewBatcher returns a Batcher timed by clk.
func NewBatcher(clk clock.WithTicker, idle, max time.Duration) *Batcher {
	return &Batcher{clk: clk, idle: idle, max: max, trigger: make(chan struct{}, 1)}
}

// Trigger starts a batch or extends the current one.
func (b *Batcher) Trigger() {
	select {
	case b.trigger <- struct{}{}:
	default: // one is already waiting to be seen
	}
}

// Extend starts a batch or extends the current one, as Trigger does, and
// holds it open for at least d from now — never past its max.
func (b *Batcher) Extend(d time.Duration) {
	b.mu.Lock()
	if until := b.clk.Now().Add(d); until.After(b.hold) {
		b.hold = until
	}
	b.mu.Unlock()
	b.Trigger()
}

// Hold starts a batch or extends the current one, as Trigger does, and
// holds it open until Release — never past its max, nor a max from now.
func (b *Batcher) Hold() {
	b.mu.Lock()
	b.held = b.clk.Now().Add(b.max)
	b.mu.Unlock()
	b.Trigger()
}

// Release ends Hold's hold: the batch, triggered now, ends idle from now
// (or at its max), unless an Extend's hold lasts longer — Release leaves
// that as it is.
func (b *Batcher) Release() {
	b.mu.Lock()
	b.held = time.Time{}
	b.mu.Unlock()
	b.Trigger()
}

// due is when a batch that started at first and was last triggered at
// last ends.
func (b *Batcher) due(first, last time.Time) time.Time {
	end := b.dueUncapped(last)
	if limit := first.Add(b.max); end.After(limit) {
		return limit
	}
	return end
}

// Full: the last batch Wait returned ended at its max, with triggers (or
// a hold) that would have kept it open longer.
func (b *Batcher) Full() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.full
}

// Wait blocks until a batch is complete (true) or ctx ends (false).
func (b *Batcher) Wait(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-b.trigger:
	}
	first := b.clk.Now()
	last := first
	timer := b.clk.NewTimer(b.due(first, first).Sub(first))
	defer func() { timer.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-b.trigger:
			last = b.clk.Now()
			timer.Stop()
			timer = b.clk.NewTimer(b.due(first, last).Sub(last))
		case <-timer.C():
			full := b.dueUncapped(last).After(first.Add(b.max))
			b.mu.Lock()
			b.full = full
			b.mu.Unlock()
			return true
		}
	}
}

// dueUncapped is when a batch last triggered at last would end with no
// max.
func (b *Batcher) dueUncapped(last time.Time) time.Time {
	end := last.Add(b.idle)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, h := range []time.Time{b.hold, b.held} {
		if h.After(end) {
			end = h
		}
	}
	return end
}
