package trace

import (
	"bufio"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
)

// auditKinds maps an audit event's objectRef (group/resource) to the kind
// a trace records and a new object of it.
var auditKinds = map[string]struct {
	kind string
	new  func() any
}{
	"/pods":                                {"Pod", func() any { return &corev1.Pod{} }},
	"apps/deployments":                     {"Deployment", func() any { return &appsv1.Deployment{} }},
	"apps/statefulsets":                    {"StatefulSet", func() any { return &appsv1.StatefulSet{} }},
	"apps/replicasets":                     {"ReplicaSet", func() any { return &appsv1.ReplicaSet{} }},
	"apps/daemonsets":                      {"DaemonSet", func() any { return &appsv1.DaemonSet{} }},
	"batch/jobs":                           {"Job", func() any { return &batchv1.Job{} }},
	"batch/cronjobs":                       {"CronJob", func() any { return &batchv1.CronJob{} }},
	"autoscaling/horizontalpodautoscalers": {"HorizontalPodAutoscaler", func() any { return &autoscalingv2.HorizontalPodAutoscaler{} }},
	"policy/poddisruptionbudgets":          {"PodDisruptionBudget", func() any { return &policyv1.PodDisruptionBudget{} }},
	"/persistentvolumeclaims":              {"PersistentVolumeClaim", func() any { return &corev1.PersistentVolumeClaim{} }},
	"/persistentvolumes":                   {"PersistentVolume", func() any { return &corev1.PersistentVolume{} }},
	"storage.k8s.io/storageclasses":        {"StorageClass", func() any { return &storagev1.StorageClass{} }},
	"/nodes":                               {"Node", func() any { return &corev1.Node{} }},
	"karpenter.sh/nodeclaims":              {"NodeClaim", func() any { return &v1.NodeClaim{} }},
	"karpenter.sh/nodepools":               {"NodePool", func() any { return &v1.NodePool{} }},
	"karpenter.sh/nodeoverlays":            {"NodeOverlay", func() any { return &v1alpha1.NodeOverlay{} }},
	"karpenter.k8s.aws/ec2nodeclasses":     {"EC2NodeClass", func() any { return &awsv1.EC2NodeClass{} }},
	// Events, of which a trace keeps the interruptions (InterruptionReasons).
	"/events":              {"Event", func() any { return &corev1.Event{} }},
	"events.k8s.io/events": {"Event", func() any { return &eventsv1.Event{} }},
}

// FromAuditLog turns kube-apiserver audit events — audit.k8s.io/v1 Event
// JSON lines, as EKS exports them; several files are merged by time — into
// a trace on out: each successful create, update, patch or delete of a kind
// traces hold (and its status), a pod's binding to a node and its eviction,
// at the event's stageTimestamp. Only ResponseComplete events of level
// Request or RequestResponse carry the objects; what the log leaves out is
// counted in the header's notes, never dropped in silence. A line that is
// not an audit event stops it with the file, the line and why, before
// anything is written.
func FromAuditLog(out io.Writer, files []string) error {
	notes, kinds, start, err := scanAudit(files)
	if err != nil {
		return err
	}
	w, err := NewWriter(out, Header{Started: start, Kinds: kinds, Notes: notes, Server: "audit log"})
	if err != nil {
		return err
	}
	c := &auditConverter{w: w, pods: map[string]*corev1.Pod{}}
	last := start
	err = mergeAudit(files, func(ev *auditv1.Event) error {
		last = ev.StageTimestamp.Time
		return c.event(ev)
	})
	return errors.Join(err, w.Close(last))
}

// auditCursor reads one file's events in order.
type auditCursor struct {
	name string
	sc   *bufio.Scanner
	f    *os.File
	line int
	ev   *auditv1.Event
}

func openAudit(name string) (*auditCursor, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	return &auditCursor{name: name, sc: sc, f: f}, nil
}

// next reads the next event (ev nil at the end), skipping blank lines.
func (c *auditCursor) next() error {
	c.ev = nil
	for c.sc.Scan() {
		c.line++
		b := c.sc.Bytes()
		if len(b) == 0 {
			continue
		}
		ev := &auditv1.Event{}
		if err := json.Unmarshal(b, ev); err != nil {
			return fmt.Errorf("%s:%d: not an audit event (a JSON line of kind Event, apiVersion audit.k8s.io/v1): %v", c.name, c.line, err)
		}
		if ev.Kind != "Event" || ev.APIVersion != "audit.k8s.io/v1" {
			return fmt.Errorf("%s:%d: %q %q, not an audit event: the audit log's lines are kind Event, apiVersion audit.k8s.io/v1 (an EKS export: the log stream's messages, one per line)", c.name, c.line, ev.APIVersion, ev.Kind)
		}
		if ev.StageTimestamp.IsZero() {
			return fmt.Errorf("%s:%d: audit event %s has no stageTimestamp", c.name, c.line, ev.AuditID)
		}
		c.ev = ev
		return nil
	}
	if err := c.sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", c.name, c.line+1, err)
	}
	return nil
}

