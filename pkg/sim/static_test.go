package sim

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// staticPools: a static pool of two nodes and a dynamic one.
const staticPools = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: fixed
spec:
  replicas: 2
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - key: node.kubernetes.io/instance-type
          operator: In
          values: ["m6i.large"]
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
---
` + loopPool

const bigApp = `apiVersion: apps/v1
kind: Deployment
metadata: {name: big}
spec:
  replicas: 3
  selector: {matchLabels: {app: big}}
  template:
    metadata: {labels: {app: big}}
    spec:
      containers:
      - name: c
        image: x
        resources: {requests: {cpu: "3", memory: 4Gi}}
`

// TestStaticNodePool: a static pool keeps its two nodes all day, empty or
// not (consolidation leaves them alone), and the pods that do not fit
// them go to the dynamic pool, which the static one never displaces.
func TestStaticNodePool(t *testing.T) {
	rep, _ := runInline(t, inlineScenario(staticPools, bigApp, "  start: \"2026-11-30T08:00:00Z\"\n  duration: 6h\n  seed: 1\n"))
	fixed, general := 0, 0
	for _, n := range rep.ByNode {
		switch n.NodePool {
		case "fixed":
			fixed++
			if n.Deleted != nil {
				t.Errorf("static node %s deleted at %s (%s)", n.Name, n.Deleted, n.DeletedReason)
			}
			if n.InstanceType != "m6i.large" {
				t.Errorf("static node %s is %s", n.Name, n.InstanceType)
			}
		case "general":
			general++
		}
	}
	if fixed != 2 {
		t.Errorf("%d nodes of the static pool launched, want 2", fixed)
	}
	if general == 0 || rep.Pods.Ran != 3 {
		t.Errorf("%d general nodes, %d pods ran; want the 3-core pods on general nodes (m6i.large has 2 cores)", general, rep.Pods.Ran)
	}
}

// runScaledTo runs the inline scenario with opts, setting the NodePool's
// replicas to replicas at the offset at: scenarios cannot change a
// NodePool during a run, so the test changes it as an operator would.
func runScaledTo(t *testing.T, fsys fstest.MapFS, opts Options, pool string, at time.Duration, replicas int64) *report.Report {
	t.Helper()
	in, err := scenario.Load(fsys, "sc", "inline")
	if err != nil {
		t.Fatal(err)
	}
	e, err := newSimulation(in, fsys, "sc", opts)
	if err != nil {
		t.Fatal(err)
	}
	e.schedule()
	e.clk.at(e.start.Add(at), func() {
		for _, np := range e.pools {
			if np.Name == pool {
				np.Spec.Replicas = &replicas
			}
		}
		e.st.SetNodePools(e.pools)
		e.dirty = true
	})
	if err := e.clk.run(context.Background(), e.end, nil); err != nil {
		t.Fatal(err)
	}
	return e.finish()
}

// TestStaticScaleDownWithinBudget: a static pool lowered from 10 to 2
// replicas under a 20% budget steps down pass by pass by default — 2, 2,
// 2, 1, 1 nodes, each step after the last one's nodes are gone, the held
// ones counted as blocked by the budget and the hold noted — and at once
// with karpenter's decisions, which bypass budgets as upstream's.
func TestStaticScaleDownWithinBudget(t *testing.T) {
	pools := strings.Replace(strings.Replace(staticPools, "replicas: 2", "replicas: 10", 1),
		"    consolidateAfter: 1m\n", "    consolidateAfter: 1m\n    budgets: [{nodes: \"20%\"}]\n", 1)
	fsys := inlineScenario(pools, "", "  start: \"2026-11-30T08:00:00Z\"\n  duration: 2h\n  seed: 1\n")
	for _, tc := range []struct {
		decisions provisioning.Decisions
		steps     []int // nodes deleted at each distinct time, in order
		blocked   bool
	}{
		{provisioning.DecisionsJoiner, []int{2, 2, 2, 1, 1}, true},
		{provisioning.DecisionsKarpenter, []int{8}, false},
	} {
		t.Run(string(tc.decisions), func(t *testing.T) {
			rep := runScaledTo(t, fsys, Options{Policy: provisioning.Policy{Decisions: tc.decisions}}, "fixed", time.Hour, 2)
			at := map[time.Time]int{}
			launched := 0
			for _, n := range rep.ByNode {
				if n.NodePool != "fixed" {
					continue
				}
				launched++
				if n.Deleted != nil {
					if n.DeletedReason != "StaticScaleDown" || n.Deleted.Before(rep.Start.Add(time.Hour)) {
						t.Errorf("node %s deleted at %s for %s; want after the scale-down at 09:00, for it", n.Name, n.Deleted, n.DeletedReason)
					}
					at[*n.Deleted]++
				}
			}
			var times []time.Time
			for when := range at {
				times = append(times, when)
			}
			sort.Slice(times, func(i, j int) bool { return times[i].Before(times[j]) })
			var steps []int
			for _, when := range times {
				steps = append(steps, at[when])
			}
			if launched != 10 || fmt.Sprint(steps) != fmt.Sprint(tc.steps) {
				t.Errorf("%d launched, deleted in steps of %v; want 10, %v", launched, steps, tc.steps)
			}
			noted := false
			for _, n := range rep.Notes {
				noted = noted || strings.Contains(n, "static NodePool fixed: 8 surplus node(s), 2 removed now, 6 wait for the budget: budgets[0] (nodes 20%) allows 2 disruption(s) now")
			}
			if blocked := rep.BlockedByBudgetNodes > 0; blocked != tc.blocked || noted != tc.blocked {
				t.Errorf("blocked by budget: %d node(s), noted %v; want some and noted: %v (notes %q)", rep.BlockedByBudgetNodes, noted, tc.blocked, rep.Notes)
			}
		})
	}
}
