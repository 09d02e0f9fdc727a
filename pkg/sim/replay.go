package sim

import (
	"fmt"
	"slices"
	"sort"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	simcloud "github.com/joiner-autoscaler/joiner/pkg/cloudprovider/sim"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

// buildReplay makes a recording's workloads and bare pods (scenario.Replay):
// nothing exists before its first step, then each follows its steps.
func (e *simulation) buildReplay(prio *priorities) error {
	r := e.in.Replay
	for i := range r.Workloads {
		rw := &r.Workloads[i]
		tmpl := *rw.Template.DeepCopy()
		if err := prio.resolve(&tmpl.Spec, fmt.Sprintf("%s %s/%s: spec.template.spec", rw.Kind, rw.Namespace, rw.Name)); err != nil {
			return err
		}
		w := &workload{kind: rw.Kind, namespace: rw.Namespace, name: rw.Name, template: tmpl, claimTemplates: rw.ClaimTemplates,
			spread: defaultSpreadSelector(rw.Namespace, tmpl.Labels, e.in.Services, nil)}
		if rw.Job != nil {
			w.job, w.completions, w.runtime = true, rw.Job.Completions, rw.Job.Runtime
		}
		e.replayWorkload(w, rw.Steps)
	}
	for i := range r.Pods {
		rp := r.Pods[i]
		pod := rp.Pod.DeepCopy()
		if err := prio.resolve(&pod.Spec, fmt.Sprintf("Pod %s/%s: spec", pod.Namespace, pod.Name)); err != nil {
			return err
		}
		e.clk.at(e.start.Add(rp.At), func() {
			p := &simPod{pod: pod, created: e.clk.now, spread: defaultSpreadSelector(pod.Namespace, pod.Labels, e.in.Services, nil)}
			e.rep.podCreated(p)
			e.addPending(p)
			if rp.Until > 0 {
				e.clk.at(e.start.Add(rp.Until), func() {
					if !p.finished {
						e.removePod(p, podFinished)
					}
				})
			}
		})
	}
	for _, rn := range r.NodePools {
		e.clk.at(e.start.Add(rn.At), func() { e.setNodePool(rn.NodePool) })
	}
	for _, rc := range r.NodeClasses {
		e.clk.at(e.start.Add(rc.At), func() { e.setNodeClass(rc.NodeClass) })
	}
	for _, ri := range r.Interruptions {
		e.clk.at(e.start.Add(ri.At), func() { e.replayInterruption(ri) })
	}
	return nil
}

// replayInterruption is a recorded interruption: the cloud takes away the
// node of its offering, not draining already, launched closest to when the
// recorded one was (the older of two as close) — a spot one as the
// simulator's own interruptions (interrupt), another with its notice and
// drain, gone InterruptionNotice later — or, when there is none, the
// report's notes say so.
func (e *simulation) replayInterruption(ri scenario.ReplayInterruption) {
	launched := e.start.Add(ri.Launched)
	var n *simNode
	for _, m := range e.nodes { // in launch order
		if m.state == nodeGone || !m.drainStarted.IsZero() || m.it.Name != ri.InstanceType || m.offering.Zone != ri.Zone || m.offering.CapacityType != ri.CapacityType {
			continue
		}
		if n == nil || m.launched.Sub(launched).Abs() < n.launched.Sub(launched).Abs() {
			n = m
		}
	}
	switch {
	case n == nil:
		e.rep.note(fmt.Sprintf("the recorded %s of NodeClaim %s (%s %s in %s) is not replayed: no simulated node of that offering runs then",
			ri.Reason, ri.NodeClaim, ri.InstanceType, ri.CapacityType, ri.Zone))
	case ri.CapacityType == v1.CapacityTypeSpot:
		e.interrupt(n)
	default:
		e.rep.interruption(n)
		e.traceInterruption(n, ri.Reason)
		e.drainFor(n, ri.Reason)
		e.clk.after(simcloud.InterruptionNotice, func() { e.takeBack(n, ri.Reason) })
	}
}

// setNodePool replaces the NodePool of np's name (or adds np), as an edit
// through the API server would: the Store, the cloud's offerings and so
// the Decider's configuration change with it.
func (e *simulation) setNodePool(np *v1.NodePool) {
	i := sort.Search(len(e.pools), func(i int) bool { return e.pools[i].Name >= np.Name })
	if i < len(e.pools) && e.pools[i].Name == np.Name {
		e.pools[i] = np
	} else {
		e.pools = slices.Insert(e.pools, i, np)
	}
	e.st.SetNodePools(e.pools)
	e.trace(trace.OpUpdate, "NodePool", np)
	if err := e.cloud.SetNodePools(e.pools); err != nil {
		e.rep.note(err.Error())
	}
	e.dirty = true
	e.armBatch()
}

// setNodeClass takes an edit of an EC2NodeClass: the image it selects
// (the only part of a class the simulated cloud gives meaning) drifts the
// nodes launched before it.
func (e *simulation) setNodeClass(nc *awsv1.EC2NodeClass) {
	e.trace(trace.OpUpdate, "EC2NodeClass", nc)
	if ami := amiOf(nc); ami != e.cloud.Image(nc.Name) {
		e.cloud.SetImage(nc.Name, ami)
		e.rep.note(fmt.Sprintf("EC2NodeClass %s now selects %s", nc.Name, ami))
		e.dirty = true
	}
}

// replayWorkload puts a recorded workload's first step on the agenda: it
// joins the run then. Each step, when it comes, schedules the one after
// it, so a week of steps does not sit in the clock's queue at once.
func (e *simulation) replayWorkload(w *workload, steps []scenario.ReplicaStep) {
	if len(steps) == 0 {
		return
	}
	e.clk.at(e.start.Add(steps[0].At), func() {
		e.workloads = append(e.workloads, w)
		e.replayStep(w, steps)
	})
}

// replayStep scales the workload as its first step says and puts the next
// on the agenda.
func (e *simulation) replayStep(w *workload, steps []scenario.ReplicaStep) {
	w.replicas = steps[0].Replicas
	e.reconcile(w)
	if next := steps[1:]; len(next) > 0 {
		e.clk.at(e.start.Add(next[0].At), func() { e.replayStep(w, next) })
	}
}
