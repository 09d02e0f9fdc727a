package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// The example scenarios' own assertions: what each is meant to show, in
// nodes, placement and cost. The numbers were measured with the scenarios'
// seeds; each range says why it is what it is.

// runExample runs examples/scenarios/name as Run does, after edit (if not
// nil) has changed what was loaded, and keeps the engine, so a test can look
// at every node it launched and the pods on the live ones. It checks that
// Run itself gives the same report, so the two cannot drift apart.
func runExample(t *testing.T, name string, edit func(*scenario.Input)) (*simulation, *report.Report) {
	t.Helper()
	return runExampleWith(t, name, edit, Options{})
}

// runExampleWith is runExample under opts.
func runExampleWith(t *testing.T, name string, edit func(*scenario.Input), opts Options) (*simulation, *report.Report) {
	t.Helper()
	dir := filepath.Join("..", "..", "examples", "scenarios", name)
	fsys := os.DirFS(dir)
	load := func() *scenario.Input {
		in, err := scenario.Load(fsys, ".", name)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(in)
		}
		return in
	}
	in := load()
	e, err := newSimulation(in, fsys, ".", opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range opts.Policy.Notes() {
		e.rep.note(n)
	}
	for _, n := range in.Notes {
		e.rep.note(n)
	}
	if len(in.NodeClasses) == 0 {
		t.Fatal("every example has its EC2NodeClasses")
	}
	e.schedule()
	if err := e.clk.run(context.Background(), e.end, nil); err != nil {
		t.Fatal(err)
	}
	rep := e.finish()

	want, err := Run(context.Background(), load(), fsys, ".", opts)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(rep)
	b, _ := json.Marshal(want)
	if !bytes.Equal(a, b) {
		t.Fatal("runExample no longer runs a scenario as Run does: update it to match Run")
	}
	return e, rep
}

// livePods are the pods of a workload ("Deployment/web") on live nodes.
func livePods(e *simulation, workload string) []*simPod {
	var out []*simPod
	for _, n := range e.nodes {
		if n.state == nodeGone {
			continue
		}
		for _, p := range e.podsOn(n) {
			if p.owner != nil && p.owner.kind+"/"+p.owner.name == workload {
				out = append(out, p)
			}
		}
	}
	return out
}

// reported is the number at path in the report's JSON, as a CI gate on
// --json would read it.
func reported(t *testing.T, rep *report.Report, path ...string) float64 {
	t.Helper()
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range path {
		m, _ := v.(map[string]any)
		if v = m[k]; v == nil {
			t.Fatalf("the report has no %s", strings.Join(path, "."))
		}
	}
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("report %s is %v, not a number", strings.Join(path, "."), v)
	}
	return f
}

func gpus(n *simNode) int64 {
	q := n.it.Capacity[corev1.ResourceName(awsv1.ResourceNVIDIAGPU)]
	return q.Value()
}

func inRange(t *testing.T, what string, got, lo, hi float64) {
	t.Helper()
	if got < lo || got > hi {
		t.Errorf("%s = %v, want %v to %v", what, got, lo, hi)
	}
}

func checkZones(t *testing.T, e *simulation, zones ...string) map[string]int {
	t.Helper()
	ok := map[string]bool{}
	for _, z := range zones {
		ok[z] = true
	}
	seen := map[string]int{}
	for _, n := range e.allNodes {
		z := n.offering.Zone
		seen[z]++
		if !ok[z] || n.claim.Labels[v1.LabelZone] != z {
			t.Errorf("node %s (%s, pool %s) in zone %q, labelled %q: want one of %v", n.name, n.it.Name, n.pool.Name, z, n.claim.Labels[v1.LabelZone], zones)
		}
	}
	return seen
}

func common(t *testing.T, rep *report.Report) {
	t.Helper()
	if rep.Pods.NeverRan != 0 {
		t.Errorf("%d pods never ran: %v", rep.Pods.NeverRan, rep.Pods.NeverRanReason)
	}
	if rep.Nodes.TolerationViolations != 0 {
		t.Errorf("%d pods ran on nodes whose taints they do not tolerate", rep.Nodes.TolerationViolations)
	}
}

