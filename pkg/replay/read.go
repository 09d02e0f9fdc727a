// Package replay turns a trace (package trace, `joiner record`) into what
// the simulator runs — the recorded cluster's configuration and a
// scenario.Replay of its workloads — and what the recorded cluster did, so
// a backtest can hold the simulation against it.
//
// A workload is a pod's controller: a ReplicaSet (a Deployment's revision,
// so a rollout replays as the two ReplicaSets it was), a StatefulSet or a
// Job. It scales as its recorded spec.replicas did (or, when its object was
// not recorded, as its live pods did); pods of other owners, and bare pods,
// come and go when they did. DaemonSet and mirror pods belong to nodes.
package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

// Recording is a trace read whole.
type Recording struct {
	Header trace.Header
	// Start and End bound the recording: its header's start and its last
	// record. Complete says it ended with the recorder's end record.
	Start, End time.Time
	Complete   bool

	// The cluster's configuration: each object as first recorded (what
	// changed later is counted in Notes).
	NodePools      []*v1.NodePool
	NodeClasses    []*awsv1.EC2NodeClass
	NodeOverlays   []*v1alpha1.NodeOverlay
	DaemonSets     []*appsv1.DaemonSet
	PDBs           []*policyv1.PodDisruptionBudget
	Claims         []*corev1.PersistentVolumeClaim
	Volumes        []*corev1.PersistentVolume
	StorageClasses []*storagev1.StorageClass

	// Replay is the recorded workloads, for the simulator.
	Replay scenario.Replay

	// What the recorded cluster did: every Karpenter node (with a
	// karpenter.sh/nodepool label) and every pod a workload or bare pod
	// replays, by start and name.
	Nodes []NodeLife
	Pods  []PodLife

	// Startup is how long the recorded nodes took to come up; a replay's
	// simulated cloud takes it.
	Startup Startup
	// SchedulerPace is how many pods a second the recorded kube-scheduler
	// got through while pods waited for it (0: it never fell behind).
	SchedulerPace float64

	// Region is the nodes' topology.kubernetes.io/region ("" when none
	// says).
	Region string
	// Notes say what the recording held that the replay does not model,
	// or models as an assumption, and every gap.
	Notes []string
}

// NodeLife is one recorded Karpenter node.
type NodeLife struct {
	Name         string     `json:"name"`
	NodePool     string     `json:"nodePool"`
	InstanceType string     `json:"instanceType"`
	Zone         string     `json:"zone"`
	CapacityType string     `json:"capacityType"`
	Created      time.Time  `json:"created"`
	Deleted      *time.Time `json:"deleted,omitempty"`
}

// PodLife is one recorded pod that a workload or bare pod replays.
type PodLife struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Workload names its controller as the simulator's reports do
	// ("ReplicaSet/web-7d9f", "Pod/debug").
	Workload string    `json:"workload"`
	Created  time.Time `json:"created"`
	// Bound is when it was scheduled (nil: never, in the recording).
	Bound *time.Time `json:"bound,omitempty"`
	// Gone is when it finished or was deleted (nil: it lived to the end).
	Gone *time.Time `json:"gone,omitempty"`
}

// Read reads a trace to its end.
func Read(r *trace.Reader) (*Recording, error) {
	b := newBuilder(r.Header)
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, io.ErrUnexpectedEOF) { // killed while it wrote: what it flushed is whole
			b.rec.Notes = append(b.rec.Notes, err.Error()+"; replayed up to its last whole record")
			break
		}
		if err != nil {
			return nil, err
		}
		if err := b.record(rec); err != nil {
			return nil, err
		}
	}
	return b.finish(), nil
}

// objKey names an object in the builder's maps.
type objKey struct{ kind, ns, name string }

