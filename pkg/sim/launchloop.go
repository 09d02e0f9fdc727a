package sim

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-autoscaler/joiner/pkg/kubescheduler"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// maxLaunchRounds is how many nodes provisioning launches for a pod that
// then does not bind to them before it stops launching for that pod. A pod
// the scheduler keeps refusing the nodes planned for it (a label the pod
// selects that the nodes never carry) would otherwise launch nodes that go
// empty, are consolidated and are launched again, all run long.
const maxLaunchRounds = 3

// launchedFor remembers, on a node launched by provisioning, the pods its
// plan was made for.
func (e *engine) launchedFor(n *simNode, pods []*corev1.Pod, byPod map[*corev1.Pod]*simPod) {
	for _, p := range pods {
		if sp := byPod[p]; sp != nil {
			n.plannedFor = append(n.plannedFor, sp)
		}
	}
}

// checkPlannedFor runs after the first bind pass of a node that became
// ready: each pod the node was launched for that is still pending (neither
// bound elsewhere nor waiting on a preemption) missed it. At the last round
// the pod is given up on, with the reason the scheduler refused the node.
func (e *engine) checkPlannedFor(n *simNode) {
	planned := n.plannedFor
	n.plannedFor = nil
	if n.state != nodeReady {
		return
	}
	for _, p := range planned {
		if !e.pending[p] || p.finished || p.nominated != nil || p.loop != "" {
			continue
		}
		p.launchNodes = append(p.launchNodes, n.name)
		if len(p.launchNodes) < maxLaunchRounds {
			continue
		}
		p.loop = missReason(e.view(n), p.pod, e.st.Volumes)
		p.reason = fmt.Sprintf("launch loop: %d nodes were launched for it and it bound to none (%s); no more are launched for it", len(p.launchNodes), p.loop)
		e.rep.launchLoop(p)
	}
}

// missReason says why the scheduler does not put the pod on the node
// (volumes: the pods' volumes now, or nil).
func missReason(node *provisioning.Node, pod *corev1.Pod, volumes func() provisioning.Volumes) string {
	if err := scheduling.ToleratesForScheduling(node.Taints, pod.Spec.Tolerations); err != nil {
		return "the nodes have a taint it does not tolerate: " + err.Error()
	}
	if why := scheduling.NewNodeAffinity(pod).Unmet(node.Labels); why != "" {
		return "it requires " + why
	}
	res := kubescheduler.NewBinder(kubescheduler.BindOptions{Volumes: volumes}).Bind([]*provisioning.Node{node}, []*corev1.Pod{pod})
	if len(res.Unschedulable) > 0 {
		return "the node launched for it cannot run it: " + strings.TrimPrefix(res.Unschedulable[0].Reason, "no existing node can run it: ")
	}
	return "other pods took the nodes launched for it first"
}

// LaunchLoop is one workload's pods that provisioning gave up on.
type LaunchLoop struct {
	Workload string `json:"workload"`
	Reason   string `json:"reason"`
	Pods     int    `json:"pods"`
	// Nodes launched for those pods that they did not bind to.
	Nodes int `json:"nodesLaunched"`
}

func (r *recorder) launchLoop(p *simPod) {
	r.loops = append(r.loops, p)
	r.note(fmt.Sprintf("launch loop: %s %s never bound to the %d nodes launched for it: %s", workloadKey(p), p.pod.Name, len(p.launchNodes), p.loop))
}

// launchLoops groups the given-up pods by workload and reason, in order.
func (r *recorder) launchLoops() []LaunchLoop {
	type key struct{ workload, reason string }
	by := map[key]*LaunchLoop{}
	nodes := map[key]map[string]bool{}
	var order []key
	for _, p := range r.loops {
		k := key{workloadKey(p), p.loop}
		if by[k] == nil {
			by[k], nodes[k] = &LaunchLoop{Workload: k.workload, Reason: k.reason}, map[string]bool{}
			order = append(order, k)
		}
		by[k].Pods++
		for _, n := range p.launchNodes {
			nodes[k][n] = true
		}
	}
	out := []LaunchLoop{}
	for _, k := range order {
		l := by[k]
		l.Nodes = len(nodes[k])
		out = append(out, *l)
	}
	slices.SortStableFunc(out, func(a, b LaunchLoop) int { return strings.Compare(a.Workload+a.Reason, b.Workload+b.Reason) })
	return out
}