// TestExampleGPUInferenceLimits: ten inference pods that set only limits
// (nvidia.com/gpu: 1, cpu 3, memory 12Gi) request what they limit, so they
// need ten whole GPUs. With the pool pinned to single-GPU sizes that is ten
// g6.xlarge (the cheapest type with an NVIDIA GPU, 3 CPUs and 12Gi free:
// $0.8048/h against g5.xlarge's $1.006; the g6f types the pool also admits
// have a fraction of a GPU and no nvidia.com/gpu), one pod each. Were the
// requests not defaulted, the pods would ask for nothing and share one node.
func TestExampleGPUInferenceLimits(t *testing.T) {
	e, rep := runExample(t, "gpu-inference-limits", nil)
	common(t, rep)
	checkZones(t, e, "us-east-1a", "us-east-1b", "us-east-1c")

	for _, p := range livePods(e, "Deployment/llm-inference") {
		r := p.pod.Spec.Containers[0].Resources.Requests
		if g, c, m := r[corev1.ResourceName(awsv1.ResourceNVIDIAGPU)], r[corev1.ResourceCPU], r[corev1.ResourceMemory]; g.Cmp(resource.MustParse("1")) != 0 ||
			c.Cmp(resource.MustParse("3")) != 0 || m.Cmp(resource.MustParse("12Gi")) != 0 {
			t.Errorf("pod %s requests %v: requests default from limits (1 GPU, 3 CPUs, 12Gi)", p.pod.Name, r)
			break
		}
	}
	inference := livePods(e, "Deployment/llm-inference")
	if len(inference) != 10 {
		t.Fatalf("%d inference pods running at the end, want 10", len(inference))
	}
	perNode := map[*simNode]int{}
	for _, p := range inference {
		perNode[e.nodeOf(p)]++
	}
	gpuTotal := int64(0)
	for n, c := range perNode {
		gpuTotal += gpus(n)
		if n.pool.Name != "gpu" || int64(c) > gpus(n) {
			t.Errorf("node %s (%s, pool %s, %d GPUs) runs %d inference pods: each needs a GPU of its own", n.name, n.it.Name, n.pool.Name, gpus(n), c)
		}
	}
	if len(perNode) != 10 || gpuTotal != 10 {
		t.Errorf("inference pods on %d nodes with %d GPUs, want 10 single-GPU nodes", len(perNode), gpuTotal)
	}
	for _, p := range livePods(e, "Deployment/gateway") {
		if e.nodeOf(p).pool.Name != "general" {
			t.Errorf("gateway pod %s on pool %s: it does not tolerate the GPU taint", p.pod.Name, e.nodeOf(p).pool.Name)
		}
	}

	// Nodes: 10 g6.xlarge on demand, one small general node for the gateway.
	if got := rep.Nodes.LaunchedByPool; got["gpu"] != 10 || got["general"] != 1 {
		t.Errorf("launched %v, want gpu 10, general 1", got)
	}
	for _, n := range e.allNodes {
		daemon := 0
		for _, p := range e.podsOn(n) {
			if podutil.IsDaemonSetPod(p.pod) {
				daemon++
			}
		}
		switch n.pool.Name {
		case "gpu":
			if n.it.Name != "g6.xlarge" || gpus(n) != 1 || n.offering.CapacityType != v1.CapacityTypeOnDemand {
				t.Errorf("GPU node %s is %s %s with %d GPUs, want on-demand g6.xlarge (1 GPU)", n.name, n.offering.CapacityType, n.it.Name, gpus(n))
			}
			if n.claim.Labels[awsv1.LabelInstanceGPUManufacturer] != "nvidia" || n.claim.Labels[awsv1.LabelInstanceGPUName] != "l4" || n.claim.Labels[awsv1.LabelInstanceGPUCount] != "1" {
				t.Errorf("GPU node %s labels: %v", n.name, n.claim.Labels)
			}
			if daemon != 1 {
				t.Errorf("GPU node %s runs %d device-plugin pods, want 1 (its nodeAffinity selects NVIDIA nodes)", n.name, daemon)
			}
		case "general":
			if gpus(n) != 0 || daemon != 0 {
				t.Errorf("general node %s (%s): %d GPUs, %d device-plugin pods", n.name, n.it.Name, gpus(n), daemon)
			}
		}
	}

	// Cost: 10 × $0.8048/h × 6 h = $48.29 (billed from launch, a second
	// into the run), and a few cents of spot for the gateway.
	inRange(t, "gpu pool cost", rep.Cost.ByPool["gpu"], 48.0, 48.3)
	inRange(t, "general pool cost", rep.Cost.ByPool["general"], 0.05, 0.5)
	// Startup: launch 30 s + registration 60 s + initialization 20 s (means)
	// after a batching window of up to 10 s.
	inRange(t, "inference startup p50 (s)", reported(t, rep, "pods", "byWorkload", "Deployment/llm-inference", "startupSecondsP50"), 80, 130)
	inRange(t, "inference startup max (s)", reported(t, rep, "pods", "byWorkload", "Deployment/llm-inference", "startupSecondsMax"), 90, 180)
}

