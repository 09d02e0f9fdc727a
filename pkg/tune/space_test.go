package tune

import (
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/examples"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

const header = "apiVersion: joiner.dev/v1alpha1\nkind: TuningSpace\nmetadata: {name: t}\n"

// TestSpaceErrors: every problem names the file, the line, the field and
// the fix.
func TestSpaceErrors(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       []string
	}{
		{"wrong kind", "apiVersion: joiner.dev/v1alpha1\nkind: Scenario\nspec: {}\n",
			[]string{"space.yaml:2:", "kind:", "kind: TuningSpace"}},
		{"unknown field", header + "spec:\n  nodePools:\n    - name: general\n      consolidateAftr: [1m]\n",
			[]string{"space.yaml:", "consolidateAftr", "the fields of spec"}},
		{"no knobs", header + "spec: {objectives: [cost]}\n",
			[]string{"space.yaml:4:", "spec: the space has no knobs", "add spec.nodePools"}},
		{"bad key", header + "spec:\n  nodePools:\n    - name: general\n      requirements:\n        - key: topology.kubernetes.io/zone\n          values: [[a]]\n",
			[]string{"space.yaml:8:", "spec.nodePools[0].requirements[0].key", "not a key the space can vary", "karpenter.k8s.aws/instance-family"}},
		{"bad policy", header + "spec:\n  nodePools:\n    - name: general\n      consolidationPolicy:\n        - WhenEmpty\n        - Sometimes\n",
			[]string{"space.yaml:9:", "spec.nodePools[0].consolidationPolicy[1]", `"Sometimes"`, "use WhenEmpty, WhenEmptyOrUnderutilized or Balanced"}},
		{"bad duration", header + "spec:\n  nodePools:\n    - name: general\n      consolidateAfter: [5 minutes]\n",
			[]string{"space.yaml:7:", "spec.nodePools[0].consolidateAfter[0]", "not a duration", `"Never"`}},
		{"empty alternatives", header + "spec:\n  nodePools:\n    - name: general\n      weight: []\n",
			[]string{"space.yaml:7:", "spec.nodePools[0].weight", "no alternatives"}},
		{"weight range", header + "spec:\n  nodePools:\n    - name: general\n      weight: [0]\n",
			[]string{"space.yaml:7:", "spec.nodePools[0].weight[0]", "1 to 100"}},
		{"bad metric", header + "spec:\n  nodePools:\n    - {name: general, weight: [5]}\n  objectives: [cost, latency]\n",
			[]string{"space.yaml:7:", "spec.objectives[1]", `"latency" is not a metric`, "use cost, p99Startup"}},
		{"bad max", header + "spec:\n  nodePools:\n    - {name: general, weight: [5]}\n  constraints:\n    - {metric: podsNeverRan, max: none}\n",
			[]string{"space.yaml:8:", "spec.constraints[0].max", "a number in the metric's unit"}},
		{"bad sampler", header + "spec:\n  nodePools:\n    - {name: general, weight: [5]}\n  search: {sampler: sobol}\n",
			[]string{"space.yaml:7:", "spec.search.sampler", "use latinHypercube or random"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSpace("space.yaml", []byte(tc.spec))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func bundled(t testing.TB) *scenario.Input {
	t.Helper()
	in, err := scenario.Load(examples.Scenarios, "scenarios/default", "default")
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestSpaceAgainstScenario: names the scenario lacks, and alternatives the
// API server would refuse, are pointed at in the space file.
func TestSpaceAgainstScenario(t *testing.T) {
	in := bundled(t)
	for _, tc := range []struct {
		name, spec string
		want       []string
	}{
		{"unknown pool", header + "spec:\n  nodePools:\n    - {name: generl, weight: [5]}\n",
			[]string{"space.yaml:6:", "spec.nodePools[0].name", `no NodePool "generl"`, "general, gpu, spot"}},
		{"unknown hpa", header + "spec:\n  workloads:\n    - {hpa: web, targetUtilization: [50]}\n",
			[]string{"space.yaml:6:", "spec.workloads[0].hpa", "no HorizontalPodAutoscaler default/web"}},
		{"refused budget", header + "spec:\n  nodePools:\n    - name: general\n      budgets:\n        - [{nodes: \"10%\"}]\n        - [{nodes: \"ten\"}]\n",
			[]string{"space.yaml:9:", "spec.nodePools[0].budgets[1]", "would be refused", "spec.disruption.budgets[0].nodes", "change or drop this alternative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseSpace("space.yaml", []byte(tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			_, err = NewPlan(in, examples.Scenarios, "scenarios/default", s)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
