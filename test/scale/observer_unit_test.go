//go:build scale

package scale

import (
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// TestBudgetCount: the nodes a budget is taken of and those disrupting,
// counted as upstream's BuildDisruptionBudgetMapping does. The last case
// is the 5,000-pod drift of session 29: a NodeClaim still finalizing
// after its Node was deleted counts for neither.
func TestBudgetCount(t *testing.T) {
	now := metav1.Now()
	node := func(name string, ready, initialized, tainted bool) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		if initialized {
			n.Labels[v1.LabelNodeInitialized] = "true"
		}
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}
		if tainted {
			n.Spec.Taints = []corev1.Taint{v1.DisruptedTaint}
		}
		return n
	}
	claim := func(name string, deleting bool, conds ...string) v1.NodeClaim {
		nc := v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		nc.Status.NodeName = name
		if deleting {
			nc.DeletionTimestamp = &now
		}
		for _, c := range conds {
			nc.Status.Conditions = append(nc.Status.Conditions, v1.Condition{Type: c, Status: metav1.ConditionTrue})
		}
		return nc
	}
	for _, tc := range []struct {
		name                  string
		claims                []v1.NodeClaim
		nodes                 []corev1.Node
		total, wantDisrupting int
	}{
		{"ready and untouched", []v1.NodeClaim{claim("a", false)}, []corev1.Node{node("a", true, true, false)}, 1, 0},
		{"tainted", []v1.NodeClaim{claim("a", false)}, []corev1.Node{node("a", true, true, true)}, 1, 1},
		{"deleting", []v1.NodeClaim{claim("a", true)}, []corev1.Node{node("a", true, true, false)}, 1, 1},
		{"not ready", []v1.NodeClaim{claim("a", false)}, []corev1.Node{node("a", false, true, false)}, 1, 1},
		{"not initialized", []v1.NodeClaim{claim("a", false)}, []corev1.Node{node("a", true, false, false)}, 0, 0},
		{"not registered", []v1.NodeClaim{claim("a", false)}, nil, 0, 0},
		{"instance terminating", []v1.NodeClaim{claim("a", true, "InstanceTerminating")}, []corev1.Node{node("a", true, true, true)}, 0, 0},
		{"node gone, claim finalizing", []v1.NodeClaim{claim("a", true, v1.ConditionInitialized), claim("b", false, v1.ConditionInitialized)},
			[]corev1.Node{node("b", true, true, true)}, 1, 1},
	} {
		total, disrupting := budgetCount(tc.claims, tc.nodes)
		if total != tc.total || disrupting != tc.wantDisrupting {
			t.Errorf("%s: %d of %d disrupting, want %d of %d", tc.name, disrupting, total, tc.wantDisrupting, tc.total)
		}
	}
}

func TestAllowedDisruptions(t *testing.T) {
	pool := func(budgets ...string) *v1.NodePool {
		np := &v1.NodePool{}
		for _, b := range budgets {
			np.Spec.Disruption.Budgets = append(np.Spec.Disruption.Budgets, v1.Budget{Nodes: b})
		}
		return np
	}
	for _, tc := range []struct {
		np          *v1.NodePool
		initialized int
		want        int
	}{
		{pool("10%"), 0, 0},
		{pool("10%"), 1, 1}, // rounded up, as upstream
		{pool("10%"), 10, 1},
		{pool("10%"), 11, 2},
		{pool("10%", "3"), 50, 3}, // the least
		{pool(), 25, 3},           // none: the default 10 %
	} {
		if got := allowedDisruptions(tc.np, tc.initialized); got != tc.want {
			t.Errorf("budgets %v of %d nodes: %d allowed, want %d", tc.np.Spec.Disruption.Budgets, tc.initialized, got, tc.want)
		}
	}
}

func TestBursts(t *testing.T) {
	t0 := time.Now()
	at := func(s ...int) []time.Time {
		var out []time.Time
		for _, v := range s {
			out = append(out, t0.Add(time.Duration(v)*time.Second))
		}
		return out
	}
	for _, tc := range []struct {
		changes []time.Time
		want    int
	}{
		{nil, 0},
		{at(0), 1},
		{at(0, 10, 25, 50), 1},
		{at(100, 0, 10), 2},
	} {
		if got := bursts(tc.changes, 30*time.Second); got != tc.want {
			t.Errorf("bursts(%v) = %d, want %d", tc.changes, got, tc.want)
		}
	}
}

// TestFewestRounds: a budget of 10 % (rounded up) takes 21 nodes to 6 in
// nine rounds — 3, 2, 2, 2, 2, then one a round at ten or fewer.
func TestFewestRounds(t *testing.T) {
	pool := func(budget string) *v1.NodePool {
		np := &v1.NodePool{}
		np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: budget}}
		return np
	}
	for _, tc := range []struct {
		budget            string
		nodes, left, want int
	}{
		{"10%", 21, 6, 9},
		{"10%", 21, 10, 5},
		{"10%", 10, 7, 3},
		{"10%", 100, 30, 11},
		{"10%", 6, 6, 0},
		{"100%", 21, 6, 1},
		{"0", 21, 6, -1},
	} {
		if got := fewestRounds(pool(tc.budget), tc.nodes, tc.left); got != tc.want {
			t.Errorf("budget %s, %d nodes to %d: %d rounds, want %d", tc.budget, tc.nodes, tc.left, got, tc.want)
		}
	}
}

// TestSpend: a phase's cost in a window after it began — each $/h until
// the next snapshot, the last one's to the window's end, nothing past it.
func TestSpend(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	ph := &phase{start: t0, costs: []costAt{
		{t0, 36},                       // 10 min at $36/h until the next...
		{t0.Add(10 * time.Minute), 12}, // ...then $12/h
	}}
	for _, c := range []struct {
		window time.Duration
		want   float64
	}{
		{5 * time.Minute, 3},      // inside the first snapshot's span
		{10 * time.Minute, 6},     // exactly to the second
		{40 * time.Minute, 6 + 6}, // the last $/h carried to the end
		{0, 0},
	} {
		if got := ph.spend(c.window); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("spend(%s) = %v, want %v", c.window, got, c.want)
		}
	}
	if got := (&phase{start: t0}).spend(time.Hour); got != 0 {
		t.Errorf("no snapshot: spend = %v, want 0", got)
	}
}
