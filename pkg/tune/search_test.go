package tune

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/joiner-autoscaler/joiner/examples"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// TestFront on hand-made points.
func TestFront(t *testing.T) {
	inf := math.Inf(1)
	pt := func(c, p, d, n float64) Metrics {
		return Metrics{CostUSD: c, P99StartupSeconds: p, DisruptionsPerNodeDay: d, PodsNeverRan: n}
	}
	all := metricNames
	for _, tc := range []struct {
		name       string
		points     []Metrics
		objectives []string
		want       []int
	}{
		{"one point", []Metrics{pt(1, 1, 1, 0)}, all, []int{0}},
		{"a trade-off keeps both", []Metrics{pt(10, 30, 1, 0), pt(8, 60, 1, 0)}, all, []int{0, 1}},
		{"dominated in every metric", []Metrics{pt(10, 30, 1, 0), pt(11, 31, 2, 1)}, all, []int{0}},
		{"worse in one, equal in the rest", []Metrics{pt(10, 30, 1, 0), pt(10, 30, 1, 1)}, all, []int{0}},
		{"equal points are all on it", []Metrics{pt(10, 30, 1, 0), pt(10, 30, 1, 0)}, all, []int{0, 1}},
		{"no p99 is the worst p99", []Metrics{pt(5, inf, 0, 0), pt(5, 100, 0, 0)}, all, []int{1}},
		{"only the objectives count", []Metrics{pt(10, 30, 9, 0), pt(10, 30, 1, 0), pt(9, 90, 0, 0)}, []string{MetricCost, MetricP99Startup}, []int{0, 1, 2}},
		{"five points, three on the front", []Metrics{
			pt(50, 90, 4, 0), // dominated by 2
			pt(45, 88, 6, 0), // cheapest
			pt(48, 80, 4, 0), // fastest
			pt(49, 85, 3, 0), // fewest disruptions
			pt(50, 95, 6, 0), // dominated by all
		}, all, []int{1, 2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Front(tc.points, tc.objectives); !slices.Equal(got, tc.want) {
				t.Errorf("front %v, want %v", got, tc.want)
			}
		})
	}
}

const smallSpace = header + `spec:
  nodePools:
    - name: general
      requirements:
        - key: karpenter.sh/capacity-type
          values: [[on-demand], [spot, on-demand]]
      consolidateAfter: [1m, 15m]
  workloads:
    - {hpa: api-server, targetUtilization: [60, 80]}
  constraints:
    - {metric: p99Startup, max: 120s}
  search: {seeds: 2}
`

func planOf(t testing.TB, space string) *Plan {
	t.Helper()
	s, err := ParseSpace("space.yaml", []byte(space))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(bundled(t), examples.Scenarios, "scenarios/default", s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSearchDeterministic: the whole search, exhaustive or sampled with
// halving, gives the same JSON byte for byte, run twice and with one
// worker or several.
func TestSearchDeterministic(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bundled scenario a few dozen times")
	}
	p := planOf(t, smallSpace)
	for _, tc := range []struct {
		name string
		o    Options
		mode string
	}{
		{"exhaustive", Options{}, "exhaustive"},
		{"sampled", Options{MaxVariants: 4, Samples: 6}, "sampled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var outs [][]byte
			for _, workers := range []int{1, 3, 3} {
				o := tc.o
				o.Workers = workers
				res, err := p.Search(context.Background(), o)
				if err != nil {
					t.Fatal(err)
				}
				if res.Search.Mode != tc.mode {
					t.Fatalf("mode %s, want %s", res.Search.Mode, tc.mode)
				}
				b, err := json.Marshal(res)
				if err != nil {
					t.Fatal(err)
				}
				outs = append(outs, b)
			}
			for i := 1; i < len(outs); i++ {
				if !bytes.Equal(outs[0], outs[i]) {
					t.Errorf("run %d differs from run 0:\n%s\n%s", i, outs[0], outs[i])
				}
			}
		})
	}
}