// TestExampleGPUPoolWithoutSizes: the same pool without its single-GPU size
// pin lets Karpenter pack the pending pods onto one claim as far as an
// instance type can take them — eight planned for a g6.48xlarge (8 GPUs),
// the other two for a g6.12xlarge (4 GPUs) — about twice the cost of ten
// g6.xlarge. It still never puts more pods on a node than it has GPUs.
func TestExampleGPUPoolWithoutSizes(t *testing.T) {
	e, rep := runExample(t, "gpu-inference-limits", func(in *scenario.Input) {
		for _, np := range in.NodePools {
			if np.Name != "gpu" {
				continue
			}
			var keep []v1.NodeSelectorRequirementWithMinValues
			for _, r := range np.Spec.Template.Spec.Requirements {
				if r.Key != awsv1.LabelInstanceSize {
					keep = append(keep, r)
				}
			}
			np.Spec.Template.Spec.Requirements = keep
		}
	})
	common(t, rep)
	perNode := map[*simNode]int{}
	for _, p := range livePods(e, "Deployment/llm-inference") {
		perNode[e.nodeOf(p)]++
	}
	var packed []string
	gpuTotal := int64(0)
	for n, c := range perNode {
		if int64(c) > gpus(n) {
			t.Errorf("node %s (%s, %d GPUs) runs %d inference pods", n.name, n.it.Name, gpus(n), c)
		}
		gpuTotal += gpus(n)
		packed = append(packed, n.it.Name)
	}
	sort.Strings(packed)
	// Which pods bind where is kube-scheduler's choice once the nodes are
	// ready; what was launched is the packing.
	if strings.Join(packed, " ") != "g6.12xlarge g6.48xlarge" || gpuTotal != 12 || rep.Nodes.LaunchedByPool["gpu"] != 2 {
		t.Errorf("inference pods on %v (%d GPUs, %d GPU nodes launched): Karpenter packs them onto the largest claims", packed, gpuTotal, rep.Nodes.LaunchedByPool["gpu"])
	}
	inRange(t, "gpu pool cost", rep.Cost.ByPool["gpu"], 100, 110) // (13.3504 + 4.6016) $/h × 6 h
}

