package sim

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	corev1 "k8s.io/api/core/v1"
)

// webSimulation is a simulation of one Deployment, web, of replicas pods of
// 300m and 256Mi, scheduled once.
func webSimulation(t *testing.T, replicas int) *simulation {
	t.Helper()
	fsys := reportScenario(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: c
        image: x
        resources: {requests: {cpu: 300m, memory: 256Mi}}
`, replicas))
	in, err := scenario.Load(fsys, "sc", "inline")
	if err != nil {
		t.Fatal(err)
	}
	e, err := newSimulation(in, fsys, "sc", Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.schedule()
	return e
}

// TestScaleDownTakesFromTheFullestNodes: a Deployment's scale-down deletes
// pods as kube-controller-manager's ReplicaSet controller ranks them — from
// the nodes running the most of its pods first — not simply the newest, so
// a node that took the latest few pods is not the one emptied. Twelve pods
// of 300m fill two m6i.large (six each); two more go to a third node ten
// minutes later; scaled to eight, the six deleted come from the two full
// nodes and the third keeps its two (newest first would empty it).
func TestScaleDownTakesFromTheFullestNodes(t *testing.T) {
	e := webSimulation(t, 12)
	web := func() *workload {
		for _, w := range e.workloads {
			if w.name == "web" {
				return w
			}
		}
		t.Fatal("no workload web")
		return nil
	}
	counts := func() map[string]int {
		out := map[string]int{}
		for _, p := range web().pods {
			if n := e.nodeOf(p); n != nil {
				out[n.name]++
			}
		}
		return out
	}
	scale := func(at time.Duration, replicas int) {
		e.clk.at(e.start.Add(at), func() {
			w := web()
			w.replicas = replicas
			e.reconcile(w)
		})
	}
	var before, after map[string]int
	scale(10*time.Minute, 14)
	e.clk.at(e.start.Add(19*time.Minute), func() { before = counts() })
	scale(20*time.Minute, 8)
	e.clk.at(e.start.Add(21*time.Minute), func() { after = counts() })
	if err := e.clk.run(context.Background(), e.start.Add(22*time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	if got := sortedCounts(before); len(got) != 3 || got[0] != 2 || got[1] != 6 || got[2] != 6 {
		t.Fatalf("before the scale-down, pods per node %v; want 6, 6 and 2", before)
	}
	for name, n := range before {
		if n == 2 && after[name] != 2 {
			t.Errorf("the node with the two newest pods has %d after the scale-down (%v); want it to keep both, the six deleted from the full nodes", after[name], after)
		}
	}
	total := 0
	for _, n := range after {
		total += n
	}
	if total != 8 {
		t.Errorf("%d pods bound after the scale-down (%v), want 8", total, after)
	}
}

func sortedCounts(m map[string]int) []int {
	var out []int
	for _, n := range m {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// TestScaleDownHonoursPodDeletionCost: a pod annotated
// controller.kubernetes.io/pod-deletion-cost above its siblings' is
// deleted after them, wherever it runs; before the cost, not yet running
// pods go first.
func TestScaleDownHonoursPodDeletionCost(t *testing.T) {
	e := webSimulation(t, 6)
	var kept []string
	e.clk.at(e.start.Add(10*time.Minute), func() {
		w := e.workloads[0]
		costly := w.pods[2]
		e.setPod(costly, func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.PodDeletionCost: "100"}
		})
		w.replicas = 1
		e.reconcile(w)
		for _, p := range w.pods {
			kept = append(kept, p.pod.Name)
		}
		if len(kept) != 1 || kept[0] != costly.pod.Name {
			t.Errorf("kept %v after the scale-down to 1; want %s, the pod of deletion cost 100", kept, costly.pod.Name)
		}
	})
	if err := e.clk.run(context.Background(), e.start.Add(11*time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	if kept == nil {
		t.Fatal("the scale-down never ran")
	}
}
