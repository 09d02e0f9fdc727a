package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/plan"
)

// TestExplainNodePool: the example pool's allowances inside and after its
// weekday window of "nodes 0 for Underutilized", the window's next change,
// and its usage against limits — and at its limit when the limit is what
// its one node holds.
func TestExplainNodePool(t *testing.T) {
	in, err := run(t, "explain", "nodepool", "general", planExample, "--at", "2026-11-30T10:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"NodePool general at 2026-11-30T10:00:00Z",
		"Nodes          1 (1 initialized, 0 of them disrupting or not Ready)",
		"Allowed now    Empty: 1, by budgets[0] (nodes 10%)",
		`Underutilized: 0, by budgets[1] (nodes 0, reasons Underutilized, from "0 9 * * mon-fri" for 8h0m0s) until Mon 17:00 UTC`,
		`Windows        budgets[1] (nodes 0, reasons Underutilized, from "0 9 * * mon-fri" for 8h0m0s): open, closes Mon 17:00 UTC`,
		"Limits         cpu 8 of 100",
	} {
		if !strings.Contains(in, want) {
			t.Errorf("Monday 10:00 lacks %q:\n%s", want, in)
		}
	}
	after, err := run(t, "explain", "nodepool", "general", planExample, "--at", "2026-11-30T20:00:00Z", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var ex plan.NodePoolExplanation
	if err := json.Unmarshal([]byte(after), &ex); err != nil {
		t.Fatal(err)
	}
	if len(ex.Allowed) != 3 || ex.Allowed[2].Reason != "Underutilized" || ex.Allowed[2].Allowed != 1 || len(ex.Windows) != 1 || ex.Windows[0].Open ||
		ex.Windows[0].Next.Format("Mon 15:04") != "Tue 09:00" {
		t.Errorf("Monday 20:00: %+v", ex)
	}

	// A limit of what the node holds: at the limit.
	b, err := os.ReadFile(filepath.Join(planExample, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(strings.Replace(string(b), `cpu: "100"`, `cpu: "8"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	full, err := run(t, "explain", "nodepool", "general", dir, "--at", "2026-11-30T20:00:00Z")
	if err != nil || !strings.Contains(full, "Limits         cpu 8 of 8 (at the limit: no new node launches)") {
		t.Errorf("at the limit: %v\n%s", err, full)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"explain", "nodepool", "gpu", planExample}, `no NodePool "gpu" here (there are: [general])`},
		{[]string{"explain", "nodepool", "general", planExample, "-o", "table"}, `-o "table": use text or json`},
		{[]string{"explain", "nodepool", "general", planExample, "--at", "noon"}, `--at "noon"`},
	} {
		if _, err := run(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestExplainNode: the example node, method by method — held by the
// weekday budget (named, with its end) inside the window, replaced after
// it once no pod is pending, and waiting while pods are.
func TestExplainNode(t *testing.T) {
	const node = "ip-10-0-1-23.ec2.internal"
	in, err := run(t, "explain", "node", node, planExample, "--at", "2026-11-30T10:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Node ip-10-0-1-23.ec2.internal at 2026-11-30T10:00:00Z",
		"expiration                 no  it expires at 2026-12-30T08:00:00Z (expireAfter 720h0m0s)",
		"empty                      no  it runs 1 pod(s) that would have to move",
		"drift                      no  it has not drifted",
		`single-node consolidation  no  NodePool general's budget allows no Underutilized disruption now: budgets[1] (nodes 0, reasons Underutilized, from "0 9 * * mon-fri" for 8h0m0s), until Mon 17:00 UTC`,
	} {
		if !strings.Contains(in, want) {
			t.Errorf("Monday 10:00 lacks %q:\n%s", want, in)
		}
	}
	if out, err := run(t, "explain", "node", node, planExample, "--at", "2026-11-30T20:00:00Z"); err != nil || !strings.Contains(out, "pending pod(s) that would go with them") {
		t.Errorf("with pods pending: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(planExample, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(text[:strings.Index(text, "- apiVersion: v1\n  kind: Pod\n  metadata: {name: web-2")]), 0o644); err != nil {
		t.Fatal(err)
	}
	js, err := run(t, "explain", "node", node, dir, "--at", "2026-11-30T20:00:00Z", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var ex plan.NodeExplanation
	if err := json.Unmarshal([]byte(js), &ex); err != nil {
		t.Fatal(err)
	}
	last := ex.Methods[len(ex.Methods)-1]
	if !last.Acts || !strings.Contains(last.Why, "it is replaced by a cheaper c6a.large, saving") {
		t.Errorf("Monday 20:00 without pending pods: %+v", ex.Methods)
	}
	if _, err := run(t, "explain", "node", "ip-10-9-9-9", planExample); err == nil || !strings.Contains(err.Error(), "not one Joiner manages") {
		t.Errorf("unknown node: %v", err)
	}
}

// TestExplainPod: the example cluster's pods, each with where provisioning
// puts it and every NodePool's verdict: a GPU pod no type of the pool can
// hold (the largest compatible type named, with what it lacks), a pod that
// gets a new claim, one that fits a node already there, one already bound,
// and a pod that is not there.
func TestExplainPod(t *testing.T) {
	for _, tc := range []struct {
		pod  string
		want []string
	}{
		{"ml/train-1", []string{"Pod ml/train-1 (requests cpu 4, memory 16Gi, nvidia.com/gpu 1, pods 1)",
			"Goes to        stays pending: ",
			"  general  weight 0  no  no instance type is large enough: the pod needs 1 nvidia.com/gpu, the largest compatible type, r8ib.96xlarge, has 0 allocatable"}},
		{"jobs/batch-1", []string{"Goes to        a new NodeClaim of NodePool general (with 1 pending pod(s) in all)",
			"  general  weight 0  yes  on c6a.2xlarge, c7i-flex.2xlarge, c6i.2xlarge, m6a.2xlarge, c8i-flex.2xlarge and 233 more, from $0.3060/h"}},
		{"shop/web-2", []string{"Goes to        fits node ip-10-0-1-23.ec2.internal, which is there or on its way: no new node"}},
		{"shop/web-1", []string{"Goes to        bound to node ip-10-0-1-23.ec2.internal: nothing to provision"}},
	} {
		out, err := run(t, "explain", "pod", tc.pod, planExample)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("explain pod %s lacks %q:\n%s", tc.pod, w, out)
			}
		}
	}
	if _, err := run(t, "explain", "pod", "shop/nope", planExample); err == nil || !strings.Contains(err.Error(), "the manifests: pod shop/nope is not there (4 pods are; pending: jobs/batch-1, ml/train-1, shop/web-2)") {
		t.Errorf("an unknown pod: %v", err)
	}
	js, err := run(t, "explain", "pod", "jobs/batch-1", planExample, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var ex plan.PodExplanation
	if err := json.Unmarshal([]byte(js), &ex); err != nil {
		t.Fatal(err)
	}
	if ex.NodeClaim == nil || ex.NodeClaim.NodePool != "general" || len(ex.Pools) != 1 || !ex.Pools[0].CanRun {
		t.Errorf("json: %+v", ex)
	}
}

// TestExplainScenario: explain and plan over the bundled scenario run to a
// moment: a node that survives the run, named with what holds it; and the
// source flags' mistakes, each answered with what to write.
func TestExplainScenario(t *testing.T) {
	out, err := run(t, "explain", "node", "general-00029", "--scenario", "default")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Node general-00029 at 2026-12-01T00:00:00Z",
		"single-node consolidation  no  no cheaper replacement: the cheapest type that holds its pods is m6i.xlarge at 0.1920 USD/h, against 0.1920 USD/h now"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain node at the end of the run lacks %q:\n%s", want, out)
		}
	}
	// Half a minute after the AMI change: one general node drains, so the
	// drift budget of 10 % (one node) allows no other.
	out, err = run(t, "explain", "node", "general-00005", "--scenario", "default", "--at", "+10h00m30s")
	if want := `drift                      no  drifted (node class: AMIDrift), but NodePool general's budget allows no Drifted disruption now: ` +
		`budgets[0] (nodes 10%, reasons Drifted, from "0 9 * * mon-fri" for 8h0m0s), until Mon 17:00 UTC, ` +
		`which allows 1 of the pool's 4 initialized node(s) at once, and general-00004 is being disrupted or not Ready`; err != nil || !strings.Contains(out, want) {
		t.Errorf("explain node during drift: %v, want %q:\n%s", err, want, out)
	}
	out, err = run(t, "explain", "nodepool", "general", "--scenario", "default", "--at", "+10h00m30s")
	if want := "Nodes          5 (4 initialized, 1 of them disrupting or not Ready: general-00004)"; err != nil || !strings.Contains(out, want) {
		t.Errorf("explain nodepool during drift: %v, want %q:\n%s", err, want, out)
	}
	out, err = run(t, "plan", "--scenario", "default", "--at", "+10h15m")
	if err != nil || !strings.Contains(out, "Plan of the simulation of scenario default (bundled) at 2026-11-30T10:15:00Z") ||
		!strings.Contains(out, "general-00028  NodePool general's budget allows 1 Underutilized disruption(s) at once: budgets[2] (nodes 20%), too few to consolidate it together with other nodes") {
		t.Errorf("plan at 10:15: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan"}, "say where the cluster is: manifest files or directories, --kubeconfig FILE"},
		{[]string{"plan", planExample, "--scenario", "default"}, "say where the cluster is"},
		{[]string{"explain", "pod", "x", "--scenario", "default", "--at", "+25h"}, "--at: 2026-12-01T01:00:00Z is outside the run (2026-11-30T00:00:00Z to 2026-12-01T00:00:00Z)"},
		{[]string{"explain", "pod", "x", "--scenario", "default", "--at", "+ten"}, `--at "+ten"`},
		{[]string{"explain", "pod", "x", "--scenario", "default", "--catalog", "c.json"}, "--catalog, --region and --zones do not go with --scenario"},
		{[]string{"explain", "pod", "x", "--scenario", "default", "--at", "+1h"}, "the simulation of scenario default (bundled): pod default/x is not there ("},
		{[]string{"explain", "node", "x", "--kubeconfig", "/nonexistent/kubeconfig"}, "--kubeconfig: "},
	} {
		if _, err := run(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
