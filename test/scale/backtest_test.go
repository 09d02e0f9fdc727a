//go:build scale

package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/replay"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
	"github.com/joiner-autoscaler/joiner/pkg/trace"
	"github.com/joiner-autoscaler/joiner/test/harness"
)

// startRecording records the cluster to dir/trace.gz until its
// backtest.
func startRecording(b *testing.B, cluster *harness.Cluster, dir string) *harness.Recording {
	b.Helper()
	r, err := harness.Record(cluster.Config, filepath.Join(dir, "trace.gz"))
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// backtest ends the recording and replays it in the simulator under the
// recorded NodePools with the autoscaler's decisions, writing
// dir/backtest.txt (and .html) and adding the error figures to the result.
func backtest(b *testing.B, r *harness.Recording, res *result, summary *strings.Builder, dir string, cfg config) {
	b.Helper()
	if err := r.Stop(); err != nil {
		b.Error(err)
		return
	}
	f, err := os.Open(r.Path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.NewReader(f, r.Path)
	if err != nil {
		b.Fatal(err)
	}
	rec, err := replay.Read(tr)
	if err != nil {
		b.Fatal(err)
	}
	decisions := provisioning.DecisionsJoiner
	if res.autoscaler == "karpenter" {
		decisions = provisioning.DecisionsKarpenter
	}
	bt, err := replay.RunBacktest(context.Background(), r.Path, rec, os.DirFS("."), ".", sim.Options{Policy: provisioning.Policy{Decisions: decisions}})
	if err != nil {
		b.Fatal(err)
	}
	var text strings.Builder
	bt.WriteSummary(&text)
	if err := os.WriteFile(filepath.Join(dir, "backtest.txt"), []byte(text.String()), 0o644); err != nil {
		b.Error(err)
	}
	e := bt.Errors
	res.add("backtest-node-count-mape-%", e.NodeCountMAPE)
	res.add("backtest-cost-error-%", e.CostError)
	res.add("backtest-pending-p50-diff-s", e.PendingP50Diff)
	fmt.Fprintf(summary, "\nbacktest of the run's recording (%s): node count MAPE %.1f %%, cost recorded $%.3f simulated $%.3f (%+.1f %%), pending p50 %+.1f s, p90 %+.1f s\n",
		r.Path, e.NodeCountMAPE, e.RecordedCostUSD, e.SimulatedCostUSD, e.CostError, e.PendingP50Diff, e.PendingP90Diff)
	if cfg.strict && cfg.backtestStrict {
		if e.CostError > 5 || e.CostError < -5 {
			b.Errorf("%s: the backtest's cost error is %+.1f %%, more than 5 %% (dir/backtest.txt)", res.autoscaler, e.CostError)
		}
		if e.NodeCountMAPE > 10 {
			b.Errorf("%s: the backtest's node count error is %.1f %%, more than 10 %% (dir/backtest.txt)", res.autoscaler, e.NodeCountMAPE)
		}
	}
}
