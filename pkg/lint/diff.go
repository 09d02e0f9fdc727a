package lint

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/joiner-autoscaler/joiner/pkg/manifest"
)

// comparedKinds are what Diff and Drift compare: the pools, the node
// classes and the overlays, the configuration one Joiner per cluster is
// given.
var comparedKinds = map[string]bool{"NodePool": true, "EC2NodeClass": true, "NodeOverlay": true}

// Resource is one NodePool, NodeClass or NodeOverlay as Git (or the cluster) has it,
// after the CRD's defaults: the fields that matter to compare.
type Resource struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Object: spec, metadata labels and annotations (no status, no
	// server-set metadata).
	Object map[string]any `json:"-"`
}

func (r Resource) key() string { return r.Kind + "/" + r.Name }

// LoadResources reads the NodePools and NodeClasses below dir, validated
// and defaulted as the API server stores them. Invalid ones make it fail:
// a comparison with what the server would reject is meaningless.
func (l *Linter) LoadResources(dir string) ([]Resource, error) {
	files, err := manifest.ManifestFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (fix: name the directory that holds one cluster's manifests)", dir, err)
	}
	var out []Resource
	var problems manifest.Problems
	for _, f := range files {
		docs, err := manifest.ParseFile(f)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			if !manifest.IsKarpenter(d) {
				continue
			}
			ps := l.v.Validate(d).Errors()
			if len(ps) > 0 {
				problems = append(problems, ps...)
				continue
			}
			if comparedKinds[d.Kind] {
				out = append(out, Resource{Kind: d.Kind, Name: d.Name, File: d.File, Line: d.Line, Object: comparable(d.Object)})
			}
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s has objects the API server would reject (fix: joiner lint %s):\n%w", dir, dir, problems)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out, nil
}

// comparable keeps what configuration is: spec, and metadata labels and
// annotations.
func comparable(obj map[string]any) map[string]any {
	out := map[string]any{}
	if spec, ok := obj["spec"]; ok {
		out["spec"] = spec
	}
	md, _ := obj["metadata"].(map[string]any)
	for _, k := range []string{"labels", "annotations"} {
		if v, ok := md[k].(map[string]any); ok && len(v) > 0 {
			vv := map[string]any{}
			for ak, av := range v {
				if ak != "kubectl.kubernetes.io/last-applied-configuration" {
					vv[ak] = av
				}
			}
			if len(vv) > 0 {
				out["metadata"] = mergeMap(out["metadata"], k, vv)
			}
		}
	}
	return out
}

func mergeMap(m any, k string, v any) map[string]any {
	mm, _ := m.(map[string]any)
	if mm == nil {
		mm = map[string]any{}
	}
	mm[k] = v
	return mm
}

// FieldDiff is one field that differs, by dotted path; A or B is nil where
// that side does not set it.
type FieldDiff struct {
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	NameB string `json:"nameB,omitempty"` // when the two sides name it differently
	Field string `json:"field"`
	A     any    `json:"a"`
	B     any    `json:"b"`
}

// NamePair is a resource named differently in the two clusters.
type NamePair struct {
	Kind string `json:"kind"`
	A    string `json:"a"`
	B    string `json:"b"`
	Why  string `json:"why"`
}

// ClusterDiff compares two clusters' NodePools and NodeClasses.
type ClusterDiff struct {
	A               string      `json:"a"`
	B               string      `json:"b"`
	OnlyInA         []Resource  `json:"onlyInA"`
	OnlyInB         []Resource  `json:"onlyInB"`
	NonUniformNames []NamePair  `json:"nonUniformNames"`
	Fields          []FieldDiff `json:"differences"`
}

// Empty reports whether the two sides are the same.
func (d *ClusterDiff) Empty() bool {
	return len(d.OnlyInA)+len(d.OnlyInB)+len(d.NonUniformNames)+len(d.Fields) == 0
}

// Diff compares two sets of resources: by kind and name; what is left on
// both sides is paired when the names differ only by case or by a suffix
// (gpu and gpu-pool), reported as non-uniform names and compared field by
// field; the rest is only in one.
func Diff(nameA string, a []Resource, nameB string, b []Resource) *ClusterDiff {
	d := &ClusterDiff{A: nameA, B: nameB, OnlyInA: []Resource{}, OnlyInB: []Resource{}, NonUniformNames: []NamePair{}, Fields: []FieldDiff{}}
	byKey := map[string]Resource{}
	for _, r := range b {
		byKey[r.key()] = r
	}
	matched := map[string]bool{}
	var restA []Resource
	for _, ra := range a {
		if rb, ok := byKey[ra.key()]; ok {
			matched[rb.key()] = true
			d.Fields = append(d.Fields, fieldDiffs(ra.Kind, ra.Name, "", ra.Object, rb.Object)...)
			continue
		}
		restA = append(restA, ra)
	}
	var restB []Resource
	for _, rb := range b {
		if !matched[rb.key()] {
			restB = append(restB, rb)
		}
	}
	used := map[int]bool{}
	for _, ra := range restA {
		paired := false
		for j, rb := range restB {
			if used[j] || ra.Kind != rb.Kind {
				continue
			}
			if why := nameDifference(ra.Name, rb.Name); why != "" {
				used[j], paired = true, true
				d.NonUniformNames = append(d.NonUniformNames, NamePair{ra.Kind, ra.Name, rb.Name, why})
				d.Fields = append(d.Fields, fieldDiffs(ra.Kind, ra.Name, rb.Name, ra.Object, rb.Object)...)
				break
			}
		}
		if !paired {
			d.OnlyInA = append(d.OnlyInA, ra)
		}
	}
	for j, rb := range restB {
		if !used[j] {
			d.OnlyInB = append(d.OnlyInB, rb)
		}
	}
	return d
}

// nameDifference says how two names of one resource differ, or "" if
// they are not the same name: only by case, or one is the other plus a
// suffix after - or _ (gpu, gpu-pool; general, general-v2).
func nameDifference(a, b string) string {
	switch la, lb := strings.ToLower(a), strings.ToLower(b); {
	case la == lb:
		return "differ only in case"
	case strings.HasPrefix(lb, la) && strings.ContainsAny(lb[len(la):len(la)+1], "-_."):
		return fmt.Sprintf("differ by the suffix %q", b[len(a):])
	case strings.HasPrefix(la, lb) && strings.ContainsAny(la[len(lb):len(lb)+1], "-_."):
		return fmt.Sprintf("differ by the suffix %q", a[len(b):])
	}
	return ""
}

// fieldDiffs lists the fields whose values differ, by dotted path. A
// subtree one side lacks is one difference, with the other side's whole
// value. Lists of objects that each have a distinct "key" (requirements,
// taints) are matched by it — requirements[karpenter.sh/capacity-type] —
// so that their order makes no difference; other lists of objects by
// position; a list of scalars is one value.
func fieldDiffs(kind, name, nameB string, a, b map[string]any) []FieldDiff {
	var out []FieldDiff
	diffValues("", a, b, func(path string, va, vb any) {
		out = append(out, FieldDiff{Kind: kind, Name: name, NameB: nameB, Field: path, A: va, B: vb})
	})
	return out
}

func diffValues(path string, a, b any, report func(string, any, any)) {
	if reflect.DeepEqual(a, b) {
		return
	}
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch ta := a.(type) {
	case map[string]any:
		tb, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := map[string]bool{}
		for k := range ta {
			keys[k] = true
		}
		for k := range tb {
			keys[k] = true
		}
		for _, k := range sortedKeys(keys) {
			diffValues(join(k), ta[k], tb[k], report)
		}
		return
	case []any:
		tb, ok := b.([]any)
		if !ok || (scalarList(ta) && scalarList(tb)) {
			break
		}
		ka, okA := distinctKeys(ta)
		kb, okB := distinctKeys(tb)
		if okA && okB {
			ia, ib := map[string]any{}, map[string]any{}
			keys := map[string]bool{}
			for i, k := range ka {
				ia[k], keys[k] = ta[i], true
			}
			for i, k := range kb {
				ib[k], keys[k] = tb[i], true
			}
			for _, k := range sortedKeys(keys) {
				diffValues(path+"["+k+"]", ia[k], ib[k], report)
			}
			return
		}
		for i := 0; i < max(len(ta), len(tb)); i++ {
			var va, vb any
			if i < len(ta) {
				va = ta[i]
			}
			if i < len(tb) {
				vb = tb[i]
			}
			diffValues(fmt.Sprintf("%s[%d]", path, i), va, vb, report)
		}
		return
	}
	report(path, a, b)
}

func scalarList(l []any) bool {
	for _, x := range l {
		switch x.(type) {
		case map[string]any, []any:
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func distinctKeys(items []any) ([]string, bool) {
	if len(items) == 0 {
		return nil, false
	}
	keys := make([]string, len(items))
	seen := map[string]bool{}
	for i, it := range items {
		m, ok := it.(map[string]any)
		k, _ := m["key"].(string)
		if !ok || k == "" || seen[k] {
			return nil, false
		}
		seen[k] = true
		keys[i] = k
	}
	return keys, true
}

// Value renders a field's value for a table: JSON, or "-" when unset.
func Value(v any) string {
	if v == nil {
		return "-"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
