package sim

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/buffer"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	simcloud "github.com/joiner-autoscaler/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// armBatch starts or extends a provisioning batch window.
func (e *simulation) armBatch() {
	now := e.clk.now
	if !e.batchArmed {
		e.batchArmed = true
		e.batchFirst = now
	}
	e.batchLast = now
	fire := e.batchLast.Add(batchIdle)
	if limit := e.batchFirst.Add(batchMax); fire.After(limit) {
		fire = limit
	}
	if !e.batchTimer.IsZero() && !e.batchTimer.Before(fire) {
		return // a timer at or after fire is already set and will re-check
	}
	e.batchTimer = fire
	e.clk.at(fire, func() {
		e.batchTimer = time.Time{}
		if !e.batchArmed {
			return
		}
		due := e.batchLast.Add(batchIdle)
		if limit := e.batchFirst.Add(batchMax); due.After(limit) {
			due = limit
		}
		if e.clk.now.Before(due) {
			e.batchArmed = true
			e.armBatchAt(due)
			return
		}
		e.batchArmed = false
		e.provision()
	})
}

// armBatchAt re-arms the batch timer for a later due time.
func (e *simulation) armBatchAt(due time.Time) {
	e.batchTimer = due
	e.clk.at(due, func() {
		e.batchTimer = time.Time{}
		if !e.batchArmed {
			return
		}
		e.batchArmed = false
		e.provision()
	})
}

// provision runs the real provisioning scheduler over the pending pods and
// launches what it plans.
func (e *simulation) provision() {
	e.resolveBuffers()
	if len(e.pending) == 0 && len(e.buf.pods) == 0 {
		return
	}
	version := e.syncOfferings()
	snap, repacked := e.st.ProvisioningSnapshots()
	_, byPod := e.pendingPods()
	// Pods the launch-loop guard gave up on are not in the snapshot; a
	// CapacityBuffer's virtual pods are, though the simulator has no pod
	// of theirs.
	untried := func(p *corev1.Pod) bool {
		if sp := byPod[p]; sp != nil {
			return !sp.tried // kube-scheduler has not got to it yet
		}
		return !buffer.IsVirtual(p)
	}
	snap.Pods = slices.DeleteFunc(snap.Pods, untried)
	if repacked != nil {
		repacked.Pods = slices.DeleteFunc(repacked.Pods, untried)
	}
	if len(snap.Pods) == 0 {
		return
	}
	res := e.decider.ProvisionPinned(context.Background(), snap, repacked, version)
	e.placedBuffers(res)
	for _, pe := range res.Unschedulable {
		if sp := byPod[pe.Pod]; sp != nil {
			sp.reason = pe.Reason
		}
	}
	if e.opts.OnProvision != nil {
		e.launches = []Launch{}
	}
	// The controller's wait for kube-scheduler's binding (Policy.WaitsForBinding)
	// is not modelled: a gap the backtest measures.
	plans := e.st.Unawaited(res.NewNodeClaims, false)
	var cohort *launchCohort
	if len(plans) > 1 && e.decider.Policy().LaunchCohorts() {
		e.cohortSeq++
		cohort = &launchCohort{name: "c" + strconv.Itoa(e.cohortSeq)}
	}
	for _, plan := range plans {
		if n, err := e.launchIn(plan, "provisioning", cohort); err == nil {
			e.st.LaunchedFor(n.name, plan.Pods)
		}
	}
	if slices.ContainsFunc(res.Unschedulable, (*provisioning.PodError).Deferred) {
		// Upstream's next pass sees what the launches left of the
		// reservations: into what remains, or on to on-demand and spot.
		e.armBatch()
	}
	if e.opts.OnProvision != nil {
		e.opts.OnProvision(ProvisioningPass{At: e.clk.now, Snapshot: snap, Launches: e.launches})
		e.launches = nil
	}
}

// launch creates a NodeClaim for the plan and asks the simulated EC2 for
// an instance: the cheapest offering of the plan's instance types, falling
// back type by type when capacity is short.
func (e *simulation) launch(plan *provisioning.NodeClaimPlan, why string) (*simNode, error) {
	return e.launchIn(plan, why, nil)
}

