package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/report"
)

// run executes the joiner command line in-process.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCommand(&out, &errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestSimulateBundledSummary(t *testing.T) {
	out, err := run(t, "simulate", "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Scenario default (bundled)", "Cost ", "spot prices are synthetic", "Pod startup    p50 ", "slowest p90",
		"Zones          us-east-1a ", " nodes ", " pods, us-east-1b ",
		"Disruptions", "Drifted", " node(s) held back by budgets (", " of them drifted (", "Spot ", "interruptions survived", "Cloud errors",
		"karpenter_cloudprovider_errors_total", "Node-hours by instance type"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	// The AMI change at 10:00 drifts every node; the budgets hold some back.
	if strings.Contains(out, ", 0 of them drifted") {
		t.Errorf("the bundled scenario's drift budgets hold no drifted node back:\n%s", out)
	}
}

func TestSimulateJSONIsDeterministic(t *testing.T) {
	a, err := run(t, "simulate", "--json")
	if err != nil {
		t.Fatal(err)
	}
	b, err := run(t, "simulate", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("two runs of the bundled scenario printed different JSON")
	}
	var rep struct {
		Cost struct {
			Total float64 `json:"totalUSD"`
		} `json:"cost"`
		SpotPricesSynthetic bool `json:"spotPricesSynthetic"`
		Pods                struct {
			Ran        int            `json:"ran"`
			P50        *float64       `json:"startupSecondsP50"`
			ByWorkload map[string]any `json:"byWorkload"`
		} `json:"pods"`
		Nodes struct {
			Launched int `json:"launched"`
		} `json:"nodes"`
		ByNode []struct {
			Name, NodePool, InstanceType, Zone, CapacityType string
			Launched                                         string
			Deleted                                          *string
			PodsRan                                          int
		} `json:"byNode"`
		ByZone []struct {
			Zone     string `json:"zone"`
			Launched int    `json:"launched"`
			PodsRan  int    `json:"podsRan"`
		} `json:"byZone"`
		DriftBudget struct {
			HeldBackNodes      int `json:"heldBackNodes"`
			HeldBackPassBlocks int `json:"heldBackPassBlocks"`
		} `json:"driftBudget"`
	}
	if err := json.Unmarshal([]byte(a), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Cost.Total <= 0 || !rep.SpotPricesSynthetic || len(rep.Pods.ByWorkload) == 0 || rep.Pods.P50 == nil {
		t.Errorf("JSON: %+v", rep)
	}
	if len(rep.ByNode) != rep.Nodes.Launched || len(rep.ByZone) != 3 {
		t.Errorf("JSON lists %d nodes of %d launched, %d zones of 3", len(rep.ByNode), rep.Nodes.Launched, len(rep.ByZone))
	}
	nodes, pods, running := 0, 0, 0
	for _, z := range rep.ByZone {
		nodes += z.Launched
		pods += z.PodsRan
	}
	for _, n := range rep.ByNode {
		if n.Name == "" || n.Zone == "" || n.InstanceType == "" || n.CapacityType == "" || n.NodePool == "" || n.Launched == "" {
			t.Errorf("node without its fields: %+v", n)
		}
		if n.Deleted == nil {
			running++
		}
	}
	if nodes != rep.Nodes.Launched || pods != rep.Pods.Ran || running == 0 || running == len(rep.ByNode) {
		t.Errorf("zones count %d nodes and %d pods (run: %d, %d); %d of %d nodes still running", nodes, pods, rep.Nodes.Launched, rep.Pods.Ran, running, len(rep.ByNode))
	}
	if d := rep.DriftBudget; d.HeldBackNodes == 0 || d.HeldBackPassBlocks < d.HeldBackNodes {
		t.Errorf("drift held back by budgets: %+v", d)
	}
}

func TestSimulateCompareAndReport(t *testing.T) {
	report := filepath.Join(t.TempDir(), "r.html")
	out, err := run(t, "simulate", "../../examples/clusters/staging", "--compare", "../../examples/clusters/production", "--quiet", "--report", report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"examples/clusters/staging", "examples/clusters/production", "cost (USD)", "preemptions", " p90 (s)", "report: " + report} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "warning") {
		t.Errorf("the two clusters run the same day: no warning expected:\n%s", out)
	}
	html, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(html, []byte(`<script id="joiner-data" type="application/json">`)) || bytes.Count(html, []byte(`<div class="col" id="run-`)) != 2 ||
		bytes.Contains(html, []byte("<script src")) || bytes.Contains(html, []byte("<link")) {
		t.Error("the report should carry both runs' data and its scripts inline, and load nothing")
	}
}

