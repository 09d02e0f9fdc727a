package disruption

import (
	"context"
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

func TestEvictionCost(t *testing.T) {
	prio := func(n int32) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.Priority = &n } }
	annotate := func(k, v string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[k] = v
		}
	}
	deletion := func(s string) func(*corev1.Pod) { return annotate(corev1.PodDeletionCost, s) }
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want float64
	}{
		{"plain", podOn("1"), 1},
		{"priority 2^25", podOn("1", prio(1<<25)), 2},
		{"system-cluster-critical is clamped", podOn("1", prio(2000000000)), 10},
		{"lowest priority is clamped", podOn("1", prio(math.MinInt32)), -10},
		{"deletion cost 2^27", podOn("1", deletion("134217728")), 2},
		{"negative deletion cost", podOn("1", deletion("-134217728")), 0},
		{"unreadable deletion cost", podOn("1", deletion("high")), 1},
		{"deletion cost beyond 32 bits", podOn("1", deletion("4294967296")), 1},
		{"karpenter.sh/disruption-cost", podOn("1", annotate(v1.AnnotationDisruptionCost, "268435456")), 3},
		{"disruption-cost before pod-deletion-cost", podOn("1", annotate(v1.AnnotationDisruptionCost, "-134217728"), annotate(corev1.PodDeletionCost, "134217728")), 0},
		{"an unreadable disruption-cost counts as unset", podOn("1", annotate(v1.AnnotationDisruptionCost, "1.5")), 1},
	} {
		if got := evictionCost(tc.pod); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	np := nodePool("p")
	n := node("n", np, types()[1], v1.CapacityTypeOnDemand)
	n.NodeClaim.CreationTimestamp = metav1.NewTime(t0.Add(-360 * time.Hour)) // half of 720h gone
	if got := disruptionCost(nil, n, []*corev1.Pod{podOn("1"), podOn("1")}, t0); got != 1 {
		t.Errorf("two pods at half the lifetime: %v, want 1", got)
	}
}

// TestConsolidationOrderAndBudgets: candidates are tried in upstream's
// order since v1.14 — price over rescheduleCost, the most saved per unit of
// disruption first — and multi-node consolidation searches only over the
// candidates the budget allows: six consolidatable nodes under a budget of
// two give a two-node command, the rest held back by the budget. A node
// whose pods cost nothing to evict is empty.
func TestConsolidationOrderAndBudgets(t *testing.T) {
	np := nodePool("p", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "2"}} })
	large := types()[2]
	var nodes []*Candidate
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		nodes = append(nodes, node(name, np, large, v1.CapacityTypeOnDemand, podOn("500m")))
	}
	cmd := only(t, Compute(context.Background(), cluster(np, nodes...), Options{}))
	if cmd.Method != MethodMultiNode || len(cmd.Candidates) != 2 {
		t.Fatalf("want a two-node multi-node command under a budget of 2, got %s", cmd)
	}
	// Equal ratios: the more expensive node first, then by name.
	if got := names(cmd.Candidates); got != "a,b" {
		t.Errorf("candidates %s, want a,b", got)
	}

	// a and b run pods of a higher priority (eviction cost 2: reschedule
	// cost 3 against 2), so they go last; f, near its expiry, no longer
	// goes first (the lifetime left weighs only a static pool's surplus).
	high := int32(1 << 25)
	nodes[0].Node.Pods[0].Spec.Priority = &high
	nodes[1].Node.Pods[0].Spec.Priority = &high
	nodes[5].NodeClaim.CreationTimestamp = metav1.NewTime(t0.Add(-700 * time.Hour))
	d := Compute(context.Background(), cluster(np, nodes...), Options{})
	cmd = only(t, d)
	if got := names(cmd.Candidates); got != "c,d" {
		t.Errorf("candidates %s, want c,d (the most saved per disruption)", got)
	}
	held := 0
	for _, b := range d.Blocked {
		if b.Reason.Code == BlockBudget && b.Reason.Budget == v1.DisruptionReasonUnderutilized {
			held++
			if b.ByBudget != v1.DisruptionReasonUnderutilized || b.NodePool != "p" {
				t.Errorf("a budget block says which budget: %+v", b)
			}
		}
	}
	if held != 4 {
		t.Errorf("%d nodes held back by the budget, want 4: %v", held, d.Blocked)
	}

	// e runs a pod whose eviction costs nothing (priority -2^25): e is
	// empty, and emptiness deletes it before consolidation looks.
	low := int32(-1 << 25)
	nodes[4].Node.Pods[0].Spec.Priority = &low
	cmd = only(t, Compute(context.Background(), cluster(np, nodes...), Options{}))
	if cmd.Method != MethodEmpty || names(cmd.Candidates) != "e" {
		t.Errorf("a node of pods that cost nothing to evict: got %s, want e deleted as empty", cmd)
	}
}

// TestConsolidationBounds: each consolidation method stops at its bound —
// a budget of simulations (a simulator's, deterministic) or the end of its
// context (a controller's time bounds) — and acts on what it found by then.
func TestConsolidationBounds(t *testing.T) {
	np := nodePool("p")
	// "full" comes first (same disruption cost, dearer) and cannot be
	// replaced by anything cheaper; "half" can, by a small node.
	full := node("full", np, types()[2], v1.CapacityTypeOnDemand, podOn("15"))
	half := node("half", np, types()[1], v1.CapacityTypeOnDemand, podOn("1"))
	single := func(ctx context.Context, opts Options) []*Command {
		p := newPass(ctx, cluster(np, full, half), opts)
		graceful, _ := p.eligible()
		return p.singleNode(graceful)
	}
	if cmds := single(context.Background(), Options{Simulations: 1}); len(cmds) != 0 {
		t.Fatalf("one simulation tries only full: got %s", cmds[0])
	}
	if cmds := single(context.Background(), Options{Simulations: 2}); len(cmds) != 1 || names(cmds[0].Candidates) != "half" {
		t.Fatalf("two simulations reach half: got %v", cmds)
	}
	if cmds := single(context.Background(), Options{}); len(cmds) != 1 {
		t.Fatalf("unbounded by work, bounded by time: got %v", cmds)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if cmds := single(done, Options{}); len(cmds) != 0 {
		t.Fatalf("an ended context stops the search: got %s", cmds[0])
	}
	if d := Compute(done, cluster(np, full, half), Options{}); len(d.Commands) != 0 {
		t.Fatalf("Compute with an ended context acts on nothing it would have to simulate: %s", d.Commands[0])
	}
}