// TestExampleUSWest2: a cluster in us-west-2 gets nodes in its zones only,
// spot as well as on-demand, spot prices made for us-west-2's zones, and
// on-demand prices borrowed from us-east-1 — which the report says.
func TestExampleUSWest2(t *testing.T) {
	e, rep := runExample(t, "us-west-2", nil)
	common(t, rep)
	zones := checkZones(t, e, "us-west-2a", "us-west-2b", "us-west-2c")
	if len(zones) != 3 {
		t.Errorf("nodes in zones %v, want all three", zones)
	}

	said := false
	for _, n := range rep.Notes {
		said = said || strings.Contains(n, "no on-demand prices for us-west-2") && strings.Contains(n, "us-east-1's prices are used")
	}
	if !said {
		t.Errorf("the report must say that us-west-2 has no on-demand prices and us-east-1's are used; notes: %q", rep.Notes)
	}

	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	east := map[string]float64{}
	for _, en := range cat.Entries {
		if en.OnDemandPrice != nil {
			east[en.Name] = *en.OnDemandPrice
		}
	}
	spot := 0
	for _, n := range e.allNodes {
		if n.claim.Labels[v1.LabelRegion] != "us-west-2" {
			t.Errorf("node %s labelled region %q", n.name, n.claim.Labels[v1.LabelRegion])
		}
		od, ok := east[n.it.Name]
		if !ok {
			t.Fatalf("%s has no us-east-1 price", n.it.Name)
		}
		switch n.offering.CapacityType {
		case v1.CapacityTypeSpot:
			spot++
			if n.pool.Name != "default" {
				t.Errorf("spot node %s in pool %s", n.name, n.pool.Name)
			}
			if want := catalog.SyntheticSpotPrice(n.it.Name, n.offering.Zone, od); n.offering.Price != want {
				t.Errorf("spot %s in %s at $%v, want the synthetic $%v for that zone", n.it.Name, n.offering.Zone, n.offering.Price, want)
			}
		case v1.CapacityTypeOnDemand:
			if n.offering.Price != od {
				t.Errorf("on-demand %s at $%v, want us-east-1's $%v", n.it.Name, n.offering.Price, od)
			}
		}
	}
	if spot == 0 {
		t.Error("no spot node in us-west-2: the default pool allows spot and it is cheaper")
	}

	// The store: one replica per zone, on three on-demand m6i.xlarge.
	storeZones := map[string]bool{}
	for _, p := range livePods(e, "StatefulSet/store") {
		n := e.nodeOf(p)
		storeZones[n.offering.Zone] = true
		if n.pool.Name != "on-demand" || n.offering.CapacityType != v1.CapacityTypeOnDemand || n.it.Name != "m6i.xlarge" {
			t.Errorf("store pod %s on %s %s in pool %s, want on-demand m6i.xlarge", p.pod.Name, n.offering.CapacityType, n.it.Name, n.pool.Name)
		}
	}
	if len(storeZones) != 3 {
		t.Errorf("store replicas in zones %v, want one in each", storeZones)
	}
	// The web tier: spread over the zones. maxSkew 1 binds each placement
	// only: the HPA's scale-downs take pods by the ReplicaSet's ranking,
	// not by zone (as Kubernetes' own does), and may leave a skew of 2.
	web := map[string]int{}
	for _, p := range livePods(e, "Deployment/web") {
		web[e.nodeOf(p).offering.Zone]++
	}
	lo, hi := 1<<30, 0
	for _, z := range []string{"us-west-2a", "us-west-2b", "us-west-2c"} {
		lo, hi = min(lo, web[z]), max(hi, web[z])
	}
	if hi-lo > 2 || lo == 0 {
		t.Errorf("web pods by zone %v: want every zone, within 2 of each other", web)
	}

	// One store replica per zone: three nodes, and a fourth only while a
	// replacement is in flight (multi-node consolidation may fold a store
	// node into a command with spot nodes; the pool's budget allows one).
	if got := rep.Nodes.PeakByPool["on-demand"]; got < 3 || got > 4 {
		t.Errorf("on-demand pool peaked at %d nodes, want 3 (one store replica per zone), 4 during a replacement", got)
	}
	inRange(t, "nodes launched", float64(rep.Nodes.Launched), 8, 30)
	if len(rep.Autoscalers) != 1 || rep.Autoscalers[0].Max < 10 {
		t.Errorf("web HPA %+v: at 900 requests/s × 8m and 60 %% of 1 CPU it needs 12 replicas", rep.Autoscalers)
	}
	// Cost: the on-demand pool is 3 × m6i.xlarge × 24 h × $0.192 (us-east-1's
	// price) = $13.82 (from a second into the run), a few cents more for a
	// replacement's overlap; the web tier's 6–12 one-CPU pods on spot at
	// 25–65 % of on-demand cost a few dollars.
	inRange(t, "on-demand pool cost", rep.Cost.ByPool["on-demand"], 13.7, 13.86)
	inRange(t, "default pool cost", rep.Cost.ByPool["default"], 2, 6)
	inRange(t, "startup p90 (s)", reported(t, rep, "pods", "startupSecondsP90"), 50, 120)
}

