package sim_test

import (
	"bytes"
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/replay"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

// BenchmarkReplayWeek20k: issue 27's speed goal — a 7-day trace of a
// 20,000-pod cluster (BenchmarkSimulateWeek20k's run, recorded through
// Options.Trace) read and replayed (read-wall-s, replay-wall-s) and
// backtested against itself (backtest-wall-s: a second replay, recorded,
// and the comparison). Run it alone:
//
//	go test -run '^$' -bench BenchmarkReplayWeek20k -benchtime 1x ./pkg/sim/
func BenchmarkReplayWeek20k(b *testing.B) {
	fsys := sim.WeekScenario()
	in, err := scenario.Load(fsys, "sc", "week-20k")
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := trace.NewWriter(&buf, trace.Header{Started: in.Scenario.Spec.Start})
	if err != nil {
		b.Fatal(err)
	}
	orig, err := sim.Run(context.Background(), in, fsys, "sc", sim.Options{Trace: w})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Close(orig.End); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var readWall, replayWall, backtestWall time.Duration
	var bt *replay.Backtest
	for i := 0; i < b.N; i++ {
		start := time.Now()
		r, err := trace.NewReader(bytes.NewReader(buf.Bytes()), "week-20k.trace.gz")
		if err != nil {
			b.Fatal(err)
		}
		rec, err := replay.Read(r)
		if err != nil {
			b.Fatal(err)
		}
		readWall += time.Since(start)
		start = time.Now()
		rin, err := rec.Input("week-20k.trace.gz", nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sim.Run(context.Background(), rin, fsys, "sc", sim.Options{}); err != nil {
			b.Fatal(err)
		}
		replayWall += time.Since(start)
		start = time.Now()
		if bt, err = replay.RunBacktest(context.Background(), "week-20k.trace.gz", rec, fsys, "sc", sim.Options{}); err != nil {
			b.Fatal(err)
		}
		backtestWall += time.Since(start)
	}
	n := time.Duration(b.N)
	b.ReportMetric((readWall / n).Seconds(), "read-wall-s")
	b.ReportMetric((replayWall / n).Seconds(), "replay-wall-s")
	b.ReportMetric((backtestWall / n).Seconds(), "backtest-wall-s")
	b.ReportMetric(float64(len(bt.Recorded)), "points")
	b.ReportMetric(float64(buf.Len())/(1<<20), "trace-MiB")
	b.ReportMetric(bt.Errors.NodeCountMAPE, "node-mape-%")
	b.ReportMetric(bt.Errors.CostError, "cost-error-%")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.Sys)/(1<<20), "sys-MiB")
}
