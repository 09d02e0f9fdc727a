//go:build scale

package scale

import (
	"os"
	"reflect"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// TestScenarioIsTheBenchmarksWorkload: test/scale/scenario is this
// benchmark's NodePool and Deployments, so what the simulator says of it
// (churn at a constant workload, how long a scale-in takes to settle) is
// about the same workload the benchmark runs.
func TestScenarioIsTheBenchmarksWorkload(t *testing.T) {
	in, err := scenario.Load(os.DirFS("scenario"), ".", "scale1000")
	if err != nil {
		t.Fatal(err)
	}
	want := nodePool()
	if len(in.NodePools) != 1 {
		t.Fatalf("%d NodePools, want 1", len(in.NodePools))
	}
	got := in.NodePools[0]
	if !reflect.DeepEqual(got.Spec.Template.Spec.Requirements, want.Spec.Template.Spec.Requirements) ||
		got.Spec.Disruption.ConsolidationPolicy != want.Spec.Disruption.ConsolidationPolicy ||
		got.Spec.Disruption.ConsolidateAfter.String() != want.Spec.Disruption.ConsolidateAfter.String() ||
		!reflect.DeepEqual(got.Spec.Disruption.Budgets, want.Spec.Disruption.Budgets) {
		t.Errorf("the scenario's NodePool differs from the benchmark's:\n%+v\n%+v", got.Spec, want.Spec)
	}
	byName := map[string]bool{}
	for _, d := range in.Deployments {
		byName[d.Name] = true
		var s *size
		for i := range sizes {
			if sizes[i].name == d.Name {
				s = &sizes[i]
			}
		}
		if s == nil {
			t.Errorf("Deployment %s is not one of the benchmark's", d.Name)
			continue
		}
		w := deployment(*s).Spec.Template.Spec
		g := d.Spec.Template.Spec
		if !reflect.DeepEqual(g.Containers[0].Resources.Requests, w.Containers[0].Resources.Requests) ||
			len(g.TopologySpreadConstraints) != len(w.TopologySpreadConstraints) {
			t.Errorf("Deployment %s: requests %v, %d spread constraints; the benchmark's %v, %d", d.Name,
				g.Containers[0].Resources.Requests, len(g.TopologySpreadConstraints), w.Containers[0].Resources.Requests, len(w.TopologySpreadConstraints))
		}
	}
	if len(byName) != len(sizes) {
		t.Errorf("Deployments %v, want the benchmark's %d", byName, len(sizes))
	}
}