// TestExampleODSpotSplit: the karpenter-blueprints split — a pool with
// capacity-spread 1 on demand, one with 2–5 on spot, ten pods spread over
// the label with maxSkew 1 — gives five nodes, one per value, each
// labelled with its value; two pods each, so 20 % on on-demand; the two
// pods that select capacity-spread 3 join the node labelled 3. (Before
// nodes carried the label, this launched tens of thousands of nodes.)
func TestExampleODSpotSplit(t *testing.T) {
	e, rep := runExample(t, "od-spot-split", nil)
	common(t, rep)
	checkZones(t, e, "us-east-1a", "us-east-1b", "us-east-1c")
	if got := rep.Nodes.LaunchedByPool; rep.Nodes.Launched != 5 || got["node-od"] != 1 || got["node-spot"] != 4 {
		t.Errorf("launched %d %v, want 5: node-od 1, node-spot 4", rep.Nodes.Launched, got)
	}
	values := map[string]*simNode{}
	for _, n := range e.allNodes {
		v := n.claim.Labels["capacity-spread"]
		if values[v] != nil {
			t.Errorf("nodes %s and %s both labelled capacity-spread=%s", values[v].name, n.name, v)
		}
		values[v] = n
		want := map[string]string{"node-od": v1.CapacityTypeOnDemand, "node-spot": v1.CapacityTypeSpot}[n.pool.Name]
		od := v == "1"
		if n.offering.CapacityType != want || od != (n.pool.Name == "node-od") || v == "" {
			t.Errorf("node %s: pool %s, %s, capacity-spread=%q", n.name, n.pool.Name, n.offering.CapacityType, v)
		}
	}
	split := map[string]int{}
	for _, p := range livePods(e, "Deployment/workload-split") {
		split[e.nodeOf(p).claim.Labels["capacity-spread"]]++
	}
	for _, v := range []string{"1", "2", "3", "4", "5"} {
		if split[v] != 2 {
			t.Errorf("workload-split pods by capacity-spread %v: want 2 on each of 1–5", split)
			break
		}
	}
	pinned := livePods(e, "Deployment/pinned")
	for _, p := range pinned {
		if v := e.nodeOf(p).claim.Labels["capacity-spread"]; v != "3" {
			t.Errorf("pinned pod %s on a node labelled capacity-spread=%q, want 3", p.pod.Name, v)
		}
	}
	if len(pinned) != 2 {
		t.Errorf("%d pinned pods running, want 2", len(pinned))
	}
	// Cost: c6g.large on demand ($0.068/h) and four spot c6a.large for 6 h.
	inRange(t, "node-od cost", rep.Cost.ByPool["node-od"], 0.39, 0.41)
	inRange(t, "total cost", rep.Cost.Total, 0.6, 1.2)
	inRange(t, "startup p90 (s)", reported(t, rep, "pods", "startupSecondsP90"), 40, 90)
}

