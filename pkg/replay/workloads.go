package replay

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// owner is a recorded ReplicaSet, StatefulSet or Job.
type owner struct {
	key      objKey
	created  time.Time
	template corev1.PodTemplateSpec
	claims   []corev1.PersistentVolumeClaim
	// steps: wanted replicas (a Job's parallelism) at recorded times.
	steps   []step
	deleted *time.Time
	// Jobs: spec.completions, and the pods that had succeeded when the
	// recording first saw it.
	job         bool
	completions *int32
	succeeded   int32
}

type step struct {
	at       time.Time
	replicas int
}

func (b *builder) owner(k objKey, raw json.RawMessage, t time.Time, del bool) error {
	o := b.owners[k]
	if del {
		if o != nil && o.deleted == nil {
			o.deleted = &t
		}
		return nil
	}
	fresh := o == nil
	if fresh {
		o = &owner{key: k}
	}
	meta, replicas, err := o.decode(raw, fresh)
	if err != nil {
		return fmt.Errorf("trace: the %s %s/%s at %s: %w", k.kind, k.ns, k.name, t.Format(time.RFC3339), err)
	}
	at := t
	if fresh {
		o.created = createdBy(meta.CreationTimestamp, t)
		at = o.created
		b.owners[k] = o
	}
	r := 1
	if replicas != nil {
		r = int(*replicas)
	}
	if n := len(o.steps); n == 0 || o.steps[n-1].replicas != r {
		o.steps = append(o.steps, step{at: at, replicas: r})
	}
	return nil
}

// decode takes a version of the owner's object: its template (and a
// StatefulSet's claims, a Job's completions), and returns its metadata
// and wanted replicas (a Job's parallelism; 0 while it is suspended).
func (o *owner) decode(raw json.RawMessage, fresh bool) (metav1.ObjectMeta, *int32, error) {
	switch o.key.kind {
	case "ReplicaSet":
		var rs appsv1.ReplicaSet
		err := json.Unmarshal(raw, &rs)
		o.template = rs.Spec.Template
		return rs.ObjectMeta, rs.Spec.Replicas, err
	case "StatefulSet":
		var ss appsv1.StatefulSet
		err := json.Unmarshal(raw, &ss)
		o.template, o.claims = ss.Spec.Template, ss.Spec.VolumeClaimTemplates
		return ss.ObjectMeta, ss.Spec.Replicas, err
	}
	var j batchv1.Job
	err := json.Unmarshal(raw, &j)
	o.template, o.job, o.completions = j.Spec.Template, true, j.Spec.Completions
	if fresh {
		o.succeeded = j.Status.Succeeded
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		return j.ObjectMeta, ptr.To(int32(0)), err
	}
	return j.ObjectMeta, j.Spec.Parallelism, err
}

// pod is a recorded pod.
type pod struct {
	key     objKey
	uid     string
	obj     *corev1.Pod // as first recorded
	owner   objKey      // its controller (zero: none)
	created time.Time
	bound   *time.Time
	// marked: when kube-scheduler first found no room for it.
	marked *time.Time
	// done: when it finished (Succeeded or Failed); gone: deleted.
	done, gone *time.Time
	daemon     bool
}

func (b *builder) pod(k objKey, raw json.RawMessage, t time.Time, del bool) error {
	var obj corev1.Pod
	if err := json.Unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("trace: the Pod %s/%s at %s: %w", k.ns, k.name, t.Format(time.RFC3339), err)
	}
	p := b.pods[k]
	if p != nil && (p.uid != "" && obj.UID != "" && p.uid != string(obj.UID) || p.gone != nil && !del) {
		// The name came back as another pod (a StatefulSet's replacement).
		if p.gone == nil {
			p.gone = &t
		}
		b.podList = append(b.podList, p)
		p = nil
	}
	if p == nil {
		p = newPod(k, &obj, t)
		b.pods[k] = p
	}
	p.observe(&obj, t, del)
	return nil
}

// newPod is a pod first recorded at t: its creation and its controller.
func newPod(k objKey, obj *corev1.Pod, t time.Time) *pod {
	p := &pod{key: k, uid: string(obj.UID), obj: obj, created: createdBy(obj.CreationTimestamp, t)}
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		switch ref.Kind {
		case "DaemonSet", "Node":
			p.daemon = true
		default:
			p.owner = objKey{kind: ref.Kind, ns: k.ns, name: ref.Name}
		}
	}
	if _, mirror := obj.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		p.daemon = true
	}
	return p
}

// observe takes what a record at t says of the pod: bound (when its
// PodScheduled condition says, else now), finished, deleted.
func (p *pod) observe(obj *corev1.Pod, t time.Time, del bool) {
	if p.bound == nil && obj.Spec.NodeName != "" {
		p.bound = p.boundAt(obj, t)
	}
	if p.marked == nil && p.bound == nil {
		p.marked = p.markedAt(obj, t)
	}
	if p.done == nil && (obj.Status.Phase == corev1.PodSucceeded || obj.Status.Phase == corev1.PodFailed) {
		p.done = &t
	}
	if del && p.gone == nil {
		p.gone = &t
	}
}