func TestCommandErrors(t *testing.T) {
	if _, err := run(t, "simulate", filepath.Join(t.TempDir(), "missing"), "--quiet"); err == nil {
		t.Error("a missing scenario directory should fail")
	}
	out, err := run(t, "validate", "../../examples/legacy/ep21-gpu-ttlsecondsafterempty.yaml")
	if err == nil || !strings.Contains(err.Error(), "2 problems found") {
		t.Errorf("a legacy manifest should fail validation with its problems counted: %v", err)
	}
	for _, want := range []string{"ep21-gpu-ttlsecondsafterempty.yaml:18", "spec.disruption.ttlSecondsAfterEmpty", "consolidateAfter: 15m", "nodeClassRef:"} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
}

// TestSimulateCompareWarnsWhenRunsDiffer: a comparison of runs of other
// durations or starts says so, in the table, the HTML, and (on stderr) with
// --json.
func TestSimulateCompareWarnsWhenRunsDiffer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "short")
	if err := os.CopyFS(dir, os.DirFS("../../examples/clusters/staging")); err != nil {
		t.Fatal(err)
	}
	sc := filepath.Join(dir, "scenario.yaml")
	b, err := os.ReadFile(sc)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "duration: 24h", "duration: 6h", 1)
	s = strings.Replace(s, `start: "2026-11-30T00:00:00Z"`, `start: "2026-12-01T06:00:00Z"`, 1)
	if s == string(b) {
		t.Fatal("staging's scenario.yaml no longer has the start and duration this test edits")
	}
	if err := os.WriteFile(sc, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	warnings := []string{"warning: the runs differ in duration: 24h vs 6h",
		"warning: the runs differ in start: Mon 2026-11-30 00:00 UTC vs Tue 2026-12-01 06:00 UTC"}
	report := filepath.Join(t.TempDir(), "r.html")
	out, err := run(t, "simulate", "../../examples/clusters/production", "--compare", dir, "--quiet", "--report", report)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, strings.Join(warnings, "\n")+"\n") {
		t.Errorf("comparison does not start with the warnings %q:\n%s", warnings, out)
	}
	html, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warnings {
		if !bytes.Contains(html, []byte(`<p class="warning">`+w+"</p>")) {
			t.Errorf("the HTML report lacks %q", w)
		}
	}
	var stdout, stderr bytes.Buffer
	root := newRootCommand(&stdout, &stderr)
	root.SetArgs([]string{"simulate", "../../examples/clusters/production", "--compare", dir, "--json"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var both map[string]json.RawMessage
	if err := json.Unmarshal(stdout.Bytes(), &both); err != nil || len(both) != 2 {
		t.Errorf("--json --compare stdout is not the two reports (%v): %.200s", err, stdout.String())
	}
	for _, w := range warnings {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("--json --compare stderr lacks %q: %q", w, stderr.String())
		}
	}
}

// TestRecordBadInput: record says which flag is wrong and how to write it,
// before it connects to anything or creates the file.
func TestRecordBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.trace.gz")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"record"}, "-o/--output: say which file the trace goes to"},
		{[]string{"record", "-o", out, "--selector", "app=(web"}, `--selector "app=(web"`},
		{[]string{"record", "-o", out, "--for", "-1h"}, "--for -1h0m0s: a duration to record"},
		{[]string{"record", "-o", out, "--kubeconfig", filepath.Join(t.TempDir(), "none")}, "--kubeconfig"},
		{[]string{"record", "-o", out, "--from-audit-log", "a.log", "--for", "1h"}, "--from-audit-log reads files: --kubeconfig, --for"},
		{[]string{"record", "-o", out, "--from-audit-log", "../../README.md"}, "README.md:1: not an audit event"},
	} {
		_, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused recording left %s behind (%v)", out, err)
	}
}

const smallTrace = "../../pkg/replay/testdata/small.trace.gz"

func TestSimulateReplayAndCompare(t *testing.T) {
	out, err := run(t, "simulate", "--quiet", "--replay", smallTrace)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Scenario " + smallTrace + ": Mon 2026-11-30 09:00 → Mon 2026-11-30 11:00 UTC", "(general $", "replaying the trace"} {
		if !strings.Contains(out, want) {
			t.Errorf("simulate --replay lacks %q:\n%s", want, out)
		}
	}
	dir := t.TempDir()
	spot := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: spot}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]
