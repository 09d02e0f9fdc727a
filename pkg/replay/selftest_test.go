package replay

import (
	"bytes"
	"context"
	"io/fs"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	"github.com/joiner-autoscaler/joiner/examples"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

// recordSimulation runs a bundled scenario under faults with the run
// written as a trace.
func recordSimulation(t testing.TB, name string, faults scenario.Faults) (*report.Report, []byte) {
	t.Helper()
	fsys, dir := fs.FS(examples.Scenarios), "scenarios/"+name
	in, err := scenario.Load(fsys, dir, name)
	if err != nil {
		t.Fatal(err)
	}
	in.Scenario.Spec.Faults = faults
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
			orig, b := recordSimulation(t, name, scenario.Faults{})
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

// TestBacktestReplaysInterruptions: a simulated run whose spot nodes are
// interrupted, recorded — the trace holds each interruption as the
// autoscaler's Event on its NodeClaim — replays each one at its time on a
// node of the same offering launched closest to the recorded one, and its
// backtest stays as close as a run without them.
func TestBacktestReplaysInterruptions(t *testing.T) {
	const name = "od-spot-split"
	orig, b := recordSimulation(t, name, scenario.Faults{SpotInterruptionsPerNodeHour: 0.5})
	if orig.SpotInterruptions < 2 {
		t.Fatalf("%d spot interruptions in the run: the test needs some", orig.SpotInterruptions)
	}
	rec := readTrace(t, b)
	if got := len(rec.Replay.Interruptions); got != orig.SpotInterruptions {
		t.Errorf("%d interruptions read from the trace, the run had %d", got, orig.SpotInterruptions)
	}
	for _, ri := range rec.Replay.Interruptions {
		if ri.Reason != "SpotInterruption" || ri.CapacityType != "spot" || ri.InstanceType == "" || ri.Zone == "" || ri.At <= 0 {
			t.Errorf("interruption %+v: want a SpotInterruption of a spot offering, after the start", ri)
		}
	}
	fsys, dir := fs.FS(examples.Scenarios), "scenarios/"+name
	in, err := rec.Input(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(context.Background(), in, fsys, dir, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Each took the node of its offering launched closest to the recorded
	// one — here the recorded node itself, the replay being the run's own.
	if rep.SpotInterruptions != orig.SpotInterruptions {
		t.Errorf("the replay interrupted %d nodes, the recording %d (notes: %v)", rep.SpotInterruptions, orig.SpotInterruptions, rep.Notes)
	}
	bt, err := RunBacktest(context.Background(), name, rec, fsys, dir, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := bt.Errors
	t.Logf("%s with %d interruptions: node MAPE %.2f %%, cost %.2f → %.2f (%+.2f %%)", name, orig.SpotInterruptions, e.NodeCountMAPE, e.RecordedCostUSD, e.SimulatedCostUSD, e.CostError)
	if e.NodeCountMAPE > 1 || math.Abs(e.CostError) > 1 {
		t.Errorf("node count error %.2f %% (at most 1), cost error %+.2f %% (at most 1)", e.NodeCountMAPE, e.CostError)
	}

	// An interruption of an offering the simulated cluster does not run is
	// named, not dropped.
	in.Replay.Interruptions = []scenario.ReplayInterruption{{At: time.Hour, Reason: "SpotInterrupted", NodeClaim: "gone-1",
		InstanceType: "x9.huge", Zone: "us-east-1a", CapacityType: "spot"}}
	rep, err = sim.Run(context.Background(), in, fsys, dir, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	named := slices.ContainsFunc(rep.Notes, func(n string) bool {
		return strings.Contains(n, "SpotInterrupted of NodeClaim gone-1 (x9.huge spot in us-east-1a) is not replayed")
	})
	if rep.SpotInterruptions != 0 || !named {
		t.Errorf("an unmatched interruption: %d interruptions, notes %v; want none, and a note naming it", rep.SpotInterruptions, rep.Notes)
	}
}
