package sim

import (
	"container/heap"
	"context"
	"fmt"
	"time"
)

// event is something that happens at a virtual time. Events at the same
// time run in the order they were scheduled, so runs are deterministic.
type event struct {
	at  time.Time
	seq uint64
	fn  func()
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// clock is the virtual clock and its agenda.
type clock struct {
	now   time.Time
	queue eventQueue
	seq   uint64
}

func (c *clock) at(t time.Time, fn func()) {
	if t.Before(c.now) {
		t = c.now
	}
	c.seq++
	heap.Push(&c.queue, &event{at: t, seq: c.seq, fn: fn})
}

func (c *clock) after(d time.Duration, fn func()) { c.at(c.now.Add(d), fn) }

// every runs fn at t0 and then every period until end.
func (c *clock) every(t0 time.Time, period time.Duration, end time.Time, fn func()) {
	var tick func()
	next := t0
	tick = func() {
		fn()
		next = next.Add(period)
		if next.Before(end) {
			c.at(next, tick)
		}
	}
	c.at(t0, tick)
}

// run processes events until end (inclusive of events at end).
func (c *clock) run(ctx context.Context, end time.Time, progress func(time.Time)) error {
	for n := 0; len(c.queue) > 0; n++ {
		if n%checkContextEvery == 0 && ctx.Err() != nil {
			return fmt.Errorf("the simulation stopped at %s: %w", c.now.UTC().Format(time.RFC3339), context.Cause(ctx))
		}
		e := heap.Pop(&c.queue).(*event)
		if e.at.After(end) {
			c.now = end
			return nil
		}
		c.now = e.at
		e.fn()
		if progress != nil {
			progress(c.now)
		}
	}
	c.now = end
	return nil
}

// checkContextEvery: how many events run between looks at the context (a
// look costs little, but a week's run has millions of events).
const checkContextEvery = 1024
