package lint

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// live turns a manifest into the object an API server would return:
// defaulted, with server metadata, status and a controller's annotation.
func live(t *testing.T, l *Linter, yaml string) Resource {
	t.Helper()
	rs, err := l.LoadResources(writeDir(t, map[string]string{"x.yaml": yaml}))
	if err != nil || len(rs) != 1 {
		t.Fatalf("%v %v", rs, err)
	}
	obj := map[string]any{"apiVersion": "karpenter.sh/v1", "kind": rs[0].Kind,
		"metadata": map[string]any{"name": rs[0].Name, "uid": "u-1", "resourceVersion": "7", "generation": int64(2),
			"annotations": map[string]any{"karpenter.sh/nodepool-hash": "123"}},
		"spec": rs[0].Object["spec"], "status": map[string]any{"conditions": []any{}}}
	if rs[0].Kind == "EC2NodeClass" {
		obj["apiVersion"] = "karpenter.k8s.aws/v1"
	}
	res, err := l.liveResource(obj)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestDrift(t *testing.T) {
	l := testLinter(t)
	gitPool := pool{}.yaml()
	cases := []struct {
		name                  string
		git                   []string
		live                  []string
		missing, extra, field []string
	}{
		{name: "in sync, server fields and defaults ignored", git: []string{gitPool, nodeClass}, live: []string{gitPool, nodeClass}},
		{name: "explicit default in the cluster", git: []string{gitPool},
			live: []string{pool{disruption: "  disruption:\n    consolidationPolicy: WhenEmptyOrUnderutilized\n    consolidateAfter: 5m\n    budgets: [{nodes: \"10%\"}]\n"}.yaml()}},
		{name: "a field only the cluster sets", git: []string{gitPool}, live: []string{pool{weight: "  weight: 3\n"}.yaml()}},
		{name: "changed limit", git: []string{gitPool}, live: []string{pool{limits: "  limits:\n    cpu: \"500\"\n"}.yaml()},
			field: []string{"NodePool/general spec.limits.cpu \"100\" \"500\""}},
		{name: "changed budget", git: []string{gitPool}, live: []string{pool{disruption: "  disruption:\n    consolidationPolicy: WhenEmptyOrUnderutilized\n    consolidateAfter: 5m\n    budgets: [{nodes: \"50%\"}]\n"}.yaml()},
			field: []string{`NodePool/general spec.disruption.budgets[0].nodes "10%" "50%"`}},
		{name: "missing and extra", git: []string{gitPool, nodeClass}, live: []string{pool{name: "other"}.yaml()},
			missing: []string{"EC2NodeClass/default", "NodePool/general"}, extra: []string{"NodePool/other"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var git, lv []Resource
			for _, y := range c.git {
				rs, err := l.LoadResources(writeDir(t, map[string]string{"x.yaml": y}))
				if err != nil {
					t.Fatal(err)
				}
				git = append(git, rs...)
			}
			for _, y := range c.live {
				lv = append(lv, live(t, l, y))
			}
			r := Drift(git, lv)
			keys := func(rs []Resource) []string {
				var out []string
				for _, x := range rs {
					out = append(out, x.key())
				}
				return out
			}
			var fields []string
			for _, f := range r.Changed {
				fields = append(fields, f.Kind+"/"+f.Name+" "+f.Field+" "+Value(f.A)+" "+Value(f.B))
			}
			if strings.Join(keys(r.Missing), ",") != strings.Join(c.missing, ",") || strings.Join(keys(r.Extra), ",") != strings.Join(c.extra, ",") ||
				strings.Join(fields, ",") != strings.Join(c.field, ",") {
				t.Errorf("missing %v extra %v changed %v; want %v %v %v", keys(r.Missing), keys(r.Extra), fields, c.missing, c.extra, c.field)
			}
			if r.Drifted() != (len(c.missing)+len(c.extra)+len(c.field) > 0) {
				t.Errorf("Drifted() = %v", r.Drifted())
			}
		})
	}
}

// gathered renders the gauge's series as kind/name=value, sorted.
func gathered(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != "joiner_config_drift" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			out = append(out, fmt.Sprintf("%s/%s=%g", l["kind"], l["name"], m.GetGauge().GetValue()))
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func TestDriftGauge(t *testing.T) {
	reg := prometheus.NewRegistry()
	g, err := DriftGauge(reg)
	if err != nil {
		t.Fatal(err)
	}
	r := &DriftReport{InSync: []Resource{{Kind: "NodePool", Name: "spot"}}, Missing: []Resource{{Kind: "NodePool", Name: "gpu"}},
		Changed: []FieldDiff{{Kind: "NodePool", Name: "general", Field: "spec.limits.cpu"}, {Kind: "NodePool", Name: "general", Field: "spec.weight"}}}
	r.Observe(g)
	if got, want := gathered(t, reg), "NodePool/general=1 NodePool/gpu=1 NodePool/spot=0"; got != want {
		t.Errorf("gauge %s, want %s", got, want)
	}
	// The next comparison replaces the series: gpu is back in sync, the
	// others are gone from both sides.
	(&DriftReport{InSync: []Resource{{Kind: "NodePool", Name: "gpu"}}}).Observe(g)
	if got, want := gathered(t, reg), "NodePool/gpu=0"; got != want {
		t.Errorf("gauge %s, want %s", got, want)
	}
}