`
	if err := os.WriteFile(filepath.Join(dir, "pools.yaml"), []byte(spot), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "simulate", "--quiet", "--json", "--replay", smallTrace, "--compare", dir)
	if err != nil {
		t.Fatal(err)
	}
	var both map[string]*report.Report
	if err := json.Unmarshal([]byte(out), &both); err != nil {
		t.Fatal(err)
	}
	if both["a"].Cost.ByPool["general"] <= 0 || both["b"].Cost.ByPool["spot"] <= 0 || both["a"].Pods.Ran == 0 || both["b"].Pods.Ran == 0 {
		t.Errorf("a paid %v and ran %d pods, b paid %v and ran %d: want the recorded pool for a, the spot pool for b", both["a"].Cost.ByPool, both["a"].Pods.Ran, both["b"].Cost.ByPool, both["b"].Pods.Ran)
	}
}

func TestBacktestCommand(t *testing.T) {
	report := filepath.Join(t.TempDir(), "bt.html")
	out, err := run(t, "backtest", "--quiet", "--report", report, smallTrace)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"node count   mean absolute error", "cost         recorded $0.76", "pending p90  recorded 60.0 s", "largest divergences:", "report: " + report} {
		if !strings.Contains(out, want) {
			t.Errorf("backtest lacks %q:\n%s", want, out)
		}
	}
	html, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<script id="joiner-data" type="application/json">`, "Recorded: solid blue; simulated: dashed red.", `"divergences":[{`, `<section id="backtest">`} {
		if !strings.Contains(string(html), want) {
			t.Errorf("the HTML report lacks %q", want)
		}
	}
	a, err := run(t, "backtest", "--json", smallTrace)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := run(t, "backtest", "--json", smallTrace)
	if a != b || !strings.Contains(a, `"nodeCountMAPE"`) {
		t.Errorf("backtest --json is not deterministic, or lacks the error figures")
	}
	if _, err := run(t, "backtest", "main_test.go"); err == nil || !strings.Contains(err.Error(), "main_test.go: not a trace") {
		t.Errorf("backtest of a Go file: %v, want it named as not a trace", err)
	}
}

// The README's replay example: the bundled kwok recording under the spot-first candidate.
func TestExampleTraceReplays(t *testing.T) {
	out, err := run(t, "simulate", "--quiet", "--json", "--replay", "../../examples/traces/kwok.trace.gz", "../../examples/traces/spot-pools")
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Pods.Ran < 100 || rep.Cost.ByPool["spot-first"] <= 0 || rep.Pods.NeverRan != 0 {
		t.Errorf("ran %d pods (never %d), cost %v: want the recording's 100 pods on the spot-first pool", rep.Pods.Ran, rep.Pods.NeverRan, rep.Cost.ByPool)
	}
	// Upstream Karpenter's run, backtested with its decisions.
	out, err = run(t, "backtest", "--quiet", "--decisions", "karpenter", "../../examples/traces/karpenter-kwok.trace.gz")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "decisions karpenter") || !strings.Contains(out, "node count   mean absolute error") {
		t.Errorf("backtest of Karpenter's run:\n%s", out)
	}
	// The recording of test/integration's TestBacktestOfARecordedRun: spot
	// nodes interrupted by the cloud, replayed on the simulated ones.
	out, err = run(t, "backtest", "--quiet", "--json", "../../examples/traces/kwok-spot.trace.gz")
	if err != nil {
		t.Fatal(err)
	}
	var bt struct {
		Errors struct {
			NodeCountMAPE float64 `json:"nodeCountMAPE"`
			CostError     float64 `json:"costErrorPercent"`
		} `json:"errors"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &bt); err != nil {
		t.Fatal(err)
	}
	if e := bt.Errors; e.NodeCountMAPE > 10 || math.Abs(e.CostError) > 5 || !slices.ContainsFunc(bt.Notes, func(n string) bool { return strings.Contains(n, "2 interruptions of instances by the cloud replay") }) {
		t.Errorf("backtest of the spot recording: node count %.1f %%, cost %+.1f %%, notes %q; want within 10 %% and 5 %%, its 2 interruptions replayed", e.NodeCountMAPE, e.CostError, bt.Notes)
	}
}

// plan and explain take a trace for --scenario: the replay run to --at.
func TestPlanAndExplainOverATrace(t *testing.T) {
	out, err := run(t, "plan", "--scenario", smallTrace, "--at", "+30m")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Plan of the simulation of scenario "+smallTrace+" at 2026-11-30T09:30:00Z") {
		t.Errorf("plan over a trace:\n%s", out)
	}
	out, err = run(t, "explain", "pod", "shop/report-1", "--scenario", smallTrace, "--at", "+40m")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Pod shop/report-1 (requests cpu 1, memory 1Gi") || !strings.Contains(out, "Goes to        a new NodeClaim of NodePool general") {
		t.Errorf("explain of the recorded Job's pod as it arrives:\n%s", out)
	}
}
