package sim

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	"github.com/joiner-autoscaler/joiner/examples"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// benchmarkRun times the run alone (run-wall-s, and simulated seconds per
// wall second of it) and, apart, loading the scenario (load-wall-s).
func benchmarkRun(b *testing.B, load func() (*scenario.Input, error), fsys func() any) {
	var rep *report.Report
	var simulated, loading time.Duration
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		loadStart := time.Now()
		in, err := load()
		if err != nil {
			b.Fatal(err)
		}
		loading += time.Since(loadStart)
		b.StartTimer()
		switch f := fsys().(type) {
		case fstest.MapFS:
			rep, err = Run(context.Background(), in, f, "sc", Options{})
		default:
			rep, err = Run(context.Background(), in, examples.Scenarios, "scenarios/default", Options{})
		}
		if err != nil {
			b.Fatal(err)
		}
		simulated = rep.End.Sub(rep.Start)
	}
	wall := (time.Since(start) - loading) / time.Duration(b.N)
	b.ReportMetric(simulated.Seconds()/wall.Seconds(), "sim-s/wall-s")
	b.ReportMetric(wall.Seconds(), "run-wall-s")
	b.ReportMetric(loading.Seconds()/float64(b.N), "load-wall-s")
	b.ReportMetric(float64(rep.Pods.Ran), "pods-ran")
	b.ReportMetric(float64(rep.Nodes.Launched), "nodes")
	peak := 0
	for _, s := range rep.Timeline {
		n := 0
		for _, c := range s.NodesByPool {
			n += c
		}
		peak = max(peak, n)
	}
	b.ReportMetric(float64(peak), "peak-nodes")
	// What the Go runtime took from the OS over the run: an upper bound
	// of its peak memory (the heap is not given back while it runs).
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.Sys)/(1<<20), "sys-MiB")

	b.ReportMetric(float64(len(rep.DisruptionEvents)), "disruptions")
	b.ReportMetric(rep.Cost.Total, "usd")
}

// BenchmarkSimulateDefault: the bundled scenario, 24 simulated hours.
func BenchmarkSimulateDefault(b *testing.B) {
	benchmarkRun(b, func() (*scenario.Input, error) {
		return scenario.Load(examples.Scenarios, "scenarios/default", "default")
	}, func() any { return nil })
}

// BenchmarkSimulateWeek20k: 7 simulated days, 20,000 pods on about 1,000
// nodes, with a diurnal HPA on a fifth of the deployments.
func BenchmarkSimulateWeek20k(b *testing.B) {
	fsys := weekScenario()
	benchmarkRun(b, func() (*scenario.Input, error) { return scenario.Load(fsys, "sc", "week-20k") }, func() any { return fsys })
}

func weekScenario() fstest.MapFS { return scaleScenario("168h", 100) }

// BenchmarkSimulateMonth100k: issue 15's large run — a 30-day month of
// 100,000 pods (500 Deployments of 200, a fifth of them under diurnal
// HPAs) on about 5,000 m6i.4xlarge nodes. Run it alone:
//
//	GOMEMLIMIT=6GiB go test -run '^$' -bench 'BenchmarkSimulateMonth100k' -benchtime 1x -timeout 40m ./pkg/sim/
//
// (192 s and 5.6 GiB on 2 cores; 9.9 GiB without GOMEMLIMIT)
func BenchmarkSimulateMonth100k(b *testing.B) {
	fsys := scaleScenario("720h", 500)
	benchmarkRun(b, func() (*scenario.Input, error) { return scenario.Load(fsys, "sc", "month-100k") }, func() any { return fsys })
}

// scaleScenario is apps Deployments of 200 pods (a fifth of them scaled
// by diurnal HPAs) on one on-demand m6i.4xlarge pool, for duration.
func scaleScenario(duration string, apps int) fstest.MapFS {
	var w strings.Builder
	var loads strings.Builder
	for i := 0; i < apps; i++ {
		fmt.Fprintf(&w, `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app-%[1]d}
spec:
  replicas: 200
  selector: {matchLabels: {app: app-%[1]d}}
  template:
    metadata: {labels: {app: app-%[1]d}}
    spec:
      containers: [{name: c, image: x, resources: {requests: {cpu: 700m, memory: 1Gi}}}]
`, i)
		if i%5 == 0 {
			fmt.Fprintf(&w, `---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: app-%[1]d}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: app-%[1]d}
  minReplicas: 150
  maxReplicas: 250
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}}]
`, i)
			fmt.Fprintf(&loads, "    - {target: {kind: HorizontalPodAutoscaler, name: app-%d}, pattern: diurnal, base: 7000, peak: 12000, peakHour: 15, cpuPerUnit: 10m}\n", i)
		}
	}
	pool := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m6i.4xlarge]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 10m
    budgets: [{nodes: "10%"}]
`
	scenarioYAML := "apiVersion: joiner.dev/v1alpha1\nkind: Scenario\nmetadata: {name: week}\nspec:\n  start: \"2026-11-30T00:00:00Z\"\n  duration: " + duration + "\n  seed: 7\n  loads:\n" + loads.String()
	return fstest.MapFS{
		"sc/pool.yaml":     {Data: []byte(pool)},
		"sc/apps.yaml":     {Data: []byte(w.String())},
		"sc/scenario.yaml": {Data: []byte(scenarioYAML)},
	}
}

// BenchmarkSimulateDay20k: the first day of the week run, for profiling.
func BenchmarkSimulateDay20k(b *testing.B) {
	fsys := scaleScenario("24h", 100)
	benchmarkRun(b, func() (*scenario.Input, error) { return scenario.Load(fsys, "sc", "week-20k") }, func() any { return fsys })
}