// TestExampleNodeOverlays: the savings plan's -28 % makes a generation-7
// type the cheapest and is what the run pays; the device plugin's overlaid
// resource lets the builders run (without the overlays they never do); the
// report names both overlays with the nodes launched on their types.
func TestExampleNodeOverlays(t *testing.T) {
	e, rep := runExample(t, "node-overlays", nil)
	common(t, rep)
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	list := map[string]float64{}
	for _, en := range cat.Entries {
		if en.OnDemandPrice != nil {
			list[en.Name] = *en.OnDemandPrice
		}
	}
	if len(e.allNodes) == 0 {
		t.Fatal("no node launched")
	}
	for _, n := range e.allNodes {
		gen := n.claim.Labels["karpenter.k8s.aws/instance-generation"]
		if gen != "7" {
			t.Errorf("node %s is %s (generation %s): the savings plan makes generation 7 the cheapest", n.name, n.it.Name, gen)
			continue
		}
		if want := list[n.it.Name] * 0.72; math.Abs(n.offering.Price-want) > 1e-9 {
			t.Errorf("%s at $%v, want the savings plan's $%v (list $%v less 28 %%)", n.it.Name, n.offering.Price, want, list[n.it.Name])
		}
		if q := n.claim.Status.Allocatable["smarter-devices/fuse"]; q.Value() != 20 {
			t.Errorf("node %s has %v smarter-devices/fuse allocatable, want the overlay's 20", n.name, q.String())
		}
	}
	if rep.Pods.NeverRan != 0 {
		t.Errorf("%d pods never ran; with the fuse overlay every builder fits", rep.Pods.NeverRan)
	}
	got := map[string]report.OverlayReport{}
	for _, o := range rep.NodeOverlays {
		got[o.Name] = o
	}
	if o := got["savings-plan-gen7"]; !o.Applied || o.Weight != 20 || o.NodesLaunched != len(e.allNodes) {
		t.Errorf("savings plan: %+v, want applied on all %d nodes", o, len(e.allNodes))
	}
	if o := got["fuse-devices"]; !o.Applied || o.NodesLaunched != len(e.allNodes) {
		t.Errorf("fuse-devices: %+v", o)
	}
}

// TestExampleCapacityBuffer: the bundled CapacityBuffer scenario. The
// buffers resolve (one follows its Deployment's HPA, capped by its
// limits), hold nodes that emptiness leaves alone even at night, cost
// more than the same scenario without them, and start pods no later.
func TestExampleCapacityBuffer(t *testing.T) {
	fsys := os.DirFS(filepath.Join("..", "..", "examples", "scenarios", "capacity-buffer"))
	in, err := scenario.Load(fsys, ".", "capacity-buffer")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), in, fsys, ".", Options{})
	if err != nil {
		t.Fatal(err)
	}
	common(t, rep)
	b := rep.Buffers
	if b == nil || len(b.Buffers) != 2 || len(rep.Ignored) != 0 {
		t.Fatalf("buffers %+v, ignored %+v", b, rep.Ignored)
	}
	api, batch := b.Buffers[0], b.Buffers[1]
	if api.Name != "default/api-headroom" || api.Ready != "Resolved" || api.MaxChunks < 3 || api.MaxChunks > 16 || api.Chunks >= api.MaxChunks {
		t.Errorf("api-headroom %+v: want 20 %% of api-server's replicas as they move, at most 8 cores' worth (16 chunks)", api)
	}
	if batch.Name != "default/batch-headroom" || batch.Chunks != 2 || batch.MaxChunks != 2 || batch.Provisioning != "FitsExistingCapacity" {
		t.Errorf("batch-headroom %+v", batch)
	}
	if b.CostUSD <= b.WithoutCostUSD {
		t.Errorf("the buffers cost nothing: $%.2f with, $%.2f without", b.CostUSD, b.WithoutCostUSD)
	}
	if *b.StartupP99 > *b.WithoutStartupP99 {
		t.Errorf("pods start later with the buffers: p99 %.0fs, without %.0fs", *b.StartupP99, *b.WithoutStartupP99)
	}
	// The batch buffer's 2 cores are never left without a node.
	for _, s := range rep.Timeline[1:] {
		if s.NodesByPool["general"] == 0 {
			t.Fatalf("minute %d: no node holds the buffers", s.Minute)
		}
	}
}

