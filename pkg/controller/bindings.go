package controller

import (
	"sync"
	"time"
)

// bindingQuiet is how long after kube-scheduler's last binding of a pod to
// a node provisioning takes it to be done binding there (see
// bindings.busy).
const bindingQuiet = time.Second

// bindings is when kube-scheduler last bound a pod the controller had seen
// pending, per node: the informers' feed records it, provisioning reads it
// for the nodes launched for pending pods. Only bindings within
// bindingQuiet of the newest are kept. Safe for concurrent use.
type bindings struct {
	mu   sync.Mutex
	last map[string]time.Time // node name → its last binding
}

// bound records a binding to the node seen at now.
func (b *bindings) bound(node string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		b.last = map[string]time.Time{}
	}
	for n, t := range b.last {
		if !now.Before(t.Add(bindingQuiet)) {
			delete(b.last, n)
		}
	}
	b.last[node] = now
}

// busy: kube-scheduler bound a pod to one of the nodes within
// bindingQuiet of now — it is still binding there — and when the last of
// those quiets ends. Bindings elsewhere do not count: a drift's or a
// consolidation's evicted pods landing on other nodes do not keep
// kube-scheduler from having had its chance on these.
func (b *bindings) busy(now time.Time, nodes []string) (bool, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var end time.Time
	for _, n := range nodes {
		if t, ok := b.last[n]; ok && now.Before(t.Add(bindingQuiet)) && t.Add(bindingQuiet).After(end) {
			end = t.Add(bindingQuiet)
		}
	}
	return !end.IsZero(), end
}
