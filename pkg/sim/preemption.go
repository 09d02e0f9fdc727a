package sim

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-autoscaler/joiner/pkg/kubescheduler"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// preempt carries out kube-scheduler's preemption: the victims are deleted
// (they terminate gracefully, holding their room until they are gone;
// their controllers replace them at once), and the preemptor is nominated
// to the node. Nominated pods are neither bound elsewhere nor provisioned
// for, as Karpenter leaves them alone; when the last victim is gone the
// pod is bound to its node if it still fits, or is pending again.
func (e *simulation) preempt(sp *simPod, n *simNode, victims []*corev1.Pod) {
	delete(e.pending, sp)
	sp.nominated = n
	e.setPod(sp, func(cp *corev1.Pod) { cp.Status.NominatedNodeName = n.name })
	e.rep.preemption(len(victims))
	wait := time.Duration(0)
	for _, v := range victims {
		vp := e.pods[keyOf(v)]
		if vp == nil || e.nodeOf(vp) != n {
			continue
		}
		grace := podutil.GracePeriod(v)
		wait = max(wait, grace)
		e.terminate(vp, grace)
	}
	e.clk.after(wait, func() {
		if sp.nominated != n || sp.finished {
			return
		}
		sp.nominated = nil
		if n.state == nodeReady && !e.disrupting(n) {
			res := kubescheduler.NewBinder(kubescheduler.BindOptions{Volumes: e.st.Volumes}).Bind([]*provisioning.Node{e.view(n)}, []*corev1.Pod{e.scheduled(sp)})
			if len(res.ExistingNodes) == 1 {
				e.bindPod(sp, n)
				return
			}
		}
		e.addPending(sp)
	})
}

// terminate deletes a running pod gracefully: it is marked terminating at
// once (its controller replaces it) and leaves its node after grace.
func (e *simulation) terminate(p *simPod, grace time.Duration) {
	n := e.nodeOf(p)
	now := metav1.NewTime(e.clk.now)
	e.setPod(p, func(cp *corev1.Pod) { cp.DeletionTimestamp = &now })
	e.replace(p)
	e.clk.after(grace, func() {
		if p.finished || e.nodeOf(p) != n {
			return
		}
		e.unbind(p)
		e.tracePodGone(p)
		e.deletePod(p)
		p.finished = true
		e.armBind()
	})
}
