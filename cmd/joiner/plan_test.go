package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/plan"
)

const planExample = "../../examples/plan"

// TestPlanExample: the example cluster has one node, a pod that fits it, a
// pod pinned to another zone, and a GPU pod no NodePool can take.
func TestPlanExample(t *testing.T) {
	out, err := run(t, "plan", planExample, "--at", "2026-11-30T20:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Plan of the manifests at 2026-11-30T20:00:00Z (a dry run: nothing is changed)",
		"NodeClaims to create: 1", "us-east-1b  on-demand", "jobs/batch-1",
		"Pending pods that fit a node already there or on its way: 1", "ip-10-0-1-23.ec2.internal  shop/web-2",
		"Pods that stay pending: 1", `ml/train-1  NodePool "general": no instance type is large enough: the pod needs 1 nvidia.com/gpu`,
		"note: 3 pod(s) pending: every disruption simulation places them too", "budgets now: general/Empty 1, general/Drifted 1, general/Underutilized 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	js, err := run(t, "plan", planExample, "--at", "2026-11-30T20:00:00Z", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	again, _ := run(t, "plan", planExample, "--at", "2026-11-30T20:00:00Z", "-o", "json")
	if js != again {
		t.Error("the same input and time gave different JSON")
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.NodeClaims) != 1 || strings.Join(p.NodeClaims[0].Zones, ",") != "us-east-1b" || p.NodeClaims[0].InstanceTypes[0] != "c6a.2xlarge" ||
		p.NodeClaims[0].PriceUSDPerHour <= 0 {
		t.Errorf("node claims %+v: one in us-east-1b, 6 cores on the cheapest 8-core type", p.NodeClaims)
	}
	if y, err := run(t, "plan", planExample, "--at", "2026-11-30T20:00:00Z", "-o", "yaml"); err != nil || !strings.Contains(y, "nodePool: general") {
		t.Errorf("yaml: %v\n%s", err, y)
	}
}

// TestPlanConsolidation: without the pending pods the half-empty node is
// consolidated — not during the weekday window whose budget allows no
// Underutilized disruption, and after it with the budget that allows it.
func TestPlanConsolidation(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(planExample, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	cut := strings.Index(text, "- apiVersion: v1\n  kind: Pod\n  metadata: {name: web-2")
	if cut < 0 {
		t.Fatal("example changed: no web-2")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(text[:cut]), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := run(t, "plan", dir, "--at", "2026-11-30T10:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(in, "Disruption, next pass: 0 command(s)") ||
		!strings.Contains(in, `budget allows no more Underutilized disruptions now: budgets[1] (nodes 0, reasons Underutilized, from "0 9 * * mon-fri" for 8h0m0s), until Mon 17:00 UTC`) ||
		!strings.Contains(in, "general/Underutilized 0 until Mon 17:00 UTC") {
		t.Errorf("Monday 10:00, inside the window of budget nodes 0:\n%s", in)
	}
	after, err := run(t, "plan", dir, "--at", "2026-11-30T20:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Disruption, next pass: 1 command(s)", "single-node", "Underutilized", "ip-10-0-1-23.ec2.internal",
		"replacement", "allowed by: NodePool general: budgets[0] (nodes 10%) allows 1 Underutilized now"} {
		if !strings.Contains(after, want) {
			t.Errorf("Monday 20:00 lacks %q:\n%s", want, after)
		}
	}
}

func TestPlanBadInput(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pods.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "pods.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: 2cores}}}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", planExample, "-o", "xml"}, `-o "xml": use table, json or yaml`},
		{[]string{"plan", planExample, "--at", "tomorrow"}, `--at "tomorrow"`},
		{[]string{"plan", dir}, "no NodePool"},
		{[]string{"plan", broken}, "spec.containers[0].resources.requests.cpu"},
		{[]string{"plan", filepath.Join(dir, "nope")}, "no such file"},
		{[]string{"plan", planExample, "--region", "mars-1"}, "--region/--zones"},
	} {
		_, err := run(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestDecisionsFlag: plan and simulate take --decisions joiner|karpenter,
// say when they make Karpenter's choices, and refuse anything else.
func TestDecisionsFlag(t *testing.T) {
	tests := []struct {
		args    []string
		want    string
		wantErr string
	}{
		{[]string{"plan", planExample, "--at", "2026-11-30T20:00:00Z", "--decisions", "karpenter"}, "note: decisions karpenter: upstream Karpenter's choices", ""},
		{[]string{"plan", planExample, "--at", "2026-11-30T20:00:00Z", "--decisions", "joiner"}, "NodeClaims to create: 1", ""},
		{[]string{"plan", planExample, "--decisions", "upstream"}, "", `--decisions: unknown decisions "upstream"`},
		{[]string{"simulate", "--quiet", "--decisions", "karpenter", "../../examples/scenarios/gpu-inference-limits"}, "decisions: karpenter", ""},
		{[]string{"simulate", "--decisions", "kar"}, "", `--decisions: unknown decisions "kar"`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := run(t, tc.args...)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case !strings.Contains(out, tc.want):
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
		})
	}
}

func TestMinValuesPolicyFlag(t *testing.T) {
	for _, args := range [][]string{
		{"plan", planExample, "--at", "2026-11-30T20:00:00Z", "--min-values-policy", "BestEffort"},
		{"simulate", "--quiet", "--min-values-policy", "BestEffort", "../../examples/scenarios/gpu-inference-limits"},
	} {
		if _, err := run(t, args...); err != nil {
			t.Errorf("%s: %v", strings.Join(args, " "), err)
		}
	}
	if _, err := run(t, "plan", planExample, "--min-values-policy", "Loose"); err == nil || !strings.Contains(err.Error(), `--min-values-policy: unknown minValues policy "Loose"`) {
		t.Errorf("an unknown policy: %v", err)
	}
}

// TestPlanStaticNodePool: a static NodePool short of its replicas is
// launched for in the plan, and takes none of the pending pods.
func TestPlanStaticNodePool(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(planExample, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	static := `- apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata:
    name: fixed
  spec:
    replicas: 2
    template:
      spec:
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
        requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m6i.large]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
`
	text := strings.Replace(string(b), "items:\n", "items:\n"+static, 1)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "plan", dir, "--at", "2026-11-30T20:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Static NodePool fixed (replicas 2): launch 2  m6i.large", "NodeClaims to create: 1", `NodePool "fixed": a static NodePool (replicas 2)`} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
}

// TestWritePlanStaticHeld: a static scale-down held by its budget shows
// what goes now and, beneath, what waits and why; one held entirely says
// it removes none now.
func TestWritePlanStaticHeld(t *testing.T) {
	why := "static NodePool fixed: 4 surplus node(s), 2 removed now, 2 wait for the budget: budgets[0] (nodes 2) allows 2 disruption(s) now"
	p := &plan.Plan{Static: []plan.StaticScaling{
		{NodePool: "fixed", Replicas: 1, Remove: []string{"a", "b"}, Held: []string{"c", "d"}, Why: why},
		{NodePool: "frozen", Replicas: 0, Held: []string{"e"}, Why: "static NodePool frozen: …"},
	}}
	var b strings.Builder
	writePlan(&b, p, &clusterInput{where: "the manifests"}, palette{})
	for _, want := range []string{
		"Static NodePool fixed (replicas 1): remove a, b\n  held: c,d (" + why + ")\n",
		"Static NodePool frozen (replicas 0): remove none now\n  held: e (static NodePool frozen: …)\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, b.String())
		}
	}
}

// TestPlanVolumes: plan reads claims, volumes and classes from the dump —
// a pod on a volume bound in us-east-1c gets a claim there, one on an
// unbound WaitForFirstConsumer claim a claim in its class's zones, one on
// an unbound Immediate claim stays pending with why, and one whose claim
// the dump lacks waits for it.
func TestPlanVolumes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(planExample, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pending := `    phase: Pending
    conditions: [{type: PodScheduled, status: "False", reason: Unschedulable}]
`
	podOn := func(name, claim string) string {
		return `- apiVersion: v1
  kind: Pod
  metadata: {name: ` + name + `, namespace: db}
  spec:
    containers: [{name: c, image: x, resources: {requests: {cpu: "3", memory: 4Gi}}}]
    volumes: [{name: data, persistentVolumeClaim: {claimName: ` + claim + `}}]
  status:
` + pending
	}
	storage := `- apiVersion: storage.k8s.io/v1
  kind: StorageClass
  metadata: {name: gp3}
  provisioner: ebs.csi.aws.com
  volumeBindingMode: WaitForFirstConsumer
  allowedTopologies: [{matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [us-east-1b]}]}]
- apiVersion: storage.k8s.io/v1
  kind: StorageClass
  metadata: {name: efs}
  provisioner: efs.csi.aws.com
- apiVersion: v1
  kind: PersistentVolume
  metadata: {name: pv-c}
  spec:
    capacity: {storage: 10Gi}
    accessModes: [ReadWriteOnce]
    storageClassName: gp3
    csi: {driver: ebs.csi.aws.com, volumeHandle: vol-1}
    nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1c]}]}]}}
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata: {name: bound, namespace: db, annotations: {pv.kubernetes.io/bind-completed: "yes"}}
  spec: {accessModes: [ReadWriteOnce], storageClassName: gp3, volumeName: pv-c, resources: {requests: {storage: 10Gi}}}
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata: {name: fresh, namespace: db}
  spec: {accessModes: [ReadWriteOnce], storageClassName: gp3, resources: {requests: {storage: 10Gi}}}
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata: {name: shared, namespace: db}
  spec: {accessModes: [ReadWriteMany], storageClassName: efs, resources: {requests: {storage: 10Gi}}}
`
	text := strings.Replace(string(b), "items:\n", "items:\n"+storage+podOn("on-bound", "bound")+podOn("on-fresh", "fresh")+
		podOn("on-shared", "shared")+podOn("on-missing", "missing"), 1)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	js, err := run(t, "plan", dir, "--at", "2026-11-30T20:00:00Z", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var p plan.Plan
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatal(err)
	}
	zoneOf := map[string]string{}
	for _, nc := range p.NodeClaims {
		for _, pod := range nc.Pods {
			zoneOf[pod] = strings.Join(nc.Zones, ",")
		}
	}
	if zoneOf["db/on-bound"] != "us-east-1c" || zoneOf["db/on-fresh"] != "us-east-1b" {
		t.Errorf("zones by pod %v: want db/on-bound in us-east-1c (its volume), db/on-fresh in us-east-1b (its class; the node there is in us-east-1a)", zoneOf)
	}
	reasons := map[string]string{}
	for _, pe := range p.Pending {
		reasons[pe.Pod] = pe.Reason
	}
	for pod, want := range map[string]string{
		"db/on-shared":  "waits for its volumes: PersistentVolumeClaim db/shared is unbound and StorageClass efs binds Immediate",
		"db/on-missing": "waits for its volumes: PersistentVolumeClaim db/missing not found",
	} {
		if !strings.HasPrefix(reasons[pod], want) {
			t.Errorf("%s pending with %q, want %q", pod, reasons[pod], want)
		}
	}
}

// TestPlanShowsTheRoundsToCome: in the scale benchmark's scale-in (its
// scenario at minute 21:20), the budget of 10 % takes two nodes now; plan
// names the nodes the rounds after it would take, which a controller
// marks joiner.sh/consolidating, and the next round's two among them,
// marked joiner.sh/consolidating-next too — the first two, in order.
func TestPlanShowsTheRoundsToCome(t *testing.T) {
	out, err := run(t, "plan", "--scenario", filepath.Join("..", "..", "test", "scale", "scenario"), "--at", "+21m20s")
	if err != nil {
		t.Fatal(err)
	}
	var leaving, next []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "rounds to come, marked joiner.sh/consolidating: "); ok {
			_, names, _ := strings.Cut(rest, ": ")
			leaving = strings.Split(names, ",")
		}
		if rest, ok := strings.CutPrefix(line, "the next round's, marked joiner.sh/consolidating-next too: "); ok {
			next = strings.Split(rest, ",")
		}
	}
	if len(leaving) < 3 || len(next) != 2 || next[0] != leaving[0] || next[1] != leaving[1] {
		t.Fatalf("want the rounds to come (three or more) and the next round's two, the first of them; got %q and %q in:\n%s", leaving, next, out)
	}
}
