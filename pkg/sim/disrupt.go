package sim

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/termination"
)

const (
	// simulationsPerMethod bounds each consolidation method of a pass by
	// work, where a controller's are bounded by time: deterministic runs.
	simulationsPerMethod    = 15
	maxConsolidationBackoff = 5 * time.Minute
	drainEvery              = 5 * time.Second
	afterExecuted           = time.Second     // the controller's
	afterHeldExecuted       = disruptionEvery // the controller's
	queueEvery              = time.Second     // the controller's
	// forcedPassEvery: even when nothing changed, time passing can make a
	// node consolidatable, expire it, or open a budget window.
	forcedPassEvery = 5 * time.Minute
)

func (e *simulation) nodeByName(name string) *simNode { return e.byName[name] }

// disruptionCluster is the state disruption decides over.
func (e *simulation) disruptionCluster() *disruption.Snapshot {
	e.st.SetPDBs(e.pdbs())
	version := e.syncOfferings()
	c := e.st.DisruptionSnapshot(e.clk.now, func(nc *v1.NodeClaim) cloudprovider.DriftReason {
		why, _ := e.cloud.IsDrifted(context.Background(), nc)
		return why
	})
	return e.decider.Prepare(c, version)
}

// pdbs computes each PodDisruptionBudget's allowed disruptions from the
// pods it selects, as the disruption controller would.
func (e *simulation) pdbs() []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, pdb := range e.in.PDBs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		ns := podutil.Namespace(pdb.ObjectMeta)
		expected, healthy := 0, 0
		for _, w := range e.workloads {
			for _, p := range w.pods {
				if p.pod.Namespace == ns && sel.Matches(k8slabels.Set(p.pod.Labels)) {
					expected++
					if !p.running.IsZero() && e.nodeOf(p) != nil {
						healthy++
					}
				}
			}
		}
		desired := 0
		switch {
		case pdb.Spec.MinAvailable != nil:
			desired, _ = intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, expected, true)
		case pdb.Spec.MaxUnavailable != nil:
			mu, _ := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, expected, true)
			desired = expected - mu
		}
		cp := pdb.DeepCopy()
		cp.Namespace = ns
		cp.Status.DisruptionsAllowed = int32(max(0, healthy-desired))
		out = append(out, cp)
	}
	return out
}

// disrupt runs a disruption pass when something changed (or every few
// minutes regardless) and queues its commands.
func (e *simulation) disrupt() {
	due := !e.nextConsolidatable.IsZero() && !e.clk.now.Before(e.nextConsolidatable)
	if !e.dirty && !due && e.clk.now.Sub(e.rep.lastPass) < forcedPassEvery {
		return
	}
	if e.queue.Validating() {
		// As upstream's disruption controller: no new command while one
		// waits for its validation (its candidates are not tainted yet).
		return
	}
	changed := e.dirty
	e.dirty = false
	e.rep.lastPass = e.clk.now
	e.resolveBuffers()
	c := e.disruptionCluster()
	opts := e.queue.Options
	opts.Simulations = simulationsPerMethod
	// Consolidation simulates; when it last found nothing and the cluster
	// has not changed since, back off (10 s doubling to 5 min) — but no
	// later than a node's consolidateAfter ends: upstream's Consolidatable
	// condition turns true then, a change that makes consolidation look
	// again (without it a scale-in drained one budget's worth of nodes
	// every five minutes). A change (pods leaving, a node gone) makes it
	// look at the next pass, as the controller does: backtests of the
	// controller's runs showed the simulator a minute late on a scale-in.
	consolidate := changed || !e.clk.now.Before(e.nextConsolidation)
	opts.SkipConsolidation = !consolidate
	d := disruption.Compute(context.Background(), c, opts)
	e.held, e.leaving = d.HeldByBudget(), nil
	if consolidate {
		found := false
		for _, cmd := range d.Commands {
			found = found || cmd.Method == disruption.MethodSingleNode || cmd.Method == disruption.MethodMultiNode
		}
		if found || len(d.Commands) > 0 {
			e.consolidationBackoff = disruptionEvery
		} else {
			e.consolidationBackoff = min(2*max(e.consolidationBackoff, disruptionEvery), maxConsolidationBackoff)
		}
		e.nextConsolidation = e.clk.now.Add(e.consolidationBackoff)
	}
	e.nextConsolidatable = disruption.NextConsolidatable(c)
	if at := e.nextConsolidatable; !at.IsZero() && at.Before(e.nextConsolidation) {
		e.nextConsolidation = at
	}
	e.rep.disruptionPass(d)
	if d.LeavingKnown {
		e.markLeaving(d.Marks())
	}
	for _, cand := range d.Expired {
		if n := e.nodeByName(cand.Node.Name); n != nil && n.state == nodeReady {
			e.rep.disrupted(n, "Expired")
			e.startDrain(n, "Expired")
		}
	}
	for _, cmd := range d.Commands {
		e.queue.Add(cmd, e.clk.now)
	}
	e.scaleStatic(c)
	e.stepQueue()
}

// markLeaving puts disruption.ConsolidatingTaint on the nodes
// consolidation expects to take (disruption.Decision.Marks: the commands'
// candidates while they are validated, and the later rounds'),
// disruption.ConsolidatingNextTaint on those that leave first, and takes
// them off every other node, one write a node as the controller.
func (e *simulation) markLeaving(marks map[string]bool) {
	for _, n := range e.nodes {
		next, marked := marks[n.name]
		e.retaint(n, func(taints []corev1.Taint) ([]corev1.Taint, bool) {
			return disruption.WithMarks(taints, marked, next)
		})
	}
}

