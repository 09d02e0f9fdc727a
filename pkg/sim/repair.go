package sim

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
)

// unreachableEviction is how long pods stay on a node that stopped
// reporting: the default tolerationSeconds of node.kubernetes.io/unreachable
// that admission gives every pod, after which the node lifecycle controller
// evicts them. DaemonSet pods tolerate it for good.
const unreachableEviction = 5 * time.Minute

// unreachableTaints are what the node lifecycle controller puts on a node
// whose kubelet stopped reporting.
var unreachableTaints = []corev1.Taint{
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
}

// armFailure draws when a node that just became ready fails, at the
// scenario's rate (nothing is drawn without one: runs without the fault
// take the same random numbers as before it existed).
func (e *simulation) armFailure(n *simNode) {
	rate := e.in.Scenario.Spec.Faults.NodeFailuresPerNodeHour
	if rate <= 0 {
		return
	}
	wait := time.Duration(e.rng.ExpFloat64() / rate * float64(time.Hour))
	e.clk.after(wait, func() { e.fail(n) })
}

// fail is a node whose kubelet stops reporting: Ready Unknown, the
// unreachable taints, its pods evicted after unreachableEviction, and
// node repair asked again.
func (e *simulation) fail(n *simNode) {
	if n.state != nodeReady || e.disrupting(n) || !n.failedAt.IsZero() {
		return
	}
	n.failedAt = e.clk.now
	e.rep.repairs.Failed++
	e.syncNode(n)
	e.dirty = true
	e.clk.after(unreachableEviction, func() {
		if n.state == nodeGone {
			return
		}
		for _, p := range e.podsOn(n) {
			if !podutil.IsDaemonSetPod(p.pod) {
				e.removePod(p, podEvicted)
			}
		}
	})
	e.armRepair(e.clk.now)
}

// armRepair runs node repair at t (once, however often it is asked for).
func (e *simulation) armRepair(t time.Time) {
	if !e.repairAt.IsZero() && !e.repairAt.After(t) {
		return
	}
	e.repairAt = t
	e.clk.at(t, func() {
		if !e.repairAt.Equal(t) {
			return // asked for earlier since
		}
		e.repairAt = time.Time{}
		e.repair()
	})
}

// repair is upstream's node health controller over the simulated cluster
// (disruption.Repairs): due nodes have their claims deleted, their pods
// replaced; a NodePool held back is asked again in a minute (upstream asks
// on the next Node event).
func (e *simulation) repair() {
	d := disruption.Repairs(e.disruptionCluster(), e.cloud.RepairPolicies())
	for _, r := range d.Replace {
		n := e.nodeByName(r.Candidate.Node.Name)
		if n == nil || n.state == nodeGone {
			continue
		}
		e.rep.repairs.Replaced++
		e.rep.disrupted(n, disruption.ReasonUnhealthy)
		e.deleteNode(n, disruption.ReasonUnhealthy)
		e.armBatch()
	}
	next := d.Next
	for range d.Held {
		e.rep.repairs.Held++
	}
	if len(d.Held) > 0 {
		if t := e.clk.now.Add(time.Minute); next.IsZero() || t.Before(next) {
			next = t
		}
	}
	if !next.IsZero() {
		e.armRepair(next)
	}
}
