package tune

import (
	"context"
	"runtime"
	"testing"
)

// bench100 is a space of exactly 100 variants over the bundled scenario.
const bench100 = header + `spec:
  nodePools:
    - name: general
      requirements:
        - key: karpenter.sh/capacity-type
          values: [[on-demand], [spot, on-demand]]
        - key: node.kubernetes.io/instance-type
          values:
            - [m6i.xlarge, m6i.2xlarge, m6i.4xlarge]
            - [m6i.xlarge, m6i.2xlarge, m6i.4xlarge, m7i.xlarge, m7i.2xlarge, m6a.xlarge, m6a.2xlarge]
      consolidateAfter: [30s, 1m, 5m, 15m, 1h]
    - name: spot
      consolidateAfter: [30s, 1m, 2m, 5m, 15m]
  search: {maxVariants: 100, seeds: 1}
`

// BenchmarkTune100Variants: 100 variants of the bundled scenario (24
// simulated hours each) and the baseline, on a worker per CPU.
func BenchmarkTune100Variants(b *testing.B) {
	p := planOf(b, bench100)
	if n := p.Size(); n != 100 {
		b.Fatalf("the space has %d variants, want 100", n)
	}
	b.ResetTimer()
	var runs int
	for b.Loop() {
		res, err := p.Search(context.Background(), Options{Workers: runtime.NumCPU()})
		if err != nil {
			b.Fatal(err)
		}
		runs += len(res.Variants)
	}
	wall := b.Elapsed().Seconds()
	b.ReportMetric(float64(runs)/wall, "variants/s")
	b.ReportMetric(float64(runs)*p.In.Scenario.Spec.Duration.Seconds()/wall, "simulated-s/wall-s")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.Sys)/(1<<20), "sys-MiB") // what the process took from the OS: a bound on its peak
}