// boundAt is when a pod seen bound at t was bound: its PodScheduled
// condition's time, unless that is missing or before the pod was made.
func (p *pod) boundAt(obj *corev1.Pod, t time.Time) *time.Time {
	at := t
	for _, c := range obj.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() && !c.LastTransitionTime.Time.Before(p.created) {
			at = c.LastTransitionTime.UTC()
		}
	}
	return &at
}

// markedAt is when kube-scheduler marked the pod unschedulable, as a
// record at t says (its condition's time when that lies between the pod's
// making and t), or nil when it says nothing of it.
func (p *pod) markedAt(obj *corev1.Pod, t time.Time) *time.Time {
	var marked *time.Time
	for _, c := range obj.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			at := t
			if lt := c.LastTransitionTime; !lt.IsZero() && !lt.Time.Before(p.created) && lt.Time.Before(t) {
				at = lt.UTC()
			}
			marked = &at
		}
	}
	return marked
}

// end is when a pod stopped asking for room: finished or deleted.
func (p *pod) end() *time.Time {
	switch {
	case p.done != nil && (p.gone == nil || p.done.Before(*p.gone)):
		return p.done
	default:
		return p.gone
	}
}

// replayedKinds are the controllers a workload replays; a pod of another
// controller replays as a bare pod.
var replayedKinds = map[string]bool{"ReplicaSet": true, "StatefulSet": true, "Job": true}

// allPods are every recorded pod: those whose name another took later,
// then the rest by key.
func (b *builder) allPods() []*pod {
	all := append([]*pod(nil), b.podList...)
	for _, k := range sortedPodKeys(b.pods) {
		all = append(all, b.pods[k])
	}
	return all
}

// workloads builds the Replay and the PodLives.
func (b *builder) workloads() scenario.Replay {
	var out scenario.Replay
	all := b.allPods()
	byOwner := map[objKey][]*pod{}
	otherOwners := map[string]int{}
	for _, p := range all {
		if e := p.end(); p.daemon || e != nil && !e.After(b.rec.Start) { // a pod over before the recording began never asked for room in it
			continue
		}
		wl := "Pod/" + p.key.name
		switch {
		case replayedKinds[p.owner.kind]:
			byOwner[p.owner] = append(byOwner[p.owner], p)
			wl = p.owner.kind + "/" + p.owner.name
		default:
			if p.owner.kind != "" {
				otherOwners[p.owner.kind]++
			}
			out.Pods = append(out.Pods, b.barePod(p))
		}
		b.rec.Pods = append(b.rec.Pods, PodLife{Namespace: p.key.ns, Name: p.key.name, Workload: wl, Created: p.created, Bound: p.bound, Gone: p.end()})
	}
	sort.SliceStable(b.rec.Pods, func(i, j int) bool { return b.rec.Pods[i].Created.Before(b.rec.Pods[j].Created) })
	for _, kind := range slices.Sorted(maps.Keys(otherOwners)) {
		b.rec.Notes = append(b.rec.Notes, fmt.Sprintf("%d pods of %s controllers are replayed as bare pods: they come and go when they did, and one evicted in the replay is not re-created", otherOwners[kind], kind))
	}
	keys := make([]objKey, 0, len(byOwner)+len(b.owners))
	for k := range b.owners {
		keys = append(keys, k)
	}
	synthesized := 0
	for k := range byOwner {
		if b.owners[k] == nil {
			b.owners[k] = b.ownerFromPods(k, byOwner[k])
			keys = append(keys, k)
			synthesized++
		}
	}
	if synthesized > 0 {
		b.rec.Notes = append(b.rec.Notes, fmt.Sprintf("%d controllers of recorded pods were not recorded themselves: each scales as its live pods did, from the first pod's spec", synthesized))
	}
	sort.Slice(keys, func(i, j int) bool {
		a, c := b.owners[keys[i]], b.owners[keys[j]]
		if !a.created.Equal(c.created) {
			return a.created.Before(c.created)
		}
		return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j])
	})
	for _, k := range keys {
		if w, ok := b.workload(b.owners[k], byOwner[k]); ok {
			out.Workloads = append(out.Workloads, w)
		}
	}
	return out
}

// workload is an owner as the simulator replays it; false for one that
// never wanted a pod.
func (b *builder) workload(o *owner, pods []*pod) (scenario.ReplayWorkload, bool) {
	w := scenario.ReplayWorkload{Kind: o.key.kind, Namespace: o.key.ns, Name: o.key.name, Template: b.template(o.template, pods), ClaimTemplates: o.claims}
	peak := 0
	for _, s := range o.steps {
		peak = max(peak, s.replicas)
		w.Steps = appendStep(w.Steps, scenario.ReplicaStep{At: b.offset(s.at), Replicas: s.replicas})
	}
	if o.deleted != nil {
		w.Steps = appendStep(w.Steps, scenario.ReplicaStep{At: b.offset(*o.deleted), Replicas: 0})
	}
	if peak == 0 && len(pods) == 0 {
		return w, false
	}
	if o.job {
		w.Job = b.job(o, pods)
	}
	return w, true
}