// launchIn is launch for a member of a launch cohort (nil: none).
func (e *simulation) launchIn(plan *provisioning.NodeClaimPlan, why string, cohort *launchCohort) (*simNode, error) {
	e.nodeSeq++
	nc := state.NewNodeClaim(plan, fmt.Sprintf("%s-%05d", plan.NodePool.Name, e.nodeSeq), metav1.NewTime(e.clk.now))
	if cohort != nil {
		state.SetCohort(nc, cohort.name)
	}
	created, err := e.cloud.Create(context.Background(), nc)
	if e.launches != nil {
		e.launches = append(e.launches, Launch{NodeClaim: nc, Launched: created, Err: err})
	}
	if err != nil {
		e.armBatch()
		return nil, err
	}
	n := e.startInstance(plan, created, why)
	if cohort != nil {
		n.cohort = cohort
		cohort.members = append(cohort.members, n)
	}
	return n, nil
}

func (e *simulation) startInstance(plan *provisioning.NodeClaimPlan, nc *v1.NodeClaim, why string) *simNode {
	f := e.in.Scenario.Spec.Faults
	np := plan.NodePool
	in := e.cloud.Instance(nc.Status.ProviderID)
	it, o := in.InstanceType, in.Offering
	n := &simNode{name: nc.Name, claim: nc, pool: np, it: it, offering: o, state: nodeLaunching, launched: e.clk.now}
	e.nodes = append(e.nodes, n)
	e.allNodes = append(e.allNodes, n)
	e.byName[n.name] = n
	e.syncNode(n)
	e.rep.nodeLaunched(n, why)
	e.dirty = true
	boot := f.Boot().Draw(e.rng)
	if boot.NeverRegisters {
		// Liveness: a claim whose node never registers is deleted after the TTL.
		e.clk.after(registrationTTL, func() {
			if n.state == nodeLaunching {
				e.rep.note("NodeClaim " + n.name + " never registered; deleted after 15m")
				e.deleteNode(n, "Unregistered")
				e.armBatch()
			}
		})
		return n
	}
	e.clk.after(boot.Registered(), func() {
		if n.state == nodeLaunching {
			n.state = nodeRegistered
			n.appeared = e.clk.now
			e.syncNode(n)
			if n.cohort != nil {
				e.releaseCohort(n.cohort) // the last to appear opens the others
			}
		}
	})
	e.clk.after(boot.Ready(), func() {
		if n.state != nodeRegistered {
			return
		}
		n.kubeletReady = true
		if n.cohort == nil {
			e.nodeReady(n)
			return
		}
		// Held until every other Node of its cohort has appeared, or
		// CohortHold after its own did.
		e.releaseCohort(n.cohort)
		if hold := e.cohortHold(n); hold > 0 {
			e.clk.after(hold, func() { e.releaseCohort(n.cohort) })
		}
	})
	if o.CapacityType == v1.CapacityTypeSpot && f.SpotInterruptionsPerNodeHour > 0 {
		wait := simcloud.SpotInterruption(e.rng, f.SpotInterruptionsPerNodeHour)
		e.clk.after(boot.Launch+wait, func() { e.interrupt(n) })
	}
	return n
}

// nodeReady opens a registered, Ready node to pods: Initialized, its
// devices published, DaemonSet pods on it, a bind pass armed.
func (e *simulation) nodeReady(n *simNode) {
	n.state = nodeReady
	e.updateClaim(n, func(nc *v1.NodeClaim) { nc.Status.Conditions = initialized(e.clk.now) })
	e.updateNode(n, nil)
	e.publishDevices(n)
	e.armFailure(n)
	e.bindDaemons(n)
	e.armBind()
	e.clk.after(0, func() { e.checkPlannedFor(n) }) // after that bind pass
}

// launchCohort is the nodes one provisioning pass launched together
// (state.AnnotationLaunchCohort): under Joiner's decisions a member's
// Node takes no pod until the others' Nodes have appeared, as the
// controller holds its registration.
type launchCohort struct {
	name    string
	members []*simNode
}

// cohortHold is how much longer n waits for the rest of its cohort
// (state.RegistrationHold).
func (e *simulation) cohortHold(n *simNode) time.Duration {
	others := make([]state.CohortMember, 0, len(n.cohort.members)-1)
	for _, m := range n.cohort.members {
		if m != n {
			others = append(others, state.CohortMember{Appeared: !m.appeared.IsZero(), Gone: m.state == nodeGone || e.disrupting(m)})
		}
	}
	return state.RegistrationHold(n.appeared, others, e.clk.now)
}

