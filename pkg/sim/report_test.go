package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
)

// reportPool launches only m6i.large (2 vCPU) on demand in three zones and
// never consolidates, so what the report counts stays put.
const reportPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: ["m6i.large"]}
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: Never
`

// testNodeClass is the EC2NodeClass inline scenarios' NodePools name.
const testNodeClass = `---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
`

// spreadApp: six pods of 1.5 vCPU (one per m6i.large) spread over zones
// with maxSkew 1: two per zone.
const spreadApp = `apiVersion: apps/v1
kind: Deployment
metadata: {name: spread}
spec:
  replicas: 6
  selector: {matchLabels: {app: spread}}
  template:
    metadata: {labels: {app: spread}}
    spec:
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: spread}}
      containers:
      - name: c
        image: x
        resources: {requests: {cpu: 1500m, memory: 1Gi}}
`

// strandedApp selects a label no NodePool gives a node: none of its pods runs.
const strandedApp = `apiVersion: apps/v1
kind: Deployment
metadata: {name: stranded}
spec:
  replicas: 3
  selector: {matchLabels: {app: stranded}}
  template:
    metadata: {labels: {app: stranded}}
    spec:
      nodeSelector: {disk: nvme}
      containers:
      - name: c
        image: x
        resources: {requests: {cpu: 100m, memory: 100Mi}}
`

// inlineScenario is a scenario directory "sc" in memory: the NodePools
// (and testNodeClass), the workloads, and scenario.yaml's spec.
func inlineScenario(pools, workloads, spec string) fstest.MapFS {
	return fstest.MapFS{
		"sc/karpenter.yaml": {Data: []byte(pools + testNodeClass)},
		"sc/workloads.yaml": {Data: []byte(workloads)},
		"sc/scenario.yaml":  {Data: []byte("apiVersion: joiner.dev/v1alpha1\nkind: Scenario\nmetadata: {name: inline}\nspec:\n" + spec)},
	}
}

func reportScenario(workloads string) fstest.MapFS {
	return inlineScenario(reportPool, workloads, `  start: "2026-11-30T08:00:00Z"
  duration: 1h
  seed: 1
  zones: [us-east-1a, us-east-1b, us-east-1c]
