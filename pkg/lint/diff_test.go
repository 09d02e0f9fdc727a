package lint

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDiff: pairing by name, then by case or suffix; only-in-one; field
// differences by path with both values; defaults and requirement order
// making no difference.
func TestDiff(t *testing.T) {
	l := testLinter(t)
	reordered := pool{requirements: "      requirements:\n        - key: kubernetes.io/arch\n          operator: In\n          values: [amd64]\n        - key: karpenter.sh/capacity-type\n          operator: In\n          values: [on-demand]\n"}
	ordered := pool{requirements: "      requirements:\n        - key: karpenter.sh/capacity-type\n          operator: In\n          values: [on-demand]\n        - key: kubernetes.io/arch\n          operator: In\n          values: [amd64]\n"}
	cases := []struct {
		name        string
		a, b        map[string]string
		onlyA       []string
		onlyB       []string
		names       []NamePair
		differences []FieldDiff
	}{
		{name: "same after defaults", a: map[string]string{"p.yaml": pool{}.yaml()},
			b: map[string]string{"p.yaml": pool{disruption: "  disruption:\n    consolidationPolicy: WhenEmptyOrUnderutilized\n    consolidateAfter: 5m\n    budgets: [{nodes: \"10%\"}]\n"}.yaml()}},
		{name: "requirement order", a: map[string]string{"p.yaml": ordered.yaml()}, b: map[string]string{"p.yaml": reordered.yaml()}},
		{name: "one field", a: map[string]string{"p.yaml": pool{}.yaml()}, b: map[string]string{"p.yaml": pool{limits: "  limits:\n    cpu: \"1000\"\n"}.yaml()},
			differences: []FieldDiff{{Kind: "NodePool", Name: "general", Field: "spec.limits.cpu", A: "100", B: "1000"}}},
		{name: "only in one", a: map[string]string{"p.yaml": pool{}.yaml(), "q.yaml": pool{name: "batch"}.yaml()}, b: map[string]string{"p.yaml": pool{}.yaml(), "nc.yaml": nodeClass},
			onlyA: []string{"NodePool/batch"}, onlyB: []string{"EC2NodeClass/default"}},
		{name: "case", a: map[string]string{"p.yaml": pool{name: "gpu"}.yaml()}, b: map[string]string{"p.yaml": pool{name: "GPU", weight: "  weight: 10\n"}.yaml()},
			names:       []NamePair{{"NodePool", "gpu", "GPU", "differ only in case"}},
			differences: []FieldDiff{{Kind: "NodePool", Name: "gpu", NameB: "GPU", Field: "spec.weight", A: nil, B: int64(10)}}},
		{name: "suffix", a: map[string]string{"p.yaml": pool{name: "gpu-pool"}.yaml()}, b: map[string]string{"p.yaml": pool{name: "gpu"}.yaml(), "q.yaml": pool{name: "gpus"}.yaml()},
			onlyB: []string{"NodePool/gpus"},
			names: []NamePair{{"NodePool", "gpu-pool", "gpu", `differ by the suffix "-pool"`}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := l.LoadResources(writeDir(t, c.a))
			if err != nil {
				t.Fatal(err)
			}
			b, err := l.LoadResources(writeDir(t, c.b))
			if err != nil {
				t.Fatal(err)
			}
			d := Diff("a", a, "b", b)
			keys := func(rs []Resource) []string {
				var out []string
				for _, r := range rs {
					out = append(out, r.key())
				}
				return out
			}
			if !reflect.DeepEqual(keys(d.OnlyInA), c.onlyA) || !reflect.DeepEqual(keys(d.OnlyInB), c.onlyB) {
				t.Errorf("only in a %v, b %v; want %v, %v", keys(d.OnlyInA), keys(d.OnlyInB), c.onlyA, c.onlyB)
			}
			if len(d.NonUniformNames)+len(c.names) > 0 && !reflect.DeepEqual(d.NonUniformNames, c.names) {
				t.Errorf("names %v, want %v", d.NonUniformNames, c.names)
			}
			if len(d.Fields)+len(c.differences) > 0 && !reflect.DeepEqual(d.Fields, c.differences) {
				t.Errorf("differences %#v, want %#v", d.Fields, c.differences)
			}
			if d.Empty() != (len(c.onlyA)+len(c.onlyB)+len(c.names)+len(c.differences) == 0) {
				t.Errorf("Empty() = %v", d.Empty())
			}
		})
	}
}

// TestDiffExampleClusters: staging against production, the rows that say
// what the two environments are meant to differ in.
func TestDiffExampleClusters(t *testing.T) {
	l := testLinter(t)
	root := filepath.Join("..", "..", "examples", "clusters")
	a, err := l.LoadResources(filepath.Join(root, "staging"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.LoadResources(filepath.Join(root, "production"))
	if err != nil {
		t.Fatal(err)
	}
	d := Diff("staging", a, "production", b)
	if len(d.OnlyInA)+len(d.OnlyInB)+len(d.NonUniformNames) != 0 {
		t.Errorf("the examples' names are uniform: %+v", d)
	}
	got := map[string][2]string{}
	for _, f := range d.Fields {
		got[f.Kind+"/"+f.Name+" "+f.Field] = [2]string{Value(f.A), Value(f.B)}
	}
	want := map[string][2]string{
		"EC2NodeClass/default spec.role":                                                      {`"KarpenterNodeRole-staging"`, `"KarpenterNodeRole-production"`},
		"NodePool/general spec.limits.cpu":                                                    {`"200"`, `"1000"`},
		"NodePool/general spec.template.spec.terminationGracePeriod":                          {"-", `"48h"`},
		"NodePool/general spec.template.spec.requirements[karpenter.sh/capacity-type].values": {`["spot","on-demand"]`, `["on-demand"]`},
		"NodePool/general spec.disruption.budgets[1]":                                         {"-", `{"duration":"8h","nodes":"10%","reasons":["Drifted"],"schedule":"0 9 * * mon-fri"}`},
		"NodePool/gpu spec.disruption.budgets[0].nodes":                                       {`"10%"`, `"1"`}, // staging's is the CRD default
		"NodePool/spot spec.disruption.consolidateAfter":                                      {`"30s"`, `"1m"`},
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %v, want %v", k, got[k], v)
		}
	}
	if _, ok := got["NodePool/gpu spec.template.spec.nodeClassRef.name"]; ok {
		t.Error("equal fields reported")
	}
	if len(d.Fields) != 22 {
		t.Errorf("%d differences, want 22", len(d.Fields))
	}
	var buf bytes.Buffer
	if err := WriteDiffJSON(&buf, d); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Differences []FieldDiff `json:"differences"`
	}
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back.Differences) != 22 {
		t.Errorf("json: %v, %d differences", err, len(back.Differences))
	}
}
