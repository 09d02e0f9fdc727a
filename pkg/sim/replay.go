package sim

import (
	"fmt"
	"slices"
	"sort"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"

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
		e.replayStep(w, rw.Steps, false)
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
	return nil
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

// replayStep puts a workload's next step on the agenda; each step, when
// it comes, schedules the one after it, so a week of steps does not sit
// in the clock's queue at once.
func (e *simulation) replayStep(w *workload, steps []scenario.ReplicaStep, started bool) {
	if len(steps) == 0 {
		return
	}
	s := steps[0]
	e.clk.at(e.start.Add(s.At), func() {
		if !started {
			e.workloads = append(e.workloads, w)
		}
		w.replicas = s.Replicas
		e.reconcile(w)
		e.replayStep(w, steps[1:], true)
	})
}