// scaleStatic keeps static NodePools at their replicas, as upstream's
// static provisioning and deprovisioning controllers: claims launched,
// surplus nodes drained and deleted (as many as the budgets allow, unless
// decisions are karpenter's).
func (e *simulation) scaleStatic(c *disruption.Snapshot) {
	ss := disruption.StaticScale(c)
	e.rep.staticScaling(ss)
	for _, s := range ss {
		for i := 0; i < s.Launch && s.Plan != nil; i++ {
			if _, err := e.launch(s.Plan, "static"); err != nil {
				break // the next pass tries again
			}
		}
		for _, cand := range s.Remove {
			if n := e.nodeByName(cand.Node.Name); n != nil {
				e.startDrain(n, "StaticScaleDown")
			}
		}
	}
}

func (e *simulation) stepQueue() {
	if e.queue.Len() == 0 {
		return
	}
	events := e.queue.Step(context.Background(), e.clk.now, simActions{e}, e.disruptionCluster)
	executed := false
	for _, ev := range events {
		if ev.What == disruption.EventExecuted {
			executed = true
			for _, cand := range ev.Command.Candidates {
				if n := e.nodeByName(cand.Node.Name); n != nil {
					e.rep.disrupted(n, string(ev.Command.Reason))
					if disruption.Validates(ev.Command.Method) { // as the controller's carriedOut
						e.leaving = append(e.leaving, n)
					}
				}
			}
		}
	}
	if executed {
		// As the controller: the next pass soon after a command is carried
		// out, not at the next polling tick.
		// When the decision left a candidate to a budget, or the command was
		// a consolidation's, the pass waits for the command's nodes to be
		// gone (a consolidation's: the last one gone wakes it; deleteNode,
		// holding), at most afterHeldExecuted.
		e.dirty = true
		if !e.held && !e.holding() {
			e.clk.after(afterExecuted, e.disrupt)
		} else {
			at := e.clk.now
			e.clk.after(afterHeldExecuted, func() {
				if !e.rep.lastPass.After(at) {
					e.disrupt()
				}
			})
		}
	}
	if e.queue.Len() > 0 && !e.queueArmed {
		// One timer chain, however many callers step the queue.
		e.queueArmed = true
		e.clk.after(queueEvery, func() {
			e.queueArmed = false
			e.stepQueue()
		})
	}
}

// holding is the controller's: a node a consolidation's command carried
// out since the last decision is not gone yet — it holds part of the
// budget the next pass would have.
func (e *simulation) holding() bool {
	for _, n := range e.leaving {
		if n.state != nodeGone {
			return true
		}
	}
	return false
}

type simActions struct{ e *simulation }

func (a simActions) Launch(plan *provisioning.NodeClaimPlan) (string, error) {
	n, err := a.e.launch(plan, "replacement")
	if err != nil {
		return "", err
	}
	return n.name, nil
}

func (a simActions) Replacement(name string) disruption.ReplacementState {
	n := a.e.nodeByName(name)
	switch {
	case n == nil || n.state == nodeGone:
		return disruption.ReplacementFailed
	case n.state == nodeReady:
		return disruption.ReplacementInitialized
	}
	return disruption.ReplacementPending
}

func (a simActions) DeleteReplacement(name string) error {
	if n := a.e.nodeByName(name); n != nil {
		a.e.deleteNode(n, "Abandoned")
	}
	return nil
}

func (a simActions) Taint(name string) error {
	if n := a.e.nodeByName(name); n != nil {
		a.e.setTaint(n, v1.DisruptedTaint, true)
	}
	return nil
}

func (a simActions) Untaint(name string) error {
	if n := a.e.nodeByName(name); n != nil && n.drainStarted.IsZero() {
		a.e.setTaint(n, v1.DisruptedTaint, false)
	}
	return nil
}

func (a simActions) Terminate(name string) error {
	if n := a.e.nodeByName(name); n != nil {
		a.e.startDrain(n, "Disrupted")
	}
	return nil
}

// startDrain begins termination: cordon, then evict in order until the node
// is empty or its terminationGracePeriod runs out.
func (e *simulation) startDrain(n *simNode, reason string) {
	if n.state == nodeGone || !n.drainStarted.IsZero() {
		return
	}
	n.state = nodeDraining
	n.drainStarted = e.clk.now
	e.syncNode(n)
	n.drainReason = reason
	e.dirty = true
	e.drainStep(n)
}

func (e *simulation) drainStep(n *simNode) {
	if n.state == nodeGone {
		return
	}
	d := termination.Drain{Started: n.drainStarted, PDBs: e.pdbs()}
	if g := n.claim.Spec.TerminationGracePeriod; g != nil {
		d.GracePeriod = &g.Duration
	}
	byPod := map[string]*simPod{}
	for _, p := range e.podsOn(n) {
		d.Pods = append(d.Pods, p.pod)
		byPod[p.pod.Name] = p
	}
	st := termination.Next(d, e.clk.now)
	if st.Done {
		e.deleteNode(n, n.drainReason)
		e.armBatch()
		return
	}
	for _, p := range append(st.Evict, st.Delete...) {
		if sp := byPod[p.Name]; sp != nil {
			e.rep.evicted()
			e.removePod(sp, podEvicted)
		}
	}
	e.clk.after(drainEvery, func() { e.drainStep(n) })
}
