package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	appsv1 "k8s.io/api/apps/v1"
)

// scenarioDirs are the directories under examples/ with a scenario.yaml.
func scenarioDirs(t *testing.T) []string {
	var dirs []string
	root := filepath.Join("..", "..", "examples")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "scenario.yaml" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return err
	})
	if err != nil || len(dirs) < 3 {
		t.Fatalf("scenarios under examples/: %v %v", dirs, err)
	}
	return dirs
}

func runDir(t *testing.T, dir string) (*report.Report, []byte) {
	t.Helper()
	return runFS(t, os.DirFS(dir), ".", filepath.Base(dir))
}

// runFS loads and runs the scenario at dir in fsys; the report also as JSON.
func runFS(t *testing.T, fsys fs.FS, dir, name string) (*report.Report, []byte) {
	t.Helper()
	in, err := scenario.Load(fsys, dir, name)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), in, fsys, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return rep, b
}

func TestEveryExampleScenario(t *testing.T) {
	for _, dir := range scenarioDirs(t) {
		t.Run(dir, func(t *testing.T) {
			rep, b := runDir(t, dir)
			if rep.Nodes.TolerationViolations != 0 {
				t.Errorf("%d pods ran on nodes whose taints they do not tolerate (e.g. a GPU node without the toleration)", rep.Nodes.TolerationViolations)
			}
			if rep.DriftBudget.Violations != 0 {
				t.Errorf("drift exceeded its budget %d times", rep.DriftBudget.Violations)
			}
			for reason := range rep.Pods.NeverRanReason {
				// dra-gpu shows upstream's default: its device pods wait.
				if !strings.Contains(reason, "Dynamic Resource Allocation requirements") {
					t.Errorf("%d pods never ran: %v", rep.Pods.NeverRan, rep.Pods.NeverRanReason)
				}
			}
			for _, n := range rep.Notes {
				// No example has bare pods: a DaemonSet's drained pods
				// must not be mistaken for them.
				if strings.Contains(n, "bare pod") {
					t.Errorf("note about a bare pod in a scenario without any: %s", n)
				}
			}
			if rep.Cost.Total <= 0 || rep.Nodes.Launched == 0 || rep.Pods.Ran == 0 {
				t.Errorf("nothing happened: cost %v, nodes %d, pods %d", rep.Cost.Total, rep.Nodes.Launched, rep.Pods.Ran)
			}
			// The HPA follows the load: replicas rise and fall with it.
			var load, replicas []float64
			for _, s := range rep.Timeline {
				if l, ok := s.Load["api-server"]; ok {
					load = append(load, l)
					replicas = append(replicas, float64(s.Replicas["api-server"]))
				}
			}
			if r := correlation(load, replicas); len(load) > 0 && r < 0.8 {
				t.Errorf("api-server replicas follow the load poorly: correlation %.2f", r)
			}
			// Same scenario, same seed: the same bytes.
			if _, again := runDir(t, dir); !bytes.Equal(b, again) {
				t.Error("two runs of the same scenario differ")
			}
		})
	}
}

func TestDefaultScenarioShowsDrift(t *testing.T) {
	rep, _ := runDir(t, filepath.Join("..", "..", "examples", "scenarios", "default"))
	drifted := 0
	for _, d := range rep.Disruptions {
		if d.Reason == "Drifted" {
			drifted += d.Count
		}
	}
	if drifted == 0 {
		t.Error("the mid-run AMI change must drift nodes")
	}
	// Weekday window from 09:00: general drifts at 10 % — one node at a time.
	if rep.DriftBudget.MaxConcurrent > 1 {
		t.Errorf("drift ran %d nodes at once in the 10%% window", rep.DriftBudget.MaxConcurrent)
	}
	if rep.SpotInterruptions == 0 || rep.CloudErrors["CreateFleet/InsufficientInstanceCapacity"] == 0 {
		t.Errorf("faults were configured: interruptions %d, cloud errors %v", rep.SpotInterruptions, rep.CloudErrors)
	}
	// g4dn.xlarge has no capacity for the first 3 hours: GPU pods ran on g5.
	g5 := false
	for _, nh := range rep.NodeHours {
		g5 = g5 || nh.InstanceType == "g5.xlarge"
	}
	if !g5 {
		t.Error("insufficient g4dn capacity must fall back to g5")
	}
}

func correlation(a, b []float64) float64 {
	if len(a) < 2 || len(a) != len(b) {
		return 0
	}
	var ma, mb float64
	for i := range a {
		ma += a[i]
		mb += b[i]
	}
	ma /= float64(len(a))
	mb /= float64(len(b))
	var cov, va, vb float64
	for i := range a {
		cov += (a[i] - ma) * (b[i] - mb)
		va += (a[i] - ma) * (a[i] - ma)
		vb += (b[i] - mb) * (b[i] - mb)
	}
	if va == 0 || vb == 0 {
		return 0
	}
	return cov / math.Sqrt(va*vb)
}

// TestHeadroomStartsServicePodsAtOnce: with placeholder pods of negative
// priority, the API's new pods preempt them and start at once; without,
// they wait for nodes. The placeholders go pending and bring nodes early.
func TestHeadroomStartsServicePodsAtOnce(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "scenarios", "overprovisioning")
	fsys := os.DirFS(dir)
	run := func(headroom bool) *report.Report {
		in, err := scenario.Load(fsys, ".", "overprovisioning")
		if err != nil {
			t.Fatal(err)
		}
		if !headroom {
			var keep []*appsv1.Deployment
			for _, d := range in.Deployments {
				if d.Name != "headroom" {
					keep = append(keep, d)
				}
			}
			in.Deployments = keep
		}
		rep, err := Run(context.Background(), in, fsys, ".", Options{})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	with, without := run(true), run(false)
	if with.Preemptions.Preemptors == 0 || with.Preemptions.Victims == 0 {
		t.Fatalf("no preemption with headroom: %+v", with.Preemptions)
	}
	if without.Preemptions.Preemptors != 0 {
		t.Errorf("preemption without placeholders: %+v", without.Preemptions)
	}
	api := "Deployment/api-server"
	w, wo := with.Pods.ByWorkload[api], without.Pods.ByWorkload[api]
	if w.P90 == nil || wo.P90 == nil {
		t.Fatalf("api-server pods did not run: with headroom %+v, without %+v", w, wo)
	}
	if *w.P90 >= *wo.P90 || *w.P90 > 5 {
		t.Errorf("api-server p90 startup with headroom %.0fs, without %.0fs: headroom should make it near zero", *w.P90, *wo.P90)
	}
	if with.Cost.Total <= without.Cost.Total {
		t.Errorf("headroom should cost something: $%.2f with, $%.2f without", with.Cost.Total, without.Cost.Total)
	}
}