// releaseCohort opens every Ready member of c whose hold is over.
func (e *simulation) releaseCohort(c *launchCohort) {
	for _, m := range c.members {
		if m.state == nodeRegistered && m.kubeletReady && e.cohortHold(m) == 0 {
			e.nodeReady(m)
		}
	}
}

// bindDaemons starts the DaemonSet pods a node runs.
func (e *simulation) bindDaemons(n *simNode) {
	labels := n.labels()
	for i, ds := range e.daemonSets {
		tmpl := e.dsPods[i]
		if scheduling.ToleratesForScheduling(e.taints(n), tmpl.Spec.Tolerations) != nil || !scheduling.NewNodeAffinity(tmpl).MatchesNode(labels) {
			continue
		}
		if !e.modelDRA() && podutil.HasDRARequirements(tmpl) {
			continue // no device is modelled: kube-scheduler allocates it none
		}
		p := tmpl.DeepCopy()
		p.Name = ds.Name + "-" + n.name
		p.Spec.NodeName = n.name
		p.CreationTimestamp = metav1.NewTime(e.clk.now)
		e.bound++
		sp := &simPod{pod: p, created: e.clk.now, running: e.clk.now, bound: e.bound}
		e.setPod(sp, nil)
	}
}

// interrupt is a spot interruption notice: two minutes later the instance
// is gone. As upstream's interruption controller, Joiner deletes the claim
// at once — the node is tainted and drained, and provisioning finds the
// evicted pods room once they pend; nothing is launched ahead of them — and
// the cloud marks the offering unavailable for a while, as the AWS
// provider's cache does, so the replacements go elsewhere.
func (e *simulation) interrupt(n *simNode) {
	if n.state == nodeGone {
		return
	}
	e.rep.interruption(n)
	e.traceInterruption(n, string(cloudprovider.SpotInterruption))
	e.cloud.MarkUnavailable(n.it.Name, n.offering.Zone, n.offering.CapacityType)
	e.drainFor(n, "Interrupted")
	e.clk.after(simcloud.InterruptionNotice, func() { e.takeBack(n, "Interrupted") })
}

// drainFor disrupts a node for reason and starts its drain, unless it is
// draining already: the cloud's notice of an instance it will take back.
func (e *simulation) drainFor(n *simNode, reason string) {
	if n.drainStarted.IsZero() {
		e.rep.disrupted(n, reason)
		e.startDrain(n, reason)
	}
}

// takeBack is the cloud taking an instance away, drained or not: its
// pods go (their controllers make them again), and so does the node.
func (e *simulation) takeBack(n *simNode, reason string) {
	if n.state == nodeGone {
		return
	}
	for _, p := range e.podsOn(n) {
		if p.owner != nil || !podutil.IsDaemonSetPod(p.pod) {
			e.removePod(p, podEvicted)
		}
	}
	e.deleteNode(n, reason)
}

// deleteNode ends an instance and its Node; cost stops accruing.
func (e *simulation) deleteNode(n *simNode, reason string) {
	if n.state == nodeGone {
		return
	}
	for _, p := range e.podsOn(n) {
		if podutil.IsDaemonSetPod(p.pod) {
			e.deletePod(p)
			continue
		}
		e.removePod(p, podEvicted)
	}
	n.state = nodeGone
	e.syncNode(n)
	if n.cohort != nil {
		e.releaseCohort(n.cohort) // the others wait for it no more
	}
	e.unpublishDevices(n)
	n.gone = e.clk.now
	_ = e.cloud.Delete(context.Background(), n.claim) // gone already is fine
	for i, m := range e.nodes {
		if m == n {
			e.nodes = append(e.nodes[:i], e.nodes[i+1:]...)
			break
		}
	}
	e.dirty = true
	e.rep.nodeGone(n, reason)
	// As the controller: a NodeClaim gone frees its budget, and the next
	// disruption pass comes at once (no sooner than afterExecuted after
	// the last), not at the next polling tick — unless another node of the
	// consolidation commands carried out since the last decision is still
	// there (holding).
	// Wake-ups coalesce as the controller's (its channel holds one).
	if !e.wakeArmed && !e.holding() {
		e.wakeArmed = true
		e.clk.at(later(e.clk.now, e.rep.lastPass.Add(afterExecuted)), func() {
			e.wakeArmed = false
			e.disrupt()
		})
	}
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}
