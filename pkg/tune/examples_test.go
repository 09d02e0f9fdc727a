package tune

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/joiner-autoscaler/joiner/examples"
)

// TestTunedExample: examples/tune/space.yaml over the bundled scenario
// chooses a variant cheaper than the bundled NodePools at an equal or
// better p99 startup, on the mean over the seeds — what the README shows.
func TestTunedExample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bundled scenario a few dozen times")
	}
	file := filepath.Join("..", "..", "examples", "tune", "space.yaml")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSpace(file, b)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(bundled(t), examples.Scenarios, "scenarios/default", s)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Search(context.Background(), Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	c, base := res.Chose(), res.Baseline()
	if c == nil || base == nil || c.Baseline {
		t.Fatalf("chosen %+v, baseline %+v: want a variant chosen over the baseline", c, base)
	}
	if c.Mean.CostUSD >= base.Mean.CostUSD || c.Mean.P99StartupSeconds > base.Mean.P99StartupSeconds {
		t.Errorf("variant %d: cost %v, p99 %v; the bundled NodePools: cost %v, p99 %v", c.Index, c.Mean.CostUSD, c.Mean.P99StartupSeconds, base.Mean.CostUSD, base.Mean.P99StartupSeconds)
	}
}
