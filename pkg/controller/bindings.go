package controller

import (
	"sync/atomic"
	"time"
)

// bindingQuiet is how long after kube-scheduler's last binding of a pod
// provisioning takes it to be done binding (see bindings.busy).
const bindingQuiet = time.Second

// bindings is when kube-scheduler last bound a pod the controller had seen
// pending: the informers' feed records it, provisioning reads it. Safe for
// concurrent use.
type bindings struct {
	last atomic.Int64 // UnixNano; 0: none seen
}

// bound records a binding seen at now.
func (b *bindings) bound(now time.Time) { b.last.Store(now.UnixNano()) }

// busy: kube-scheduler bound a pod within bindingQuiet of now — it is
// still binding — and when that quiet ends.
func (b *bindings) busy(now time.Time) (bool, time.Time) {
	last := b.last.Load()
	if last == 0 {
		return false, time.Time{}
	}
	end := time.Unix(0, last).Add(bindingQuiet)
	return now.Before(end), end
}