func TestExampleReservedCapacity(t *testing.T) {
	fsys := os.DirFS(filepath.Join("..", "..", "examples", "scenarios", "reserved-capacity"))
	in, err := scenario.Load(fsys, ".", "reserved-capacity")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), in, fsys, ".", Options{})
	if err != nil {
		t.Fatal(err)
	}
	common(t, rep)
	limit := map[string]int{}
	for _, r := range in.Scenario.Spec.CapacityReservations {
		limit[r.ID] = r.Count
	}
	// No reservation ever holds more nodes than it has room for, and the
	// one no node class selects holds none.
	type edge struct {
		at   time.Time
		id   string
		step int
	}
	var edges []edge
	onDemand := 0
	for _, n := range rep.ByNode {
		if n.Reservation == "" {
			onDemand++
			continue
		}
		edges = append(edges, edge{n.Launched, n.Reservation, 1})
		if n.Deleted != nil {
			edges = append(edges, edge{*n.Deleted, n.Reservation, -1})
		}
	}
	sort.SliceStable(edges, func(i, j int) bool {
		if !edges[i].at.Equal(edges[j].at) {
			return edges[i].at.Before(edges[j].at)
		}
		return edges[i].step < edges[j].step
	})
	held, most := map[string]int{}, map[string]int{}
	for _, e := range edges {
		held[e.id] += e.step
		most[e.id] = max(most[e.id], held[e.id])
		if held[e.id] > limit[e.id] {
			t.Errorf("%s: %d nodes in reservation %s of %d", e.at, held[e.id], e.id, limit[e.id])
		}
	}
	if most["cr-0a11ce0000000000001"] != 4 || most["cr-0a11ce0000000000002"] != 2 || most["cr-0b10c4000000000001"] != 2 {
		t.Errorf("most nodes at once per reservation %v: the web tier outgrows every selected reservation, so each fills", most)
	}
	if most["cr-0d47a00000000000003"] != 0 {
		t.Error("a node launched into the other team's reservation, which no term selects")
	}
	if onDemand == 0 {
		t.Error("no on-demand node: past the reservations, pods need on-demand")
	}
	// The Capacity Block's nodes are drained 40 minutes before its end
	// (6h), and nothing launches into it after.
	blockEnd := in.Scenario.Spec.Start.Add(6 * time.Hour)
	for _, n := range rep.ByNode {
		if n.Reservation != "cr-0b10c4000000000001" {
			continue
		}
		if n.Launched.After(blockEnd.Add(-40 * time.Minute)) {
			t.Errorf("node %s launched into the Capacity Block at %s, inside its expiry", n.Name, n.Launched)
		}
		if n.Deleted == nil || n.Deleted.After(blockEnd.Add(-30*time.Minute)) {
			t.Errorf("node %s of the Capacity Block deleted at %v: EC2 takes it back 30 minutes before the end", n.Name, n.Deleted)
		}
	}
	expired := 0
	for _, d := range rep.DisruptionEvents {
		if d.Reason == "CapacityBlockExpiration" {
			expired++
			if d.Minute != 320 {
				t.Errorf("capacity block drained at minute %v, want 320 (40 minutes before its end)", d.Minute)
			}
		}
	}
	if expired == 0 {
		t.Error("no node was drained for the Capacity Block's expiry")
	}
	// The interruptible reservation's owner takes it back at 8h: its nodes
	// go within EC2's two-minute warning, and none launches into it after.
	reclaimed := in.Scenario.Spec.Start.Add(8 * time.Hour)
	for _, n := range rep.ByNode {
		if n.Reservation != "cr-0a11ce0000000000002" {
			continue
		}
		if n.Launched.After(reclaimed) {
			t.Errorf("node %s launched into the reclaimed reservation at %s", n.Name, n.Launched)
		}
		if !n.Launched.After(reclaimed) && (n.Deleted == nil || n.Deleted.After(reclaimed.Add(2*time.Minute))) {
			t.Errorf("node %s of the reclaimed reservation deleted at %v, want by 8h02", n.Name, n.Deleted)
		}
	}
	// Reserved nodes cost next to nothing.
	for _, nh := range rep.NodeHours {
		if nh.CapacityType == "reserved" && nh.CostUSD > 0.01 {
			t.Errorf("%s reserved cost $%.2f", nh.InstanceType, nh.CostUSD)
		}
	}
}