// appendStep adds s, replacing a step at the same offset.
func appendStep(steps []scenario.ReplicaStep, s scenario.ReplicaStep) []scenario.ReplicaStep {
	if n := len(steps); n > 0 && steps[n-1].At >= s.At {
		steps[n-1].Replicas = s.Replicas
		return steps
	}
	return append(steps, s)
}

// job is a Job's completions still to go and its pods' runtime.
func (b *builder) job(o *owner, pods []*pod) *scenario.ReplayJob {
	var runs []time.Duration
	succeeded := 0
	for _, p := range pods {
		if p.bound == nil {
			continue
		}
		end := b.rec.End
		if e := p.end(); e != nil {
			end = *e
		}
		if p.done != nil {
			succeeded++
		}
		runs = append(runs, end.Sub(*p.bound))
	}
	j := &scenario.ReplayJob{Runtime: b.rec.End.Sub(o.created)}
	if len(runs) > 0 {
		sort.Slice(runs, func(i, k int) bool { return runs[i] < runs[k] })
		j.Runtime = runs[len(runs)/2]
	}
	j.Runtime = max(j.Runtime, time.Second)
	switch {
	case o.completions != nil:
		j.Completions = int(*o.completions) - int(o.succeeded)
	default: // a work queue: done when its pods are
		j.Completions = max(succeeded, 1)
	}
	j.Completions = max(j.Completions, 0)
	return j
}

// ownerFromPods stands in for a controller the recording did not hold: it
// wants as many pods as were alive.
func (b *builder) ownerFromPods(k objKey, pods []*pod) *owner {
	o := &owner{key: k, created: pods[0].created, job: k.kind == "Job"}
	type change struct {
		at    time.Time
		delta int
	}
	var cs []change
	for _, p := range pods {
		o.created = minTime(o.created, p.created)
		cs = append(cs, change{p.created, 1})
		if e := p.end(); e != nil {
			cs = append(cs, change{*e, -1})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].at.Before(cs[j].at) })
	live := 0
	for _, c := range cs {
		live += c.delta
		if n := len(o.steps); n > 0 && o.steps[n-1].at.Equal(c.at) {
			o.steps[n-1].replicas = live
			continue
		}
		o.steps = append(o.steps, step{at: c.at, replicas: live})
	}
	first := pods[0].obj
	o.template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: first.Labels, Annotations: first.Annotations}, Spec: first.Spec}
	if o.job {
		one := int32(len(pods))
		o.completions = &one
	}
	return o
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// template is what a workload's pods are made from: its spec without a
// node, with the priority its recorded pods were admitted with (a
// PriorityClass is not recorded).
func (b *builder) template(t corev1.PodTemplateSpec, pods []*pod) corev1.PodTemplateSpec {
	out := *t.DeepCopy()
	out.Spec.NodeName = ""
	for _, p := range pods {
		if p.obj.Spec.Priority != nil {
			v := *p.obj.Spec.Priority
			out.Spec.Priority = &v
			out.Spec.PriorityClassName = ""
			break
		}
	}
	return out
}

// barePod is a pod as the simulator replays it without a controller.
func (b *builder) barePod(p *pod) scenario.ReplayPod {
	obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.obj.Name, Namespace: p.obj.Namespace, Labels: p.obj.Labels, Annotations: p.obj.Annotations,
		OwnerReferences: p.obj.OwnerReferences}, Spec: *p.obj.Spec.DeepCopy()}
	obj.Spec.NodeName = ""
	if obj.Spec.Priority != nil {
		obj.Spec.PriorityClassName = ""
	}
	rp := scenario.ReplayPod{Pod: obj, At: b.offset(p.created)}
	if e := p.end(); e != nil {
		rp.Until = max(b.offset(*e), rp.At+time.Nanosecond)
	}
	return rp
}

// offset is t from the recording's start (0 for anything before it).
func (b *builder) offset(t time.Time) time.Duration {
	return max(t.Sub(b.rec.Start), 0)
}

func sortedPodKeys(m map[objKey]*pod) []objKey {
	out := make([]objKey, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ns != out[j].ns {
			return out[i].ns < out[j].ns
		}
		return out[i].name < out[j].name
	})
	return out
}

// createdBy is an object's creation as of a record at t: its
// creationTimestamp, or t when it has none or claims to be later (the
// recorder's and the API server's clocks differ).
func createdBy(created metav1.Time, t time.Time) time.Time {
	if c := created.UTC(); !c.IsZero() && !c.After(t) {
		return c
	}
	return t
}
