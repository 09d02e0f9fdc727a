package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		"Disruptions", "Drifted", "Spot ", "interruptions survived", "Cloud errors",
		"karpenter_cloudprovider_errors_total", "Node-hours by instance type"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
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
	html, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(html, []byte("<svg")) || bytes.Contains(html, []byte("https://")) {
		t.Error("the report should carry inline SVG charts and load nothing from the network")
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