type builder struct {
	rec *Recording
	// seen: every object of a configuration kind first recorded, and how
	// many were changed or added after the start.
	config  map[objKey]bool
	changed map[string]int
	added   map[string]int
	deleted map[string]int
	// listing: the objects of each kind a sync in progress has listed.
	listing map[string]map[objKey]bool
	owners  map[objKey]*owner
	pods    map[objKey]*pod
	// podList: pods whose name another pod took later.
	podList []*pod
	nodes   map[string]*node
	claims  map[string]*claim
	// followed: objects of kinds the replay follows through others
	// (Deployments through ReplicaSets, CronJobs through Jobs), and
	// NodeClaims (the recorded autoscaler's decisions, which a replay makes
	// its own of).
	followed map[string]map[string]bool
	last     time.Time
	synced   map[string]bool
	hpas     int
	gaps     []string
	// interruptions are the cloud's, by their Event's name (an Event seen
	// again is one interruption).
	interruptions map[objKey]*interruption
}

func newBuilder(h trace.Header) *builder {
	start := h.Started.UTC()
	return &builder{rec: &Recording{Header: h, Start: start, End: start}, config: map[objKey]bool{}, changed: map[string]int{}, added: map[string]int{}, deleted: map[string]int{},
		listing: map[string]map[objKey]bool{}, owners: map[objKey]*owner{}, pods: map[objKey]*pod{}, nodes: map[string]*node{}, synced: map[string]bool{},
		claims: map[string]*claim{}, followed: map[string]map[string]bool{}, interruptions: map[objKey]*interruption{}}
}

// record takes one record.
func (b *builder) record(rec trace.Record) error {
	t := rec.Time.UTC()
	if t.After(b.last) {
		b.last = t
	}
	switch rec.Op {
	case trace.OpEnd:
		b.rec.Complete = true
		return nil
	case trace.OpSync:
		b.listing[rec.Kind] = map[objKey]bool{}
		return nil
	case trace.OpSynced:
		b.endListing(rec.Kind, t)
		b.synced[rec.Kind] = true
		return nil
	case trace.OpGap:
		why := ""
		if rec.Gap != nil {
			why = rec.Gap.Why
		}
		b.gaps = append(b.gaps, fmt.Sprintf("%s: the %s watch broke (%s); what happened to them until the next listing is not in the recording", t.Format(time.RFC3339), rec.Kind, why))
		return nil
	case trace.OpAdd, trace.OpUpdate, trace.OpDelete:
		return b.object(rec, t)
	}
	return nil
}

// endListing deletes, at t, the objects of kind a listing did not hold: they
// went while the watch was broken.
func (b *builder) endListing(kind string, t time.Time) {
	listed := b.listing[kind]
	delete(b.listing, kind)
	if listed == nil || !b.synced[kind] {
		return
	}
	gone := func(k objKey) bool { return k.kind == kind && !listed[k] }
	for k, p := range b.pods {
		if gone(k) && p.gone == nil {
			p.gone = &t
		}
	}
	for k, o := range b.owners {
		if gone(k) && o.deleted == nil {
			o.deleted = &t
		}
	}
	for name, n := range b.nodes {
		if gone(objKey{kind: "Node", name: name}) && n.deleted == nil {
			n.deleted = &t
		}
	}
}

