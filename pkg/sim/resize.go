package sim

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// resizeTarget is a resize event with its workload and container found.
type resizeTarget struct {
	r         *scenario.Resize
	w         *workload
	container string
	report    *report.ResizeReport
}

// resizeEvery is how often the kubelet looks again at deferred resizes.
const resizeEvery = time.Minute

// buildResizes finds each resize event's workload and container.
func (e *simulation) buildResizes(byName map[string]*workload) error {
	for i := range e.in.Scenario.Spec.Events {
		r := e.in.Scenario.Spec.Events[i].Resize
		if r == nil {
			continue
		}
		at := fmt.Sprintf("scenario: spec.events[%d].resize", i)
		ns := podutil.Namespace(metav1.ObjectMeta{Namespace: r.Namespace})
		w := byName[r.Kind+"/"+ns+"/"+r.Name]
		if w == nil {
			var have []string
			for k, x := range byName {
				if x.kind == "Deployment" || x.kind == "StatefulSet" {
					have = append(have, k)
				}
			}
			sort.Strings(have)
			return fmt.Errorf("%s: no %s %s/%s in the scenario (it has %s)", at, r.Kind, ns, r.Name, strings.Join(have, ", "))
		}
		c := r.Container
		names := make([]string, 0, len(w.template.Spec.Containers))
		found := false
		for _, x := range w.template.Spec.Containers {
			names = append(names, x.Name)
			found = found || x.Name == c
		}
		switch {
		case c == "" && len(names) == 1:
			c = names[0]
		case c == "":
			return fmt.Errorf("%s.container: %s %s has containers %s: say which to resize", at, r.Kind, r.Name, strings.Join(names, ", "))
		case !found:
			return fmt.Errorf("%s.container: %s %s has no container %q (it has %s)", at, r.Kind, r.Name, c, strings.Join(names, ", "))
		}
		reqs := map[string]string{}
		for k, q := range r.Requests {
			reqs[string(k)] = q.String()
		}
		rep := &report.ResizeReport{Workload: w.kind + "/" + w.key(), Container: c, Requests: reqs}
		e.resizes = append(e.resizes, &resizeTarget{r: r, w: w, container: c, report: rep})
		e.rep.resizes = append(e.rep.resizes, rep)
	}
	return nil
}

// withRequests sets the container's requests to those of the resize (the
// others it has stay), raising a limit below a new request to it.
func withRequests(spec *corev1.PodSpec, container string, reqs corev1.ResourceList) {
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if c.Name != container {
			continue
		}
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		} else {
			c.Resources.Requests = c.Resources.Requests.DeepCopy()
		}
		for k, q := range reqs {
			c.Resources.Requests[k] = q
			if l, ok := c.Resources.Limits[k]; ok && l.Cmp(q) < 0 {
				c.Resources.Limits = c.Resources.Limits.DeepCopy()
				c.Resources.Limits[k] = q
			}
		}
	}
}

// resize applies one resize event: the template first, then each live pod.
func (e *simulation) resize(t *resizeTarget) {
	t.report.At = e.clk.now
	w := t.w
	kept := e.deferred[:0] // a new resize of the workload supersedes its pods' waiting ones
	for _, d := range e.deferred {
		if d.p.owner != w {
			kept = append(kept, d)
		}
	}
	e.deferred = kept
	w.template = *w.template.DeepCopy()
	withRequests(&w.template.Spec, t.container, t.r.Requests)
	e.traceWorkload(w)
	for _, p := range w.pods {
		if p.finished {
			continue
		}
		t.report.Pods++
		if e.nodeOf(p) == nil {
			e.setPod(p, func(pod *corev1.Pod) {
				pod.Spec = *pod.Spec.DeepCopy()
				withRequests(&pod.Spec, t.container, t.r.Requests)
			})
			t.report.InPlace++
			continue
		}
		switch e.resizeBound(p, t) {
		case corev1.PodReasonDeferred:
			t.report.Deferred++
			e.deferred = append(e.deferred, deferredResize{p, t})
		case corev1.PodReasonInfeasible:
			t.report.Infeasible++
		default:
			t.report.InPlace++
		}
	}
	e.dirty = true
	e.armBatch()
}