// TestSampledSearchHalves: a sampled search runs the sample over a quarter
// and a half of the duration and only the better half of each in full.
func TestSampledSearchHalves(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bundled scenario")
	}
	p := planOf(t, smallSpace)
	res, err := p.Search(context.Background(), Options{MaxVariants: 4, Samples: 8, Seeds: 1, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Search.Rungs {
		got = append(got, r.Horizon+"×"+strings.Repeat("|", r.Variants))
	}
	// 8 sampled from 8 variants: duplicates dropped leave at most 8.
	if len(res.Search.Rungs) != 3 || res.Search.Rungs[0].Horizon != "6h" || res.Search.Rungs[2].Horizon != "24h" {
		t.Fatalf("rungs %v", got)
	}
	n := res.Search.Rungs[0].Variants
	if res.Search.Rungs[1].Variants != (n+1)/2 || res.Search.Rungs[2].Variants != ((n+1)/2+1)/2 {
		t.Errorf("rungs %v do not halve", got)
	}
	if len(res.Variants) != res.Search.Rungs[2].Variants+1 {
		t.Errorf("%d variants in full, want the last rung's %d and the baseline", len(res.Variants), res.Search.Rungs[2].Variants)
	}
}

// TestLatinHypercube: each knob's alternatives are spread evenly over the
// samples, and a seed gives the same sample.
func TestLatinHypercube(t *testing.T) {
	p := planOf(t, header+`spec:
  nodePools:
    - name: general
      consolidateAfter: [1m, 2m, 3m, 4m]
      weight: [1, 2, 3, 4]
      expireAfter: [1h, 2h, 3h, 4h]
`)
	vs, sampled := p.Variants(Options{MaxVariants: 10, Samples: 8})
	if !sampled {
		t.Fatal("a space of 64 over --max-variants 10 was not sampled")
	}
	again, _ := p.Variants(Options{MaxVariants: 10, Samples: 8})
	if !reflect.DeepEqual(vs, again) {
		t.Error("the same seed gave another sample")
	}
	if len(vs) != 9 {
		t.Fatalf("%d variants, want the baseline and 8 (a hypercube's samples differ in every knob)", len(vs))
	}
	for d := range p.Dims {
		count := map[int]int{}
		for _, v := range vs[1:] {
			count[v.Choice[d]]++
		}
		for a := range 4 {
			if count[a] != 2 {
				t.Errorf("knob %s: alternative %d drawn %d times of 8, want 2", p.Dims[d].Knob, a, count[a])
			}
		}
	}
}

// TestWrittenManifests: the chosen variant's files validate and differ from
// the input only in the tuned fields; comments stay.
func TestWrittenManifests(t *testing.T) {
	p := planOf(t, smallSpace)
	v := Variant{Index: 7, Choice: []int{1, 1, 0}} // spot+on-demand, 15m, 60 %
	files, err := p.EditFiles(v)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Path)
	}
	if !slices.Equal(names, []string{"nodepools.yaml", "workloads.yaml"}) {
		t.Fatalf("edited %v, want nodepools.yaml and workloads.yaml", names)
	}
	dir := t.TempDir()
	diff, err := WriteFiles(dir, files)
	if err != nil {
		t.Fatal(err)
	}
	// Only the tuned values' lines change.
	var changed []string
	for _, l := range strings.Split(diff, "\n") {
		if (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-")) && !strings.HasPrefix(l, "+++") && !strings.HasPrefix(l, "---") {
			changed = append(changed, l)
		}
	}
	want := []string{
		`-          values: ["on-demand"]`, `+          values: ["spot", "on-demand"]`,
		`-    consolidateAfter: 5m`, `+    consolidateAfter: 15m`,
		`-        target: {type: Utilization, averageUtilization: 70}`, `+        target: {type: Utilization, averageUtilization: 60}`,
	}
	if !slices.Equal(changed, want) {
		t.Errorf("changed lines:\n%s\nwant:\n%s\ndiff:\n%s", strings.Join(changed, "\n"), strings.Join(want, "\n"), diff)
	}
	v8r, err := manifest.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		docs, err := manifest.ParseFile(filepath.Join(dir, f.Path))
		if err != nil {
			t.Fatal(err)
		}
		old, err := manifest.Parse(f.Path, f.Old)
		if err != nil {
			t.Fatal(err)
		}
		if len(docs) != len(old) {
			t.Fatalf("%s: %d documents, the input %d", f.Path, len(docs), len(old))
		}
		for i, d := range docs {
			// Apart from the tuned fields, each document is the input's.
			got, in := deepCopy(d.Object).(map[string]any), deepCopy(old[i].Object).(map[string]any)
			for _, e := range p.Edits(v) {
				if e.Kind == d.Kind && (e.Name == d.Name || e.Name == hpaKey(d.Namespace, d.Name)) {
					if err := setPath(in, e.Path, e.Value); err != nil {
						t.Fatal(err)
					}
				}
			}
			if gj, ij := mustJSON(t, got), mustJSON(t, in); gj != ij {
				t.Errorf("%s document %d: differs beyond the tuned fields:\n%v\n%v", f.Path, i+1, got, in)
			}
			if manifest.IsKarpenter(d) {
				if ps := v8r.Validate(d); len(ps.Errors()) > 0 {
					t.Errorf("%s: %v", f.Path, ps)
				}
			} else if _, ps := manifest.DecodeBuiltin(d); len(ps) > 0 {
				t.Errorf("%s: %v", f.Path, ps)
			}
		}
	}
	if !strings.Contains(string(files[0].New), "# general: on-demand m6i for primary workloads") {
		t.Error("the NodePool's comment was lost")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestInputAlternative: the alternative the scenario already has is known,
// so the table shows only what a variant changes.
func TestInputAlternative(t *testing.T) {
	p := planOf(t, header+`spec:
  nodePools:
    - name: general
      requirements:
        - key: karpenter.sh/capacity-type
          values: [[spot, on-demand], [on-demand]]
      consolidateAfter: [1m, 15m]
      weight: [10, 20]
  workloads:
    - {hpa: api-server, targetUtilization: [60, 70]}
`)
	var got []int
	for _, d := range p.Dims {
		got = append(got, d.Input)
	}
	if want := []int{1, 0, -1, 1}; !slices.Equal(got, want) {
		t.Errorf("input alternatives %v, want %v", got, want)
	}
}

// TestChoice: the choice is the finalist whose mean meets the constraints
// and is best by the objectives in order; on a tie, the one that changes
// fewer knobs.
func TestChoice(t *testing.T) {
	m := func(c, p float64) Metrics { return Metrics{CostUSD: c, P99StartupSeconds: p} }
	for _, tc := range []struct {
		name    string
		perSeed map[int][]Metrics
		want    int
	}{
		{"cheapest mean", map[int][]Metrics{0: {m(50, 80)}, 1: {m(40, 80), m(44, 80)}, 2: {m(41, 80), m(41, 80)}}, 2},
		{"a mean over the constraint is not chosen", map[int][]Metrics{0: {m(50, 80)}, 1: {m(40, 50), m(40, 70)}, 2: {m(41, 80), m(41, 100)}}, 1},
		{"a tie goes to fewer changes", map[int][]Metrics{0: {m(50, 80)}, 1: {m(40, 80)}, 2: {m(40, 80)}}, 2},
		{"a bound relative to the baseline's mean", map[int][]Metrics{0: {m(50, 70)}, 1: {m(40, 80)}, 2: {m(45, 60), m(45, 70)}}, -2},
		{"nothing better than the baseline", map[int][]Metrics{0: {m(30, 80)}, 1: {m(40, 80)}, 2: {m(41, 80)}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{Header: Header{Objectives: metricNames, Constraints: []ConstraintLimit{{Metric: MetricP99Startup, Max: 85}},
				Knobs: []Dimension{{Knob: "a", Input: 0}, {Knob: "b", Input: 0}}},
				Variants: []VariantResult{{Index: 0, Baseline: true}, {Index: 1, Choice: []int{1, 1}, Front: true}, {Index: 2, Choice: []int{0, 1}, Front: true}}}
			if tc.want == -2 { // p99 no worse than the baseline's 70 s, not 85 s
				r.Constraints = []ConstraintLimit{{Metric: MetricP99Startup, Baseline: true}}
				tc.want = 2
			}
			r.robustness(tc.perSeed, 2)
			if r.Chosen == nil || *r.Chosen != tc.want {
				t.Errorf("chosen %v, want %d", r.Chosen, tc.want)
			}
		})
	}
}

// TestWriteRefusesListItems: a NodePool inside a kubectl List cannot be
// edited in place, and --write says so rather than skip it.
func TestWriteRefusesListItems(t *testing.T) {
	class, err := fs.ReadFile(examples.Scenarios, "scenarios/default/ec2nodeclass.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{
		"s/class.yaml": {Data: class},
		"s/pools.yaml": {Data: []byte(`apiVersion: v1
kind: List
items:
  - apiVersion: karpenter.sh/v1
    kind: NodePool
    metadata: {name: general}
    spec:
      template:
        spec:
          requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
          nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      disruption: {consolidateAfter: 5m}
`)},
	}
	in, err := scenario.Load(fsys, "s", "list")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSpace("space.yaml", []byte(header+"spec:\n  nodePools:\n    - {name: general, consolidateAfter: [1m]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(in, fsys, "s", s)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.EditFiles(Variant{Index: 1, Choice: []int{0}})
	if err == nil || !strings.Contains(err.Error(), "NodePool/general: not a document of its own") {
		t.Errorf("error %v, want one naming NodePool/general", err)
	}
}

// TestSearchStopsWithItsContext: a search whose context has ended runs no
// simulation and returns the context's cause.
func TestSearchStopsWithItsContext(t *testing.T) {
	p := planOf(t, smallSpace)
	stopped := errors.New("the user pressed Ctrl-C")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(stopped)
	if res, err := p.Search(ctx, Options{MaxVariants: 4, Samples: 8, Seeds: 1, Workers: 2}); res != nil || !errors.Is(err, stopped) {
		t.Fatalf("result %v, error %v; want none and the cause", res != nil, err)
	}
}