`)
}

func runReportScenario(t *testing.T, workloads string) (*report.Report, []byte) {
	t.Helper()
	return runInline(t, reportScenario(workloads))
}

// runInline loads and runs an inlineScenario; the report also as JSON.
func runInline(t *testing.T, fsys fstest.MapFS) (*report.Report, []byte) {
	t.Helper()
	return runFS(t, fsys, "sc", "inline")
}

// checkNodeCounts: the per-node and per-zone counts agree with the run's
// totals, are sorted, and a node's times are inside the run.
func checkNodeCounts(t *testing.T, rep *report.Report) {
	t.Helper()
	if len(rep.ByNode) != rep.Nodes.Launched {
		t.Errorf("%d nodes listed, %d launched", len(rep.ByNode), rep.Nodes.Launched)
	}
	pods, byPool := 0, map[string]int{}
	for i, n := range rep.ByNode {
		pods += n.PodsRan
		byPool[n.NodePool]++
		if n.Name == "" || n.InstanceType == "" || n.Zone == "" || n.CapacityType == "" || n.NodePool == "" {
			t.Errorf("node %d lacks a field: %+v", i, n)
		}
		if n.Launched.Nanosecond() != 0 || (n.Deleted != nil && n.Deleted.Nanosecond() != 0) {
			t.Errorf("%s: %s–%v: times are to the second", n.Name, n.Launched, n.Deleted)
		}
		if n.Launched.Before(rep.Start) || n.Launched.After(rep.End) {
			t.Errorf("%s launched at %s, outside the run", n.Name, n.Launched)
		}
		if n.Deleted != nil && (n.Deleted.Before(n.Launched) || n.Deleted.After(rep.End) || n.DeletedReason == "") {
			t.Errorf("%s deleted at %v (%q), launched %s", n.Name, n.Deleted, n.DeletedReason, n.Launched)
		}
		if n.Deleted == nil && n.DeletedReason != "" {
			t.Errorf("%s still runs but has a deletion reason %q", n.Name, n.DeletedReason)
		}
		if n.PeakPods > n.PodsRan || (n.PodsRan > 0) != (n.PeakPods > 0) {
			t.Errorf("%s: peak %d pods of %d", n.Name, n.PeakPods, n.PodsRan)
		}
		if i > 0 {
			p := rep.ByNode[i-1]
			if n.Launched.Before(p.Launched) || (n.Launched.Equal(p.Launched) && n.Name < p.Name) {
				t.Errorf("nodes out of order: %s (%s) after %s (%s)", n.Name, n.Launched, p.Name, p.Launched)
			}
		}
	}
	if pods != rep.Pods.Ran {
		t.Errorf("nodes ran %d pods, the run %d", pods, rep.Pods.Ran)
	}
	for p, c := range rep.Nodes.LaunchedByPool {
		if byPool[p] != c {
			t.Errorf("pool %s: %d nodes listed, %d launched", p, byPool[p], c)
		}
	}
	zoneNodes, zonePods, zonePool := 0, 0, map[string]int{}
	for i, z := range rep.ByZone {
		zoneNodes += z.Launched
		zonePods += z.PodsRan
		sum, wsum := 0, 0
		for p, c := range z.LaunchedByPool {
			zonePool[p] += c
			sum += c
		}
		for _, c := range z.PodsRanByWorkload {
			wsum += c
		}
		if sum != z.Launched || wsum != z.PodsRan {
			t.Errorf("zone %s: %d launched but %d by pool; %d pods but %d by workload", z.Zone, z.Launched, sum, z.PodsRan, wsum)
		}
		if i > 0 && rep.ByZone[i-1].Zone >= z.Zone {
			t.Errorf("zones out of order: %s after %s", z.Zone, rep.ByZone[i-1].Zone)
		}
	}
	if zoneNodes != rep.Nodes.Launched || zonePods != rep.Pods.Ran {
		t.Errorf("zones: %d nodes and %d pods; the run %d and %d", zoneNodes, zonePods, rep.Nodes.Launched, rep.Pods.Ran)
	}
	for p, c := range rep.Nodes.LaunchedByPool {
		if zonePool[p] != c {
			t.Errorf("pool %s: %d nodes over the zones, %d launched", p, zonePool[p], c)
		}
	}
}

// TestReportNodesAndZones: the report lists every node and counts per zone,
// so a zone spread can be read off it.
func TestReportNodesAndZones(t *testing.T) {
	rep, b := runReportScenario(t, spreadApp)
	checkNodeCounts(t, rep)
	if rep.Nodes.Launched != 6 || rep.Pods.Ran != 6 {
		t.Fatalf("%d nodes, %d pods ran; want 6 and 6", rep.Nodes.Launched, rep.Pods.Ran)
	}
	for _, n := range rep.ByNode {
		if n.NodePool != "general" || n.InstanceType != "m6i.large" || n.CapacityType != "on-demand" || n.Deleted != nil || n.PodsRan != 1 || n.PeakPods != 1 {
			t.Errorf("node %+v: want general m6i.large on-demand, still running, one pod", n)
		}
	}
	var zones []string
	for _, z := range rep.ByZone {
		zones = append(zones, z.Zone)
		if z.Launched != 2 || z.LaunchedByPool["general"] != 2 || z.PodsRan != 2 || z.PodsRanByWorkload["Deployment/spread"] != 2 {
			t.Errorf("zone %+v: want 2 nodes and 2 pods of Deployment/spread (maxSkew 1 over 3 zones)", z)
		}
	}
	if strings.Join(zones, ",") != "us-east-1a,us-east-1b,us-east-1c" {
		t.Errorf("zones %v", zones)
	}
	for _, want := range []string{`"byNode":[{"name":"general-`, `"zone":"us-east-1`, `"deleted":null`, `"podsRanByWorkload":{"Deployment/spread":2}`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("JSON lacks %s", want)
		}
	}
	if _, again := runReportScenario(t, spreadApp); !bytes.Equal(b, again) {
		t.Error("two runs of the same scenario differ")
	}
	var sum bytes.Buffer
	report.WriteSummary(&sum, rep)
	if want := "Zones          us-east-1a 2 nodes 2 pods, us-east-1b 2 nodes 2 pods, us-east-1c 2 nodes 2 pods"; !strings.Contains(sum.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, sum.String())
	}
}

// TestReportNodesOfTheBundledScenario: nodes come and go (drift, spot
// interruptions, consolidation) and the counts still add up.
func TestReportNodesOfTheBundledScenario(t *testing.T) {
	rep, _ := runDir(t, filepath.Join("..", "..", "examples", "scenarios", "default"))
	checkNodeCounts(t, rep)
	reasons := map[string]int{}
	running := 0
	for _, n := range rep.ByNode {
		if n.Deleted == nil {
			running++
		} else {
			reasons[n.DeletedReason]++
		}
	}
	disrupted := map[string]int{}
	for _, d := range rep.Disruptions {
		disrupted[d.Reason] += d.Count
	}
	if running == 0 || reasons["Drifted"] == 0 || reasons["Interrupted"] == 0 {
		t.Errorf("%d nodes running at the end, deleted for %v", running, reasons)
	}
	// A node disrupted for a reason is deleted for it (or still draining).
	for reason, c := range reasons {
		if reason == "Unregistered" || reason == "Abandoned" {
			continue
		}
		if c > disrupted[reason] {
			t.Errorf("%d nodes deleted as %s, %d disrupted for it", c, reason, disrupted[reason])
		}
	}
	if reasons["Unregistered"] != rep.Nodes.NeverRegistered {
		t.Errorf("%d nodes deleted unregistered, %d never registered", reasons["Unregistered"], rep.Nodes.NeverRegistered)
	}
}

// TestNoPodRanHasNoPercentiles: a run in which no pod ran claims no
// startup latency, in the summary or the JSON (the HTML: pkg/htmlreport).
func TestNoPodRanHasNoPercentiles(t *testing.T) {
	rep, b := runReportScenario(t, strandedApp)
	if rep.Pods.Ran != 0 || rep.Pods.Created != 3 || rep.Nodes.Launched != 0 {
		t.Fatalf("ran %d of %d pods on %d nodes; want none of 3 on none", rep.Pods.Ran, rep.Pods.Created, rep.Nodes.Launched)
	}
	checkNodeCounts(t, rep)
	if len(rep.ByZone) != 3 || rep.ByZone[0].Launched != 0 || len(rep.ByNode) != 0 {
		t.Errorf("zones %+v, nodes %+v: want three empty zones and no node", rep.ByZone, rep.ByNode)
	}
	if s, ok := rep.Pods.ByWorkload["Deployment/stranded"]; !ok || s.Ran != 0 || s.P50 != nil || s.P90 != nil || s.Max != nil {
		t.Errorf("Deployment/stranded: %+v (listed %v); want ran 0 and no percentile", s, ok)
	}
	if bytes.Contains(b, []byte("startupSeconds")) {
		t.Errorf("JSON claims startup percentiles when no pod ran: %s", b)
	}
	var sum bytes.Buffer
	report.WriteSummary(&sum, rep)
	out := sum.String()
	for _, want := range []string{"Pod startup    no pod ran (3 created)", "no pod ran: Deployment/stranded"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"p50", "p90", "p99", " 0s"} {
		if strings.Contains(out, bad) {
			t.Errorf("summary prints %q though no pod ran", bad)
		}
	}
}

func f64(v float64) *float64 { return &v }

// TestSummaryStartupLines: what the summary prints of startup latency, by
// how many pods ran (in all and per workload).
func TestSummaryStartupLines(t *testing.T) {
	ran := report.Startup{Ran: 4, P50: f64(3), P90: f64(12), Max: f64(20)}
	slow := report.Startup{Ran: 2, P50: f64(40), P90: f64(61.4), Max: f64(70)}
	for _, tc := range []struct {
		name      string
		pods      report.PodStats
		want, not []string
	}{
		{"no pod ran", report.PodStats{Created: 5, ByWorkload: map[string]report.Startup{"Deployment/a": {}, "Pod/b": {}}},
			[]string{"Pod startup    no pod ran (5 created)", "no pod ran: Deployment/a, Pod/b"}, []string{"p50", "p90", "slowest"}},
		{"nothing created", report.PodStats{ByWorkload: map[string]report.Startup{}},
			[]string{"Pod startup    no pod ran (0 created)"}, []string{"p50", "no pod ran:"}},
		{"pods ran", report.PodStats{Created: 6, Ran: 6, StartupP50: f64(3), StartupP90: f64(40), StartupP99: f64(70), StartupMax: f64(70),
			ByWorkload: map[string]report.Startup{"Deployment/a": ran, "Deployment/b": slow}},
			[]string{"Pod startup    p50 3s  p90 40s  p99 70s  (pending → running; 6 pods ran)", "slowest p90: Deployment/b 61s, Deployment/a 12s"},
			[]string{"no pod ran"}},
		{"one workload's pods never ran", report.PodStats{Created: 7, Ran: 4, StartupP50: f64(3), StartupP90: f64(12), StartupP99: f64(20), StartupMax: f64(20),
			ByWorkload: map[string]report.Startup{"Deployment/a": ran, "Deployment/c": {}, "Job/d": ran}},
			[]string{"p50 3s  p90 12s  p99 20s", "slowest p90: Deployment/a 12s, Job/d 12s", "               no pod ran: Deployment/c"},
			[]string{"Deployment/c 0s", "Pod startup    no pod ran"}},
		{"many workloads without a pod", report.PodStats{Created: 6, ByWorkload: map[string]report.Startup{"D/1": {}, "D/2": {}, "D/3": {}, "D/4": {}, "D/5": {}, "D/6": {}, "D/7": {}}},
			[]string{"no pod ran: D/1, D/2, D/3, D/4, D/5 … 2 more in --json"}, []string{"D/6"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			report.WriteSummary(&b, &report.Report{Scenario: "s", Pods: tc.pods})
			for _, w := range tc.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("lacks %q:\n%s", w, b.String())
				}
			}
			for _, n := range tc.not {
				if strings.Contains(b.String(), n) {
					t.Errorf("has %q:\n%s", n, b.String())
				}
			}
			j, err := json.Marshal(tc.pods)
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Contains(j, []byte(`"startupSecondsP50"`)); got != (tc.pods.Ran > 0) {
				t.Errorf("JSON has startupSecondsP50: %v, %d pods ran: %s", got, tc.pods.Ran, j)
			}
		})
	}
}

// TestDriftHeldBackByBudget: the recorder counts drifted nodes a budget
// held back once each, and every pass that did.
func TestDriftHeldBackByBudget(t *testing.T) {
	held := func(node, pool string) disruption.Blocked {
		return disruption.Blocked{Node: node, Reason: disruption.BlockReason{Code: disruption.BlockBudget, NodePool: pool, Budget: v1.DisruptionReasonDrifted},
			ByBudget: v1.DisruptionReasonDrifted, NodePool: pool}
	}
	for _, tc := range []struct {
		name                  string
		passes                [][]disruption.Blocked
		nodes, blocks, budget int
	}{
		{"none", [][]disruption.Blocked{{}, {}}, 0, 0, 0},
		{"one node at three passes", [][]disruption.Blocked{{held("a", "general")}, {held("a", "general")}, {held("a", "general")}}, 1, 3, 3},
		{"two nodes, two pools", [][]disruption.Blocked{{held("a", "general"), held("b", "spot")}, {held("b", "spot")}}, 2, 3, 3},
		{"other reasons are not drift", [][]disruption.Blocked{{
			{Node: "c", Reason: disruption.BlockReason{Code: disruption.BlockBudget, NodePool: "general", Budget: v1.DisruptionReasonUnderutilized},
				ByBudget: v1.DisruptionReasonUnderutilized, NodePool: "general"},
			{Node: "d", Reason: disruption.BlockReason{Code: disruption.BlockDriftNowhere}},
			{Node: "e", Reason: disruption.BlockReason{Code: disruption.BlockPodDoNotDisrupt, Pod: "default/x"}},
		}}, 0, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &simulation{clk: &clock{}}
			e.rep = newRecorder(e)
			for _, blocked := range tc.passes {
				e.rep.disruptionPass(&disruption.Decision{Blocked: blocked})
			}
			rep := e.rep
			if len(rep.heldBack) != tc.nodes || rep.drift.HeldBackPassBlocks != tc.blocks || rep.blocked != tc.budget {
				t.Errorf("held back %d nodes at %d passes, %d budget blocks; want %d, %d, %d", len(rep.heldBack), rep.drift.HeldBackPassBlocks, rep.blocked, tc.nodes, tc.blocks, tc.budget)
			}
		})
	}
	// The bundled scenario's AMI change at 10:00 drifts every node, and the
	// 10 % weekday budget lets general drift one at a time: the others wait.
	rep, _ := runDir(t, filepath.Join("..", "..", "examples", "scenarios", "default"))
	d := rep.DriftBudget
	drifted := 0
	for _, n := range rep.ByNode {
		if n.DeletedReason == "Drifted" {
			drifted++
		}
	}
	if d.HeldBackNodes == 0 || d.HeldBackPassBlocks < d.HeldBackNodes || d.HeldBackNodes > drifted || d.HeldBackPassBlocks > rep.BlockedByBudget {
		t.Errorf("drift held back: %+v; %d nodes drifted, %d budget blocks in all", d, drifted, rep.BlockedByBudget)
	}
	var b bytes.Buffer
	report.WriteSummary(&b, rep)
	want := []string{"Blocked        ", " node(s) held back by budgets (", " times), ", " of them drifted (", " times); drift at most "}
	line := ""
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "Blocked") {
			line = l
		}
	}
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("Blocked line lacks %q: %q", w, line)
		}
	}
	if !strings.Contains(line, fmt.Sprintf(", %d of them drifted (%d times)", d.HeldBackNodes, d.HeldBackPassBlocks)) {
		t.Errorf("Blocked line %q does not say %d nodes held back %d times", line, d.HeldBackNodes, d.HeldBackPassBlocks)
	}
}

// TestReportStudyData: what the HTML report draws a run's study from adds
// up — every sample's nodes by capacity type are its nodes by pool, a
// node's pods by workload are the pods it ran, and the default scenario's
// PodDisruptionBudget and budgets show as holds with their passes.
func TestReportStudyData(t *testing.T) {
	_, rep := runExample(t, "default", nil)
	for _, s := range rep.Timeline {
		byPool, byType := 0, 0
		for _, n := range s.NodesByPool {
			byPool += n
		}
		for _, n := range s.NodesByCapacityType {
			byType += n
		}
		if byPool != byType {
			t.Fatalf("minute %d: %d nodes by pool, %d by capacity type", s.Minute, byPool, byType)
		}
	}
	for _, n := range rep.ByNode {
		sum := 0
		for _, c := range n.PodsByWorkload {
			sum += c
		}
		if sum != n.PodsRan {
			t.Fatalf("node %s ran %d pods, %d by workload", n.Name, n.PodsRan, sum)
		}
	}
	codes := map[string]int{}
	for _, b := range rep.Blocked {
		if b.Passes < 1 || b.Last < b.First || b.NodePool == "" || b.Why == "" {
			t.Errorf("hold %+v: want passes, a span, its NodePool and words", b)
		}
		codes[b.Code] += b.Passes
	}
	if codes["PodDisruptionBudget"] == 0 || codes["NodePoolBudget"] == 0 {
		t.Errorf("holds by code %v: want the PodDisruptionBudget's and the NodePool budgets'", codes)
	}
}