func (b *builder) object(rec trace.Record, t time.Time) error {
	var meta struct { // only the key: each kind's branch decodes the object it needs
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(rec.Object, &meta); err != nil {
		return fmt.Errorf("trace: a %s record at %s: %w", rec.Kind, t.Format(time.RFC3339), err)
	}
	k := objKey{kind: rec.Kind, ns: meta.Metadata.Namespace, name: meta.Metadata.Name}
	if l := b.listing[rec.Kind]; l != nil {
		l[k] = true
	}
	del := rec.Op == trace.OpDelete
	switch rec.Kind {
	case "Pod":
		return b.pod(k, rec.Object, t, del)
	case "ReplicaSet", "StatefulSet", "Job":
		return b.owner(k, rec.Object, t, del)
	case "Node":
		return b.node(k.name, rec.Object, t, del)
	case "NodeClaim":
		b.follow(k)
		return b.claim(k.name, rec.Object, t, del)
	case "Deployment", "CronJob":
		b.follow(k)
		return nil
	case "Event":
		if del {
			return nil // an Event's expiry says nothing of its instance
		}
		return b.event(k, rec.Object, t)
	case "HorizontalPodAutoscaler":
		if !b.config[k] {
			b.config[k] = true
			b.hpas++
		}
		return nil
	}
	return b.configObject(k, rec, t)
}

func (b *builder) follow(k objKey) {
	if b.followed[k.kind] == nil {
		b.followed[k.kind] = map[string]bool{}
	}
	b.followed[k.kind][k.ns+"/"+k.name] = true
}

// configObject keeps the first version of a configuration object and
// counts what came after.
func (b *builder) configObject(k objKey, rec trace.Record, t time.Time) error {
	if b.config[k] {
		switch {
		case rec.Op == trace.OpDelete:
			b.deleted[k.kind]++
		case k.kind == "NodePool":
			var np v1.NodePool
			if err := json.Unmarshal(rec.Object, &np); err != nil {
				return fmt.Errorf("trace: the NodePool %s at %s: %w", k.name, t.Format(time.RFC3339), err)
			}
			b.rec.Replay.NodePools = append(b.rec.Replay.NodePools, scenario.ReplayNodePool{At: b.offset(t), NodePool: &np})
		case k.kind == "EC2NodeClass":
			var nc awsv1.EC2NodeClass
			if err := json.Unmarshal(rec.Object, &nc); err != nil {
				return fmt.Errorf("trace: the EC2NodeClass %s at %s: %w", k.name, t.Format(time.RFC3339), err)
			}
			b.rec.Replay.NodeClasses = append(b.rec.Replay.NodeClasses, scenario.ReplayNodeClass{At: b.offset(t), NodeClass: &nc})
		default:
			b.changed[k.kind]++
		}
		return nil
	}
	b.config[k] = true
	if b.synced[k.kind] {
		b.added[k.kind]++
	}
	r := b.rec
	var err error
	switch k.kind {
	case "NodePool":
		err = decodeAppend(rec.Object, &r.NodePools)
	case "EC2NodeClass":
		err = decodeAppend(rec.Object, &r.NodeClasses)
	case "NodeOverlay":
		err = decodeAppend(rec.Object, &r.NodeOverlays)
	case "DaemonSet":
		err = decodeAppend(rec.Object, &r.DaemonSets)
	case "PodDisruptionBudget":
		err = decodeAppend(rec.Object, &r.PDBs)
	case "PersistentVolumeClaim":
		err = decodeAppend(rec.Object, &r.Claims)
	case "PersistentVolume":
		err = decodeAppend(rec.Object, &r.Volumes)
	case "StorageClass":
		err = decodeAppend(rec.Object, &r.StorageClasses)
	}
	if err != nil {
		return fmt.Errorf("trace: the %s %s at %s: %w", k.kind, k.name, t.Format(time.RFC3339), err)
	}
	return nil
}

func decodeAppend[T any](raw json.RawMessage, list *[]*T) error {
	obj := new(T)
	if err := json.Unmarshal(raw, obj); err != nil {
		return err
	}
	*list = append(*list, obj)
	return nil
}

// node is a recorded Node.
type node struct {
	life    NodeLife
	managed bool
	deleted *time.Time
	// ready: when it was first seen Ready.
	ready *time.Time
}

func (b *builder) node(name string, raw json.RawMessage, t time.Time, del bool) error {
	var obj corev1.Node
	if err := json.Unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("trace: the Node %s at %s: %w", name, t.Format(time.RFC3339), err)
	}
	n := b.nodes[name]
	if n == nil {
		l := obj.Labels
		created := obj.CreationTimestamp.UTC()
		if created.IsZero() {
			created = t
		}
		n = &node{life: NodeLife{Name: name, NodePool: l[v1.LabelNodePool], InstanceType: l[corev1.LabelInstanceTypeStable], Zone: l[corev1.LabelTopologyZone],
			CapacityType: l[v1.LabelCapacityType], Created: created}, managed: l[v1.LabelNodePool] != ""}
		if r := l[corev1.LabelTopologyRegion]; r != "" && b.rec.Region == "" {
			b.rec.Region = r
		}
		b.nodes[name] = n
	}
	n.seen(&obj, t)
	if del && n.deleted == nil {
		n.deleted = &t
	}
	return nil
}

