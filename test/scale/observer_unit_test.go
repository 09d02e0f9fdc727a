//go:build scale

package scale

import (
	"testing"
	"time"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

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
