package replay

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

const onDemandPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
`

const spotPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: spot
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: ["spot"]}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
`

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// pools loads NodePool manifests as a scenario directory would.
func pools(t *testing.T, docs ...string) *scenario.Input {
	t.Helper()
	in, err := scenario.Load(fstest.MapFS{"pools.yaml": {Data: []byte(strings.Join(docs, "---\n"))}}, ".", "pools")
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// clusterTrace is two hours of a small cluster: a ReplicaSet scaled 4 → 2
// at 30m, a bare pod from 5m to 20m, a Job of three 10-minute pods at 40m,
// and the node the recorded autoscaler ran them on.
func clusterTrace(t *testing.T, edits ...func(put func(time.Duration, trace.Op, string, any))) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := trace.NewWriter(&buf, trace.Header{Started: t0, Kinds: []string{"NodePool", "ReplicaSet", "Job", "Pod", "Node"}})
	if err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	put := func(d time.Duration, op trace.Op, kind string, obj any) {
		t.Helper()
		if err := w.Object(at(d), op, kind, obj); err != nil {
			t.Fatal(err)
		}
	}
	sync := func(kind string, objs ...any) {
		_ = w.Write(trace.Record{Time: t0, Op: trace.OpSync, Kind: kind})
		for _, o := range objs {
			put(0, trace.OpAdd, kind, o)
		}
		_ = w.Write(trace.Record{Time: t0, Op: trace.OpSynced, Kind: kind})
	}
	sync("NodePool", pools(t, onDemandPool).NodePools[0])
	sync("ReplicaSet")
	sync("Job")
	yes := true
	// A pod that finished before the recording began, listed at its start:
	// it never asked for room in it.
	sync("Pod", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "migrate", Namespace: "shop", UID: "migrate", CreationTimestamp: metav1.NewTime(t0.Add(-2 * time.Hour))},
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded}})
	sync("Node")
	requests := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: requests}}}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: spec}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop", CreationTimestamp: metav1.NewTime(at(time.Minute))},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(4)), Template: tmpl}}
	put(time.Minute, trace.OpAdd, "ReplicaSet", rs)
	pod := func(name, ownerKind, ownerName string, created time.Duration) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID(name), CreationTimestamp: metav1.NewTime(at(created))}, Spec: *spec.DeepCopy()}
		if ownerKind != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: ownerKind, Name: ownerName, Controller: &yes}}
		}
		return p
	}
	bound := func(p *corev1.Pod, d time.Duration) *corev1.Pod {
		p = p.DeepCopy()
		p.Spec.NodeName = "node-1"
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at(d))}}
		return p
	}
	var web []*corev1.Pod
	for _, n := range []string{"web-a", "web-b", "web-c", "web-d"} {
		p := pod(n, "ReplicaSet", "web-1", time.Minute)
		web = append(web, p)
		put(time.Minute, trace.OpAdd, "Pod", p)
	}
	put(100*time.Second, trace.OpAdd, "Node", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", CreationTimestamp: metav1.NewTime(at(90 * time.Second)),
		Labels: map[string]string{v1.LabelNodePool: "general", corev1.LabelInstanceTypeStable: "m5.2xlarge", corev1.LabelTopologyZone: "us-east-1a",
			v1.LabelCapacityType: "on-demand", corev1.LabelTopologyRegion: "us-east-1"}}})
	for _, p := range web {
		put(2*time.Minute, trace.OpUpdate, "Pod", bound(p, 2*time.Minute))
	}
	debug := pod("debug", "", "", 5*time.Minute)
	put(5*time.Minute, trace.OpAdd, "Pod", debug)
	put(5*time.Minute+10*time.Second, trace.OpUpdate, "Pod", bound(debug, 5*time.Minute+10*time.Second))
	put(20*time.Minute, trace.OpDelete, "Pod", bound(debug, 5*time.Minute+10*time.Second))
	rs2 := rs.DeepCopy()
	rs2.Spec.Replicas = ptr.To(int32(2))
	put(30*time.Minute, trace.OpUpdate, "ReplicaSet", rs2)
	put(30*time.Minute, trace.OpDelete, "Pod", bound(web[2], 2*time.Minute))
	put(30*time.Minute, trace.OpDelete, "Pod", bound(web[3], 2*time.Minute))
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "report", Namespace: "shop", CreationTimestamp: metav1.NewTime(at(40 * time.Minute))},
		Spec: batchv1.JobSpec{Completions: ptr.To(int32(3)), Parallelism: ptr.To(int32(3)), Template: tmpl}}
	put(40*time.Minute, trace.OpAdd, "Job", job)
	for _, n := range []string{"report-a", "report-b", "report-c"} {
		p := pod(n, "Job", "report", 40*time.Minute)
		put(40*time.Minute, trace.OpAdd, "Pod", p)
		b := bound(p, 41*time.Minute)
		put(41*time.Minute, trace.OpUpdate, "Pod", b)
		b = b.DeepCopy()
		b.Status.Phase = corev1.PodSucceeded
		put(51*time.Minute, trace.OpUpdate, "Pod", b)
	}
	for _, edit := range edits {
		edit(put)
	}
	if err := w.Close(at(2 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readTrace(t *testing.T, b []byte) *Recording {
	t.Helper()
	r, err := trace.NewReader(bytes.NewReader(b), "cluster.trace.gz")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := Read(r)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestReadWorkloads(t *testing.T) {
	rec := readTrace(t, clusterTrace(t))
	if !rec.Complete || rec.End.Sub(rec.Start) != 2*time.Hour || rec.Region != "us-east-1" {
		t.Fatalf("complete %v, %s long, region %q; want complete, 2h, us-east-1", rec.Complete, rec.End.Sub(rec.Start), rec.Region)
	}
	if len(rec.Replay.Workloads) != 2 {
		t.Fatalf("workloads %+v, want the ReplicaSet and the Job", rec.Replay.Workloads)
	}
	web, job := rec.Replay.Workloads[0], rec.Replay.Workloads[1]
	want := []scenario.ReplicaStep{{At: time.Minute, Replicas: 4}, {At: 30 * time.Minute, Replicas: 2}}
	if web.Kind != "ReplicaSet" || web.Name != "web-1" || len(web.Steps) != 2 || web.Steps[0] != want[0] || web.Steps[1] != want[1] {
		t.Errorf("web: %s/%s steps %+v, want ReplicaSet/web-1 %+v", web.Kind, web.Name, web.Steps, want)
	}
	if job.Kind != "Job" || job.Job == nil || job.Job.Completions != 3 || job.Job.Runtime != 10*time.Minute || job.Steps[0] != (scenario.ReplicaStep{At: 40 * time.Minute, Replicas: 3}) {
		t.Errorf("job: %+v %+v, want 3 completions of 10m from 40m, 3 at once", job.Job, job.Steps)
	}
	// (the pod that finished before the start is in neither)
	if len(rec.Replay.Pods) != 1 || rec.Replay.Pods[0].At != 5*time.Minute || rec.Replay.Pods[0].Until != 20*time.Minute || rec.Replay.Pods[0].Pod.Spec.NodeName != "" {
		t.Errorf("bare pods %+v, want debug from 5m to 20m, unbound", rec.Replay.Pods)
	}
	if len(rec.Pods) != 8 || len(rec.Nodes) != 1 || rec.Nodes[0].InstanceType != "m5.2xlarge" || rec.Nodes[0].Deleted != nil {
		t.Errorf("recorded %d pods and nodes %+v; want 8 pods and node-1, an m5.2xlarge still running", len(rec.Pods), rec.Nodes)
	}
	for _, p := range rec.Pods {
		if p.Bound == nil || p.Bound.Sub(p.Created) > time.Minute {
			t.Errorf("pod %s: created %s, bound %v; want bound within a minute", p.Name, p.Created, p.Bound)
		}
	}
}

func TestReplayRunsTheRecordedWorkloads(t *testing.T) {
	rec := readTrace(t, clusterTrace(t))
	in, err := rec.Input("cluster.trace.gz", nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(context.Background(), in, fstest.MapFS{}, ".", sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 4 web pods, the debug pod and the Job's 3: the replay makes the
	// recorded pods, and one more for each pod its consolidation evicts.
	if rep.Pods.Created != 8+rep.Pods.Evictions || rep.Pods.Ran != rep.Pods.Created || rep.Pods.NeverRan != 0 {
		t.Errorf("created %d, ran %d, never ran %d, evicted %d; want 8 and one per eviction, all ran (notes %q)", rep.Pods.Created, rep.Pods.Ran, rep.Pods.NeverRan, rep.Pods.Evictions, rep.Notes)
	}
	if !rep.Start.Equal(t0) || !rep.End.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("ran %s–%s, want the recording's %s–%s", rep.Start, rep.End, t0, t0.Add(2*time.Hour))
	}
	for _, c := range []struct {
		at   time.Duration
		want int
	}{{59 * time.Second, 0}, {10 * time.Minute, 4}, {35 * time.Minute, 2}} {
		if got := webPodsAt(t, in, c.at); got != c.want {
			t.Errorf("web pods at %s: %d, want %d", c.at, got, c.want)
		}
	}
	if rep.Cost.ByPool["general"] <= 0 {
		t.Errorf("cost %+v: the recorded NodePool general paid nothing", rep.Cost)
	}
	if !hasNote(rep.Notes, "replaying the trace cluster.trace.gz: 2 workloads and 1 bare pods") || !hasNote(rep.Notes, "starts with no nodes") {
		t.Errorf("notes %q: want what the replay is and what it assumes", rep.Notes)
	}
}

// webPodsAt counts the ReplicaSet's pods the replay holds at an offset.
func webPodsAt(t *testing.T, in *scenario.Input, d time.Duration) int {
	t.Helper()
	m, err := sim.RunUntil(context.Background(), in, fstest.MapFS{}, ".", t0.Add(d), sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range m.Cluster.Pods {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "ReplicaSet" && ref.Name == "web-1" {
			n++
		}
	}
	return n
}

func hasNote(notes []string, s string) bool {
	for _, n := range notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

func TestReplayUnderOtherNodePools(t *testing.T) {
	rec := readTrace(t, clusterTrace(t))
	in, err := rec.Input("cluster.trace.gz", pools(t, spotPool))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(context.Background(), in, fstest.MapFS{}, ".", sim.Options{Policy: provisioning.Policy{}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pods.Ran != 8+rep.Pods.Evictions || rep.Cost.ByPool["spot"] <= 0 || rep.Cost.ByPool["general"] != 0 {
		t.Errorf("ran %d, cost by pool %v: want the 8 pods on the spot pool only", rep.Pods.Ran, rep.Cost.ByPool)
	}
	for _, n := range rep.ByNode {
		if n.CapacityType != "spot" {
			t.Errorf("node %s is %s, want spot", n.Name, n.CapacityType)
		}
	}
	if !hasNote(rep.Notes, "are pools's (1 NodePools), not the recorded ones") {
		t.Errorf("notes %q: want the override named", rep.Notes)
	}
}

var update = flag.Bool("update", false, "rewrite testdata/small.trace.gz from clusterTrace")

// TestSmallTraceIsClusterTrace keeps testdata/small.trace.gz (which the
// command's tests replay and backtest) the trace clusterTrace writes.
func TestSmallTraceIsClusterTrace(t *testing.T) {
	const file = "testdata/small.trace.gz"
	want := clusterTrace(t)
	if *update {
		if err := os.WriteFile(file, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (go test ./pkg/replay -run TestSmallTrace -update writes it)", err)
	}
	a, b := readTrace(t, got), readTrace(t, want)
	if !reflect.DeepEqual(a.Replay.Workloads, b.Replay.Workloads) || !reflect.DeepEqual(a.Nodes, b.Nodes) || len(a.Pods) != len(b.Pods) {
		t.Errorf("%s is not what clusterTrace writes: go test ./pkg/replay -run TestSmallTrace -update", file)
	}
}

func TestBacktestOfTheSmallCluster(t *testing.T) {
	rec := readTrace(t, clusterTrace(t))
	in, err := rec.Input("cluster.trace.gz", nil)
	if err != nil {
		t.Fatal(err)
	}
	offered, err := sim.Offerings(in, fstest.MapFS{}, ".", provisioning.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	p, ok := Prices(offered)("general", "m5.2xlarge", "us-east-1a", "on-demand")
	if !ok || p <= 0 {
		t.Fatalf("m5.2xlarge on-demand in us-east-1a: %v %v, want the catalog's price", p, ok)
	}
	bt, err := RunBacktest(context.Background(), "cluster.trace.gz", rec, fstest.MapFS{}, ".", sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Two hours, every minute (a shorter recording, every 10 s).
	if len(bt.Recorded) != 121 || len(bt.Simulated) != 121 || bt.Step != 60 || Step(119*time.Minute) != 10*time.Second {
		t.Fatalf("%d recorded and %d simulated points %v s apart, want 121 each (0 to 2 h, every minute)", len(bt.Recorded), len(bt.Simulated), bt.Step)
	}
	// The recorded node ran from 1m30s to the end: 118.5 minutes.
	if want := round4(p * 118.5 / 60); bt.Errors.RecordedCostUSD != want {
		t.Errorf("recorded cost $%v, want $%v", bt.Errors.RecordedCostUSD, want)
	}
	if r := bt.Recorded[1]; r.Nodes != 0 || r.Pending != 4 {
		t.Errorf("recorded at 1m: %d nodes, %d pending; want 0 and the 4 web pods", r.Nodes, r.Pending)
	}
	if r := bt.Recorded[10]; r.Nodes != 1 || r.NodesByCapacityType["on-demand"] != 1 || r.Pending != 0 || r.CostPerHour != round4(p) {
		t.Errorf("recorded at 10m: %+v; want the one on-demand node at $%v/h, nothing pending", r, p)
	}
	// Pending: the 4 web pods and the Job's 3 waited 60 s, the debug pod 10 s.
	if e := bt.Errors; e.RecordedPendingP50 != 60 || e.RecordedPendingP90 != 60 {
		t.Errorf("recorded pending p50/p90 %v/%v s, want 60/60", e.RecordedPendingP50, e.RecordedPendingP90)
	}
	if e := bt.Errors; e.SimulatedCostUSD <= 0 || math.Abs(e.CostError-(e.SimulatedCostUSD-e.RecordedCostUSD)/e.RecordedCostUSD*100) > 0.1 {
		t.Errorf("simulated $%v, error %v %%: want a cost and its error against the recorded", e.SimulatedCostUSD, e.CostError)
	}
	var sb strings.Builder
	bt.WriteSummary(&sb)
	for _, s := range []string{"node count   mean absolute error", "cost         recorded $", "pending p50  recorded 60.0 s", "no NodeClaim of the recording came up", "decisions joiner"} {
		if !strings.Contains(sb.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, sb.String())
		}
	}
}

func TestMAPE(t *testing.T) {
	pts := func(ns ...int) []Point {
		var out []Point
		for i, n := range ns {
			out = append(out, Point{Seconds: 60 * i, Nodes: n})
		}
		return out
	}
	nodes := func(p Point) int { return p.Nodes }
	// Minutes with no recorded node do not count; |2−4|/4 and |3−3|/3.
	if got := mape(pts(0, 4, 3), pts(5, 2, 3), nodes); got != 25 {
		t.Errorf("mape = %v, want 25", got)
	}
	if got := mape(pts(0, 0), pts(1, 1), nodes); got != 0 {
		t.Errorf("mape with nothing recorded = %v, want 0", got)
	}
}

// A recorded edit of a NodePool's template replays at its time: the
// nodes launched before it drift.
func TestReplayedNodePoolEditDrifts(t *testing.T) {
	np := pools(t, onDemandPool).NodePools[0]
	np.Annotations = map[string]string{v1.AnnotationNodePoolHash: "a", v1.AnnotationNodePoolHashVersion: "v1"}
	edited := np.DeepCopy()
	edited.Spec.Template.Labels = map[string]string{"rev": "b"}
	edited.Annotations[v1.AnnotationNodePoolHash] = "b"
	rec := readTrace(t, clusterTrace(t, func(put func(time.Duration, trace.Op, string, any)) {
		put(59*time.Minute, trace.OpUpdate, "NodePool", np) // the controller's hash on the first version
		put(time.Hour, trace.OpUpdate, "NodePool", edited)
	}))
	if n := len(rec.Replay.NodePools); n != 2 || rec.Replay.NodePools[1].At != time.Hour {
		t.Fatalf("%d NodePool changes (%+v), want the two, the edit at 1h", n, rec.Replay.NodePools)
	}
	in, err := rec.Input("cluster.trace.gz", nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(context.Background(), in, fstest.MapFS{}, ".", sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	drifted := 0
	for _, d := range rep.Disruptions {
		if d.Reason == string(v1.DisruptionReasonDrifted) {
			drifted += d.Count
		}
	}
	if drifted == 0 {
		t.Errorf("disruptions %+v: want the nodes of before the edit drifted", rep.Disruptions)
	}
	for _, ev := range rep.DisruptionEvents {
		if ev.Reason == string(v1.DisruptionReasonDrifted) && ev.Minute < 60 {
			t.Errorf("a node drifted at minute %v, before the edit", ev.Minute)
		}
	}
	// Under another directory's NodePools, the recorded edits are named,
	// not replayed.
	in, err = rec.Input("cluster.trace.gz", pools(t, spotPool))
	if err != nil {
		t.Fatal(err)
	}
	if in.Replay.NodePools != nil || !hasNote(in.Notes, "the 2 changes to the recorded NodePools during the recording are not replayed") {
		t.Errorf("with another directory's NodePools: changes %v, notes %q", in.Replay.NodePools, in.Notes)
	}
}

// A recording killed while it wrote is replayed up to its last whole
// record, and says so.
func TestReadTraceCutShort(t *testing.T) {
	b := clusterTrace(t)
	rec := readTrace(t, b[:len(b)*3/4])
	if rec.Complete || !hasNote(rec.Notes, "the trace ends mid-record") || !hasNote(rec.Notes, "replayed up to its last whole record") {
		t.Errorf("complete %v, notes %q: want a cut-short trace read and named", rec.Complete, rec.Notes)
	}
	if len(rec.NodePools) != 1 || rec.End.Sub(rec.Start) >= 2*time.Hour {
		t.Errorf("%d NodePools, %s long: want what was written before the cut", len(rec.NodePools), rec.End.Sub(rec.Start))
	}
}

// TestSchedulerPace: a recorded kube-scheduler that marked a burst of 100
// pods unschedulable ten a second was behind for ten seconds: the replay's
// kube-scheduler tries ten a second. A recording without a pod marked
// says nothing of its pace.
func TestSchedulerPace(t *testing.T) {
	if rec := readTrace(t, clusterTrace(t)); rec.SchedulerPace != 0 {
		t.Errorf("no pod marked unschedulable: pace %v, want 0 (unknown)", rec.SchedulerPace)
	}
	rec := readTrace(t, clusterTrace(t, markedPods("burst", 100, time.Hour, 100*time.Millisecond)))
	if rec.SchedulerPace != 10 {
		t.Fatalf("100 pods marked over 10 s: pace %v a second, want 10", rec.SchedulerPace)
	}
	in, err := rec.Input("cluster.trace.gz", nil)
	if err != nil {
		t.Fatal(err)
	}
	if k := in.Scenario.Spec.KubeScheduler; k == nil || k.PodsPerSecond != 10 || !hasNote(in.Notes, "kube-scheduler tries 10 pending pods a second") {
		t.Errorf("the replay's kube-scheduler: %+v, notes %q", k, in.Notes)
	}
	// Twelve pods created 10 ms before a window ends and marked within
	// 30 ms, across its end: no pod waited through a window, so no pace
	// (the window's count would be the pods there were).
	if rec := readTrace(t, clusterTrace(t, markedPods("small", 12, time.Hour+paceWindow-10*time.Millisecond, 2500*time.Microsecond))); rec.SchedulerPace != 0 {
		t.Errorf("12 pods marked within 30 ms across a window's end: pace %v, want 0 (never behind)", rec.SchedulerPace)
	}
}

// markedPods adds n pods of one core created at the offset created and
// marked unschedulable one every step from then.
func markedPods(prefix string, n int, created, step time.Duration) func(put func(time.Duration, trace.Op, string, any)) {
	return func(put func(time.Duration, trace.Op, string, any)) {
		spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}
		for i := range n {
			name := fmt.Sprintf("%s-%d", prefix, i)
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID(name), CreationTimestamp: metav1.NewTime(t0.Add(created))}, Spec: spec}
			put(created, trace.OpAdd, "Pod", p)
			marked := created + time.Duration(i)*step
			p = p.DeepCopy()
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				LastTransitionTime: metav1.NewTime(t0.Add(marked))}}
			put(marked, trace.OpUpdate, "Pod", p)
		}
	}
}

// TestReadCountsClaimsWithoutNodes: an instance costs from its launch — a
// NodeClaim launched and then interrupted, or still booting at the end,
// before its Node registered is a node of the recording all the same
// (from its creation to its deletion); a claim with a Node counts once,
// from the claim's creation; one never launched is no node.
func TestReadCountsClaimsWithoutNodes(t *testing.T) {
	claim := func(name string, created time.Duration, it, nodeName string) *v1.NodeClaim {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(created)), Labels: map[string]string{v1.LabelNodePool: "general"}}}
		if it != "" {
			nc.Labels[corev1.LabelInstanceTypeStable], nc.Labels[corev1.LabelTopologyZone], nc.Labels[v1.LabelCapacityType] = it, "us-east-1b", "spot"
		}
		nc.Status.NodeName = nodeName
		return nc
	}
	rec := readTrace(t, clusterTrace(t, func(put func(time.Duration, trace.Op, string, any)) {
		put(80*time.Second, trace.OpAdd, "NodeClaim", claim("claim-1", 80*time.Second, "", ""))
		put(101*time.Second, trace.OpUpdate, "NodeClaim", claim("claim-1", 80*time.Second, "m5.2xlarge", "node-1"))
		put(3*time.Minute, trace.OpAdd, "NodeClaim", claim("interrupted", 3*time.Minute, "", ""))
		put(3*time.Minute+time.Second, trace.OpUpdate, "NodeClaim", claim("interrupted", 3*time.Minute, "c6g.large", ""))
		put(4*time.Minute, trace.OpDelete, "NodeClaim", claim("interrupted", 3*time.Minute, "c6g.large", ""))
		put(50*time.Minute, trace.OpAdd, "NodeClaim", claim("booting", 50*time.Minute, "m6g.large", ""))
		put(60*time.Minute, trace.OpAdd, "NodeClaim", claim("never-launched", 60*time.Minute, "", ""))
	}))
	got := map[string]NodeLife{}
	for _, n := range rec.Nodes {
		got[n.Name] = n
	}
	if len(got) != 3 {
		t.Fatalf("nodes %+v; want node-1, interrupted and booting", rec.Nodes)
	}
	if n := got["node-1"]; !n.Created.Equal(t0.Add(80 * time.Second)) {
		t.Errorf("node-1 from %s, want from its claim's creation, %s", n.Created, t0.Add(80*time.Second))
	}
	if n := got["interrupted"]; n.InstanceType != "c6g.large" || n.CapacityType != "spot" || n.Zone != "us-east-1b" || n.NodePool != "general" ||
		!n.Created.Equal(t0.Add(3*time.Minute)) || n.Deleted == nil || !n.Deleted.Equal(t0.Add(4*time.Minute)) {
		t.Errorf("interrupted: %+v; want a general c6g.large spot in us-east-1b from 3m to 4m", n)
	}
	if n := got["booting"]; n.InstanceType != "m6g.large" || n.Deleted != nil {
		t.Errorf("booting: %+v; want an m6g.large to the end", n)
	}
}
