package sim

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

// tracer writes a run as `joiner record` would have recorded the
// simulated cluster (Options.Trace): its NodePools, its workloads' scaling
// (a Deployment as the ReplicaSet of its one revision), its pods' arrival,
// binding, success and deletion, and its Nodes. DaemonSet pods are left
// out: they belong to their nodes.
type tracer struct {
	w *trace.Writer
	// scaled: the replicas last written of each workload.
	scaled map[*workload]int
	// created: the pods written so far, by the UID they were given; nodes
	// the Nodes.
	created map[*simPod]string
	nodes   map[*simNode]string // the readiness last written
	claims  map[*simNode]bool
	// registered: when each Node was first written.
	registered map[*simNode]metav1.Time
	seq        int
	err        error
}

func (e *simulation) trace(op trace.Op, kind string, obj any) {
	t := e.tracer
	if t == nil || t.err != nil {
		return
	}
	t.err = t.w.Object(e.clk.now, op, kind, obj)
}

// traceConfig writes the run's configuration at its start: NodePools,
// node classes, NodeOverlays, DaemonSets, PDBs, StorageClasses and
// PersistentVolumes (claims as the run sets them).
func (e *simulation) traceConfig() {
	if e.tracer == nil {
		return
	}
	in := e.in
	for _, np := range e.pools {
		e.trace(trace.OpAdd, "NodePool", np)
	}
	for _, o := range in.NodeClasses {
		e.trace(trace.OpAdd, "EC2NodeClass", o)
	}
	for _, o := range in.NodeOverlays {
		e.trace(trace.OpAdd, "NodeOverlay", o)
	}
	for _, o := range in.DaemonSets {
		e.trace(trace.OpAdd, "DaemonSet", o)
	}
	for _, o := range in.PDBs {
		e.trace(trace.OpAdd, "PodDisruptionBudget", o)
	}
	for _, o := range in.StorageClasses {
		e.trace(trace.OpAdd, "StorageClass", o)
	}
	for _, o := range in.PersistentVolumes {
		e.trace(trace.OpAdd, "PersistentVolume", o)
	}
}

// traceWorkload writes a workload's object when its replicas changed.
func (e *simulation) traceWorkload(w *workload) {
	t := e.tracer
	if t == nil {
		return
	}
	last, seen := t.scaled[w]
	if seen && last == w.replicas {
		return
	}
	t.scaled[w] = w.replicas
	op := trace.OpUpdate
	if !seen {
		op = trace.OpAdd
	}
	meta := metav1.ObjectMeta{Name: w.name, Namespace: w.namespace}
	r := int32(w.replicas)
	switch {
	case w.job:
		c := int32(w.completions)
		e.trace(op, "Job", &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Parallelism: &r, Completions: &c, Template: w.template}})
	case w.kind == "StatefulSet":
		e.trace(op, "StatefulSet", &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Replicas: &r, Template: w.template, VolumeClaimTemplates: w.claimTemplates}})
	default:
		e.trace(op, "ReplicaSet", &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{Replicas: &r, Template: w.template}})
	}
}

// tracePod writes a pod as it is now.
func (e *simulation) tracePod(p *simPod) { e.writePod(p, false) }

// tracePodGone writes a pod's deletion.
func (e *simulation) tracePodGone(p *simPod) { e.writePod(p, true) }

func (e *simulation) writePod(p *simPod, gone bool) {
	t := e.tracer
	if t == nil || podutil.IsDaemonSetPod(p.pod) {
		return
	}
	pod := p.pod.DeepCopy()
	if w := p.owner; w != nil && !w.job && w.kind != "StatefulSet" {
		yes := true
		pod.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: w.name, Controller: &yes}}
	}
	op := trace.OpUpdate
	uid, ok := t.created[p]
	switch {
	case !ok && gone:
		return
	case !ok:
		op = trace.OpAdd
		t.seq++
		uid = fmt.Sprintf("sim-%d", t.seq)
		t.created[p] = uid
	case gone:
		op = trace.OpDelete
		delete(t.created, p)
	}
	pod.UID = types.UID(uid)
	e.trace(op, "Pod", pod)
}

// traceSucceeded writes a Job's pod's success, before its deletion.
func (e *simulation) traceSucceeded(p *simPod) {
	if e.tracer == nil {
		return
	}
	cp := *p.pod
	cp.Status.Phase = corev1.PodSucceeded
	saved := p.pod
	p.pod = &cp
	e.tracePod(p)
	p.pod = saved
}

// traceNode writes a Node when it registers and when its readiness
// changes, and its deletion.
func (e *simulation) traceNode(n *simNode, node *corev1.Node) {
	t := e.tracer
	if t == nil {
		return
	}
	if n.state == nodeGone {
		e.trace(trace.OpDelete, "Node", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: n.labels()}})
		return
	}
	if node == nil {
		return
	}
	ready := "False"
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = string(c.Status)
		}
	}
	last, seen := t.nodes[n]
	if seen && last == ready {
		return
	}
	t.nodes[n] = ready
	op := trace.OpUpdate
	if !seen {
		op = trace.OpAdd
		t.registered[n] = metav1.NewTime(e.clk.now)
	}
	cp := *node // the simulated Node carries its claim's creation; a real one its registration's
	cp.CreationTimestamp = t.registered[n]
	e.trace(op, "Node", &cp)
}

// traceClaim writes a NodeClaim when it is launched.
func (e *simulation) traceClaim(n *simNode, nc *v1.NodeClaim) {
	t := e.tracer
	if t == nil || t.claims[n] {
		return
	}
	t.claims[n] = true
	cp := nc.DeepCopy()
	cp.Status.NodeName = n.name
	e.trace(trace.OpAdd, "NodeClaim", cp)
}

// traceInterruption writes the Event the autoscaler records when the cloud
// interrupts n's instance (trace.InterruptionReasons).
func (e *simulation) traceInterruption(n *simNode, reason string) {
	t := e.tracer
	if t == nil {
		return
	}
	t.seq++
	now := metav1.NewTime(e.clk.now)
	e.trace(trace.OpAdd, "Event", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%d", n.name, t.seq), Namespace: corev1.NamespaceDefault},
		InvolvedObject: corev1.ObjectReference{Kind: "NodeClaim", Name: n.name, APIVersion: v1.Group + "/v1"}, Reason: reason, Type: corev1.EventTypeWarning,
		Count: 1, FirstTimestamp: now, LastTimestamp: now})
}