// deferredResize is a bound pod whose resize waits for room on its node.
type deferredResize struct {
	p *simPod
	t *resizeTarget
}

// resizeBound resizes a pod on a node as the kubelet does: its spec takes
// the new requests; its status (what the kubelet holds: allocated and
// actual resources) follows when the node has room for them beside its
// other pods — else the resize is Deferred, or Infeasible when the node's
// allocatable could never hold them. It returns the PodResizePending
// reason, "" when resized.
func (e *simulation) resizeBound(p *simPod, t *resizeTarget) string {
	old := containerRequests(p.pod, t.container)
	next := p.pod.DeepCopy()
	withRequests(&next.Spec, t.container, t.r.Requests)
	next.Status.Conditions = withoutCondition(next.Status.Conditions, corev1.PodResizePending)
	setContainerStatus(next, t.container, old) // the kubelet's, until it resizes
	n := e.view(e.nodeOf(p))
	want := scheduling.PodRequests(&corev1.Pod{Spec: next.Spec})
	reason := ""
	switch {
	case scheduling.Fits(want, e.roomFor(p, n.Allocatable, n.Pods)) == nil:
		setContainerStatus(next, t.container, containerRequests(next, t.container))
	case scheduling.Fits(want, n.Allocatable) != nil:
		reason = corev1.PodReasonInfeasible
	default:
		reason = corev1.PodReasonDeferred
	}
	if reason != "" {
		next.Status.Conditions = append(next.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue,
			Reason: reason, LastTransitionTime: metav1.NewTime(e.clk.now)})
	}
	e.setPod(p, func(pod *corev1.Pod) { *pod = *next })
	return reason
}

// roomFor is the node's allocatable less what its pods but p hold.
func (e *simulation) roomFor(p *simPod, alloc corev1.ResourceList, pods []*corev1.Pod) corev1.ResourceList {
	var used []corev1.ResourceList
	for _, q := range pods {
		if q.Namespace != p.pod.Namespace || q.Name != p.pod.Name {
			used = append(used, scheduling.PodRequests(q))
		}
	}
	return scheduling.Subtract(alloc, scheduling.Add(used...))
}

// retryResizes is the kubelet looking again at its deferred resizes: those
// whose node now has room are done; pods gone or moved drop out (their
// replacements are made from the resized template).
func (e *simulation) retryResizes() {
	left := e.deferred[:0]
	for _, d := range e.deferred {
		p := d.p
		on := e.nodeOf(p)
		if p.finished || on == nil {
			continue
		}
		n := e.view(on)
		want := scheduling.PodRequests(&corev1.Pod{Spec: p.pod.Spec})
		if scheduling.Fits(want, e.roomFor(p, n.Allocatable, n.Pods)) != nil {
			left = append(left, d)
			continue
		}
		e.setPod(p, func(pod *corev1.Pod) {
			pod.Status = *pod.Status.DeepCopy()
			pod.Status.Conditions = withoutCondition(pod.Status.Conditions, corev1.PodResizePending)
			setContainerStatus(pod, d.t.container, containerRequests(pod, d.t.container))
		})
		d.t.report.DoneLater++
		e.dirty = true
	}
	e.deferred = left
}

func containerRequests(p *corev1.Pod, name string) corev1.ResourceList {
	for _, c := range p.Spec.Containers {
		if c.Name == name {
			return c.Resources.Requests.DeepCopy()
		}
	}
	return nil
}

// setContainerStatus records what the kubelet holds for the container.
func setContainerStatus(p *corev1.Pod, name string, reqs corev1.ResourceList) {
	for i := range p.Status.ContainerStatuses {
		if cs := &p.Status.ContainerStatuses[i]; cs.Name == name {
			cs.AllocatedResources = reqs
			cs.Resources = &corev1.ResourceRequirements{Requests: reqs}
			return
		}
	}
	p.Status.ContainerStatuses = append(p.Status.ContainerStatuses,
		corev1.ContainerStatus{Name: name, AllocatedResources: reqs, Resources: &corev1.ResourceRequirements{Requests: reqs}})
}

func withoutCondition(cs []corev1.PodCondition, t corev1.PodConditionType) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range cs {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}
