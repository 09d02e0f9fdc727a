package replay

import (
	"bytes"
	"context"
	"io/fs"
	"math"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	"github.com/joiner-autoscaler/joiner/examples"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

// recordSimulation runs a bundled scenario with the run written as a trace.
func recordSimulation(t testing.TB, name string) (*report.Report, []byte) {
	t.Helper()
	fsys, dir := fs.FS(examples.Scenarios), "scenarios/"+name
	in, err := scenario.Load(fsys, dir, name)
	if err != nil {
		t.Fatal(err)
	}
	in.Scenario.Spec.Faults = scenario.Faults{}
	var buf bytes.Buffer
	w, err := trace.NewWriter(&buf, trace.Header{Started: in.Scenario.Spec.Start, Server: "simulation of " + name})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(context.Background(), in, fsys, dir, sim.Options{Trace: w})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(rep.End); err != nil {
		t.Fatal(err)
	}
	return rep, buf.Bytes()
}

// The simulator's own run of each bundled scenario, recorded as `joiner
// record` would have recorded it and backtested: with the same model on
// both sides, what is left is the replay's own error — what it does not
// carry over from a recording. The faults are off (a replay does not know
// a run's random interruptions, capacity shortages or launch latencies).
// Measured: every scenario but the default replays exactly; the default
// (HPAs, KEDA, a CronJob, an AMI change, budgets) is within 1.9 % of the
// node count and 3.5 % of the cost, its pods named and so tie-broken
// differently.
func TestBacktestOfASimulatedRun(t *testing.T) {
	for _, name := range []string{"default", "gpu-inference-limits", "node-overlays", "od-spot-split", "overprovisioning", "stateful-zones", "us-west-2"} {
		t.Run(name, func(t *testing.T) {
			orig, b := recordSimulation(t, name)
			rec := readTrace(t, b)
			bt, err := RunBacktest(context.Background(), name, rec, examples.Scenarios, "scenarios/"+name, sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			e := bt.Errors
			t.Logf("%s: %d nodes recorded; node MAPE %.2f %%, cost %.2f → %.2f (%+.2f %%; the run's own $%.2f), pending p50 %+.1f s p90 %+.1f s",
				name, len(rec.Nodes), e.NodeCountMAPE, e.RecordedCostUSD, e.SimulatedCostUSD, e.CostError, orig.Cost.Total, e.PendingP50Diff, e.PendingP90Diff)
			if math.Abs(e.RecordedCostUSD-orig.Cost.Total) > 0.01 {
				t.Errorf("the recorded nodes cost $%v, the run that made them $%v: the backtest prices nodes otherwise than the run", e.RecordedCostUSD, orig.Cost.Total)
			}
			if e.NodeCountMAPE > 2.5 || math.Abs(e.CostError) > 4 {
				t.Errorf("node count error %.2f %% (at most 2.5), cost error %+.2f %% (at most 4)",
					e.NodeCountMAPE, e.CostError)
			}
		})
	}
}