func (b *builder) finish() *Recording {
	r := b.rec
	r.End = b.last
	if r.End.Before(r.Start) {
		r.End = r.Start
	}
	nodePools, nodeClasses := r.Replay.NodePools, r.Replay.NodeClasses
	r.Replay = b.workloads()
	r.Replay.NodePools, r.Replay.NodeClasses = nodePools, nodeClasses
	r.Replay.Interruptions = b.replayedInterruptions()
	r.Startup = b.startup()
	r.SchedulerPace = b.schedulerPace()
	unmanaged := 0
	for _, name := range slices.Sorted(maps.Keys(b.claims)) { // an instance costs from its launch, not its Node's registration
		c := b.claims[name]
		n := b.nodes[c.node]
		if n == nil {
			n = b.nodes[name] // a Node named as its claim, the claim's nodeName not yet recorded
		}
		if n != nil {
			if c.created.Before(n.life.Created) {
				n.life.Created = c.created
			}
			continue
		}
		if c.instanceType != "" && c.nodePool != "" {
			// Launched, and gone (interrupted, or its registration timed
			// out) before a Node registered — or still booting at the
			// end: the instance ran, and cost, all the same.
			r.Nodes = append(r.Nodes, NodeLife{Name: name, NodePool: c.nodePool, InstanceType: c.instanceType, Zone: c.zone,
				CapacityType: c.capacityType, Created: c.created, Deleted: c.deleted})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(b.nodes)) {
		n := b.nodes[name]
		if !n.managed {
			unmanaged++
			continue
		}
		n.life.Deleted = n.deleted
		r.Nodes = append(r.Nodes, n.life)
	}
	sort.SliceStable(r.Nodes, func(i, j int) bool { return r.Nodes[i].Created.Before(r.Nodes[j].Created) })
	if unmanaged > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d recorded nodes have no karpenter.sh/nodepool label (not Karpenter's): the replay has no such nodes, and the pods that ran on them ask the NodePools for nodes", unmanaged))
	}
	for _, kind := range slices.Sorted(maps.Keys(b.changed)) {
		r.Notes = append(r.Notes, fmt.Sprintf("%d changes to %s objects during the recording are not replayed: each is replayed as first recorded", b.changed[kind], kind))
	}
	for _, kind := range slices.Sorted(maps.Keys(b.deleted)) {
		r.Notes = append(r.Notes, fmt.Sprintf("%d %s objects deleted during the recording are replayed as there to the end", b.deleted[kind], kind))
	}
	for _, kind := range slices.Sorted(maps.Keys(b.added)) {
		r.Notes = append(r.Notes, fmt.Sprintf("%d %s objects created during the recording are replayed as there from the start", b.added[kind], kind))
	}
	if n := len(b.followed["Deployment"]); n > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d Deployments replay through their ReplicaSets (a rollout as the two ReplicaSets it was)", n))
	}
	if n := len(b.followed["CronJob"]); n > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d CronJobs replay through the Jobs they made during the recording", n))
	}
	if n := len(b.followed["NodeClaim"]); n > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("the recording's %d NodeClaims were its autoscaler's decisions: the replay's autoscaler makes its own", n))
	}
	if b.hpas > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d HorizontalPodAutoscalers: their targets scale as recorded (the simulator's HPA model does not run)", b.hpas))
	}
	if !r.Complete {
		r.Notes = append(r.Notes, fmt.Sprintf("the trace has no end record (the recording was cut short): it is replayed to its last record, %s", r.End.Format(time.RFC3339)))
	}
	r.Notes = append(r.Notes, b.gaps...)
	return r
}