type cursorHeap []*auditCursor

func (h cursorHeap) Len() int { return len(h) }
func (h cursorHeap) Less(i, j int) bool {
	a, b := h[i].ev.StageTimestamp.Time, h[j].ev.StageTimestamp.Time
	if !a.Equal(b) {
		return a.Before(b)
	}
	return h[i].name < h[j].name
}
func (h cursorHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)   { *h = append(*h, x.(*auditCursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergeAudit calls fn with the files' events merged by stageTimestamp
// (each file is in its own order).
func mergeAudit(files []string, fn func(*auditv1.Event) error) error {
	h := &cursorHeap{}
	defer func() {
		for _, c := range *h {
			_ = c.f.Close()
		}
	}()
	for _, name := range files {
		c, err := openAudit(name)
		if err != nil {
			return err
		}
		if err := c.next(); err != nil {
			_ = c.f.Close()
			return err
		}
		if c.ev == nil {
			_ = c.f.Close()
			continue
		}
		heap.Push(h, c)
	}
	for h.Len() > 0 {
		c := (*h)[0]
		if err := fn(c.ev); err != nil {
			return fmt.Errorf("%s:%d: %w", c.name, c.line, err)
		}
		if err := c.next(); err != nil {
			return err
		}
		if c.ev == nil {
			heap.Pop(h)
			_ = c.f.Close()
			continue
		}
		heap.Fix(h, 0)
	}
	return nil
}

// scanAudit reads every line once before anything is written: a bad line
// stops the conversion with nothing half-written; it returns the notes on
// what the log leaves out, the kinds it has, and its first time.
func scanAudit(files []string) (notes, kinds []string, start time.Time, err error) {
	if len(files) == 0 {
		return nil, nil, start, errors.New("no audit log given: name one or more files of audit.k8s.io/v1 events")
	}
	metadataOnly, total := map[string]int{}, 0
	seen := map[string]bool{}
	err = mergeAudit(files, func(ev *auditv1.Event) error {
		if start.IsZero() {
			start = ev.StageTimestamp.Time
		}
		k, ok := refKind(ev)
		if !ok || ev.Stage != auditv1.StageResponseComplete || !mutating(ev.Verb) {
			return nil
		}
		total++
		seen[k] = true
		if ev.Level == auditv1.LevelMetadata || ev.Level == auditv1.LevelNone {
			metadataOnly[k]++
		}
		return nil
	})
	if err != nil {
		return nil, nil, start, err
	}
	for k := range seen {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var short []string
	for k, n := range metadataOnly {
		short = append(short, fmt.Sprintf("%s: %d of its changes were audited at level Metadata, without the object, and are not in the trace (audit it at level RequestResponse)", k, n))
	}
	sort.Strings(short)
	notes = append(notes, short...)
	if total == 0 {
		notes = append(notes, "the audit log has no change of a kind traces hold (pods, workloads, Nodes, NodeClaims, NodePools, …): is the audit policy recording them?")
	}
	return notes, kinds, start, nil
}

func refKind(ev *auditv1.Event) (string, bool) {
	if ev.ObjectRef == nil {
		return "", false
	}
	k, ok := auditKinds[ev.ObjectRef.APIGroup+"/"+ev.ObjectRef.Resource]
	return k.kind, ok
}

func mutating(verb string) bool {
	switch verb {
	case "create", "update", "patch", "delete":
		return true
	}
	return false
}

// auditConverter writes an audit log's events as trace records; it keeps
// the last state of each live pod, for its binding and eviction, whose
// events carry no pod.
type auditConverter struct {
	w    *Writer
	pods map[string]*corev1.Pod // by namespace/name
}

func (c *auditConverter) event(ev *auditv1.Event) error {
	if ev.Stage != auditv1.StageResponseComplete || !mutating(ev.Verb) || ev.ResponseStatus == nil || ev.ResponseStatus.Code >= 300 {
		return nil
	}
	ref := ev.ObjectRef
	k, ok := auditKinds[ref.APIGroup+"/"+ref.Resource]
	if !ok {
		return nil
	}
	at := ev.StageTimestamp.Time
	if k.kind == "Pod" && (ref.Subresource == "binding" || ref.Subresource == "eviction") {
		return c.podSubresource(at, ev)
	}
	if ref.Subresource != "" && ref.Subresource != "status" {
		return nil
	}
	obj := k.new()
	if k.kind == "Event" {
		return c.interruption(at, ev, obj)
	}
	if !decodeObject(ev.ResponseObject, k.kind, obj) {
		if ev.Verb != "delete" {
			return nil // at level Metadata: counted in the header's notes
		}
		// A delete answered with a Status: the object as last seen, or its
		// name.
		obj = c.lastOrStub(k.kind, ref)
	}
	op := OpUpdate
	switch ev.Verb {
	case "create":
		op = OpAdd
	case "delete":
		// A graceful delete only marks the object; it is gone when its
		// deletionTimestamp is set and no finalizer or grace remains, which
		// the final delete (grace 0) says.
		if m := metaOf(obj); m != nil && m.DeletionTimestamp != nil && len(m.Finalizers) > 0 {
			op = OpUpdate
		} else {
			op = OpDelete
		}
	}
	if p, ok := obj.(*corev1.Pod); ok {
		if op == OpDelete {
			delete(c.pods, p.Namespace+"/"+p.Name)
		} else {
			c.pods[p.Namespace+"/"+p.Name] = p
		}
	}
	return c.w.Object(at, op, k.kind, Sanitize(obj))
}

// interruption writes the creation of an interruption Event (an
// events.k8s.io/v1 one as the core Event it is too); other Events, and
// their updates and deletions, are not a trace's.
func (c *auditConverter) interruption(at time.Time, ev *auditv1.Event, obj any) error {
	if ev.Verb != "create" {
		return nil
	}
	src := ev.ResponseObject
	if src == nil || len(src.Raw) == 0 {
		src = ev.RequestObject
	}
	if !decodeObject(src, "Event", obj) {
		return nil
	}
	var e *corev1.Event
	switch o := obj.(type) {
	case *corev1.Event:
		e = o
	case *eventsv1.Event:
		e = &corev1.Event{ObjectMeta: o.ObjectMeta, InvolvedObject: o.Regarding, Reason: o.Reason, Type: o.Type, EventTime: o.EventTime,
			FirstTimestamp: o.DeprecatedFirstTimestamp, LastTimestamp: o.DeprecatedLastTimestamp, Count: o.DeprecatedCount}
	}
	if e == nil || !IsInterruption(e) {
		return nil
	}
	return c.w.Object(at, OpAdd, "Event", Sanitize(e))
}

// podSubresource writes a binding (the pod on its node) or an eviction (the
// pod marked DisruptionTarget) as an update of the pod as last seen.
func (c *auditConverter) podSubresource(at time.Time, ev *auditv1.Event) error {
	p := c.podNamed(ev.ObjectRef.Namespace, ev.ObjectRef.Name)
	if p == nil {
		return nil // a pod the log never showed
	}
	cp := p.DeepCopy()
	switch ev.ObjectRef.Subresource {
	case "binding":
		var b corev1.Binding
		if !decodeObject(ev.RequestObject, "Binding", &b) {
			return nil
		}
		cp.Spec.NodeName = b.Target.Name
	case "eviction":
		cp.Status.Conditions = append(cp.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "EvictionByEvictionAPI", LastTransitionTime: metav1.NewTime(at)})
	}
	c.pods[cp.Namespace+"/"+cp.Name] = cp
	return c.w.Object(at, OpUpdate, "Pod", Sanitize(cp))
}

func (c *auditConverter) podNamed(namespace, name string) *corev1.Pod {
	return c.pods[namespace+"/"+name]
}

func (c *auditConverter) lastOrStub(kind string, ref *auditv1.ObjectReference) any {
	if kind == "Pod" {
		if p := c.podNamed(ref.Namespace, ref.Name); p != nil {
			return p
		}
	}
	obj := auditKinds[ref.APIGroup+"/"+ref.Resource].new()
	if m := metaOf(obj); m != nil {
		m.Name, m.Namespace, m.UID = ref.Name, ref.Namespace, ref.UID
	}
	return obj
}

// decodeObject decodes an audit event's object into obj when it is of the
// kind (a Status, or no object at level Metadata, is not).
func decodeObject(u *runtime.Unknown, kind string, obj any) bool {
	if u == nil || len(u.Raw) == 0 {
		return false
	}
	raw := u.Raw
	var tm metav1.TypeMeta
	if json.Unmarshal(raw, &tm) != nil || tm.Kind != kind {
		return false
	}
	return json.Unmarshal(raw, obj) == nil
}

func metaOf(obj any) *metav1.ObjectMeta {
	if o, ok := obj.(interface{ GetObjectMeta() metav1.Object }); ok {
		if m, ok := o.GetObjectMeta().(*metav1.ObjectMeta); ok {
			return m
		}
	}
	return nil
}
