package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// maxLaunchRounds: see state.MaxLaunchRounds — the launch-loop guard is
// the Store's, as the controller's is.
const maxLaunchRounds = state.MaxLaunchRounds

// checkPlannedFor runs after the first bind pass of a node that became
// ready: kube-scheduler has had its chance on it, and the Store counts a
// miss for each pod the node was launched for that is still pending. The
// pods it gives up on are reported, with the reason the scheduler refused
// the node.
func (e *simulation) checkPlannedFor(n *simNode) {
	given := e.st.SettleLaunch(n.name)
	if len(given) == 0 {
		return
	}
	byPod := make(map[*corev1.Pod]*simPod, len(e.pending))
	for p := range e.pending {
		byPod[p.pod] = p
	}
	for _, g := range given {
		p := byPod[g.Pod]
		if p == nil {
			continue
		}
		p.launchNodes, p.loop, p.reason = g.Claims, g.Why, g.Reason()
		e.rep.launchLoop(p)
	}
}

func (r *recorder) launchLoop(p *simPod) {
	r.loops = append(r.loops, p)
	r.note(fmt.Sprintf("launch loop: %s %s never bound to the %d nodes launched for it: %s", workloadKey(p), p.pod.Name, len(p.launchNodes), p.loop))
}

// launchLoops groups the given-up pods by workload and reason, in order.
func (r *recorder) launchLoops() []report.LaunchLoop {
	type key struct{ workload, reason string }
	by := map[key]*report.LaunchLoop{}
	nodes := map[key]map[string]bool{}
	var order []key
	for _, p := range r.loops {
		k := key{workloadKey(p), p.loop}
		if by[k] == nil {
			by[k], nodes[k] = &report.LaunchLoop{Workload: k.workload, Reason: k.reason}, map[string]bool{}
			order = append(order, k)
		}
		by[k].Pods++
		for _, n := range p.launchNodes {
			nodes[k][n] = true
		}
	}
	out := []report.LaunchLoop{}
	for _, k := range order {
		l := by[k]
		l.Nodes = len(nodes[k])
		out = append(out, *l)
	}
	slices.SortStableFunc(out, func(a, b report.LaunchLoop) int { return strings.Compare(a.Workload+a.Reason, b.Workload+b.Reason) })
	return out
}
