//go:build scale

package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/replay"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
	"github.com/joiner-autoscaler/joiner/pkg/trace"
	"github.com/joiner-autoscaler/joiner/test/harness"
)

// recording is `joiner record`'s recorder, in-process, over one run.
type recording struct {
	path string
	stop context.CancelFunc
	done chan error
}

// startRecording records the cluster to dir/trace.gz until stopped.
func startRecording(ctx context.Context, b *testing.B, cluster *harness.Cluster, dir string) *recording {
	b.Helper()
	scheme, err := trace.Scheme()
	if err != nil {
		b.Fatal(err)
	}
	wc, err := client.NewWithWatch(cluster.Config, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "trace.gz")
	f := createFile(b, path)
	rec, err := trace.Start(ctx, wc, f, trace.Options{Server: cluster.Config.Host})
	if err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(ctx)
	r := &recording{path: path, stop: stop, done: make(chan error, 1)}
	go func() { r.done <- rec.Run(ctx) }()
	return r
}

// backtest ends the recording and replays it in the simulator under the
// recorded NodePools with the autoscaler's decisions, writing
// dir/backtest.txt (and .html) and adding the error figures to the result.
func (r *recording) backtest(b *testing.B, res *result, summary *strings.Builder, dir string, cfg config) {
	b.Helper()
	r.stop()
	if err := <-r.done; err != nil {
		b.Errorf("recording %s: %v", r.path, err)
		return
	}
	f, err := os.Open(r.path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	tr, err := trace.NewReader(f, r.path)
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
	bt, err := replay.RunBacktest(context.Background(), r.path, rec, os.DirFS("."), ".", sim.Options{Policy: provisioning.Policy{Decisions: decisions}})
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
		r.path, e.NodeCountMAPE, e.RecordedCostUSD, e.SimulatedCostUSD, e.CostError, e.PendingP50Diff, e.PendingP90Diff)
	if cfg.strict && cfg.backtestStrict {
		if e.CostError > 5 || e.CostError < -5 {
			b.Errorf("%s: the backtest's cost error is %+.1f %%, more than 5 %% (dir/backtest.txt)", res.autoscaler, e.CostError)
		}
		if e.NodeCountMAPE > 10 {
			b.Errorf("%s: the backtest's node count error is %.1f %%, more than 10 %% (dir/backtest.txt)", res.autoscaler, e.NodeCountMAPE)
		}
	}
}
