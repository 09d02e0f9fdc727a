package tune

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// Edit sets one field of one object: Path is a JSON path whose segments
// are map keys, except "FIELD=VALUE", which selects the item of a list whose
// FIELD (dotted for a nested one) is VALUE — created with just that field
// when absent.
type Edit struct {
	Kind, Name string
	Path       []string
	Value      any
}

// Dimension is one knob: its alternatives, each a set of edits.
type Dimension struct {
	// Knob names it as a person reads it: "general consolidateAfter".
	Knob string `json:"knob"`
	// Labels are the alternatives as a person reads them.
	Labels       []string `json:"values"`
	Alternatives [][]Edit `json:"-"`
	// Input is the alternative the scenario already has (its edits change
	// nothing), or -1.
	Input int `json:"input"`
	// at is the field of the space file the knob came from.
	at string
}

// Setting is one knob's value in a variant.
type Setting struct {
	Knob  string `json:"knob"`
	Value string `json:"value"`
}

// dimensions turns the space into knobs: pool by pool in the space's order,
// each pool's requirements, weight, consolidationPolicy, consolidateAfter,
// budgets, expireAfter and limits; then the workloads.
func (s *Space) dimensions() []Dimension {
	var out []Dimension
	for i, p := range s.Spec.NodePools {
		at := fmt.Sprintf("spec.nodePools[%d]", i)
		add := func(field string, path []string, n int, label func(int) string, value func(int) any) {
			d := Dimension{Knob: p.Name + " " + field, at: at + "." + field}
			for j := range n {
				d.Labels = append(d.Labels, label(j))
				d.Alternatives = append(d.Alternatives, []Edit{{Kind: "NodePool", Name: p.Name, Path: path, Value: value(j)}})
			}
			out = append(out, d)
		}
		for j, r := range p.Requirements {
			short := r.Key[strings.LastIndex(r.Key, "/")+1:] // the keys a space takes differ after the slash
			d := Dimension{Knob: p.Name + " " + short, at: fmt.Sprintf("%s.requirements[%d].values", at, j)}
			item := []string{"spec", "template", "spec", "requirements", "key=" + r.Key}
			for _, vs := range r.Values {
				d.Labels = append(d.Labels, strings.Join(vs, ","))
				d.Alternatives = append(d.Alternatives, []Edit{
					{Kind: "NodePool", Name: p.Name, Path: append(append([]string{}, item...), "operator"), Value: "In"},
					{Kind: "NodePool", Name: p.Name, Path: append(append([]string{}, item...), "values"), Value: toJSON(vs)},
				})
			}
			out = append(out, d)
		}
		str := func(vs []string) (func(int) string, func(int) any) {
			return func(j int) string { return vs[j] }, func(j int) any { return vs[j] }
		}
		if p.Weight != nil {
			add("weight", []string{"spec", "weight"}, len(p.Weight), func(j int) string { return fmt.Sprint(p.Weight[j]) }, func(j int) any { return float64(p.Weight[j]) })
		}
		if p.ConsolidationPolicy != nil {
			l, v := str(p.ConsolidationPolicy)
			add("consolidationPolicy", []string{"spec", "disruption", "consolidationPolicy"}, len(p.ConsolidationPolicy), l, v)
		}
		if p.ConsolidateAfter != nil {
			l, v := str(p.ConsolidateAfter)
			add("consolidateAfter", []string{"spec", "disruption", "consolidateAfter"}, len(p.ConsolidateAfter), l, v)
		}
		if p.Budgets != nil {
			add("budgets", []string{"spec", "disruption", "budgets"}, len(p.Budgets), func(j int) string { return budgetsLabel(p.Budgets[j]) }, func(j int) any { return toJSON(p.Budgets[j]) })
		}
		if p.ExpireAfter != nil {
			l, v := str(p.ExpireAfter)
			add("expireAfter", []string{"spec", "template", "spec", "expireAfter"}, len(p.ExpireAfter), l, v)
		}
		if p.Limits != nil {
			add("limits", []string{"spec", "limits"}, len(p.Limits), func(j int) string { return limitsLabel(p.Limits[j]) }, func(j int) any { return toJSON(p.Limits[j]) })
		}
	}
	for i, w := range s.Spec.Workloads {
		d := Dimension{Knob: w.HPA + " targetUtilization", at: fmt.Sprintf("spec.workloads[%d].targetUtilization", i)}
		for _, u := range w.TargetUtilization {
			d.Labels = append(d.Labels, fmt.Sprint(u))
			d.Alternatives = append(d.Alternatives, []Edit{{Kind: "HorizontalPodAutoscaler", Name: hpaKey(w.Namespace, w.HPA),
				Path: []string{"spec", "metrics", "resource.name=cpu", "resource", "target", "averageUtilization"}, Value: float64(u)}})
		}
		out = append(out, d)
	}
	return out
}

func hpaKey(ns, name string) string {
	if ns == "" {
		ns = "default"
	}
	return ns + "/" + name
}

func budgetsLabel(bs []v1.Budget) string {
	var parts []string
	for _, b := range bs {
		s := b.Nodes
		if len(b.Reasons) > 0 {
			rs := make([]string, len(b.Reasons))
			for i, r := range b.Reasons {
				rs[i] = string(r)
			}
			s += " " + strings.Join(rs, "+")
		}
		if b.Schedule != nil {
			s += " @" + *b.Schedule
			if b.Duration != nil {
				s += " for " + b.Duration.Duration.String()
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func limitsLabel(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + l[k]
	}
	return strings.Join(parts, ",")
}

// toJSON turns v into the values encoding/json decodes to (maps, lists,
// float64, strings), as manifest documents hold them.
func toJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // the space's own types always marshal
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// targets are the scenario documents a space edits, by kind/name.
type targets struct {
	docs map[string]*manifest.Document
	v    *manifest.Validator
	mu   sync.Mutex // the validator is not known to be safe for concurrent use
}

func docKey(kind, name string) string { return kind + "/" + name }

// readTargets parses the scenario's files for its NodePools and HPAs, the
// documents a space can edit (scenario.Load keeps only their decoded objects).
func readTargets(fsys fs.FS, dir string) (*targets, error) {
	t := &targets{docs: map[string]*manifest.Document{}}
	files, err := manifest.YAMLFiles(fsys, dir)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		docs, err := manifest.Parse(f, b)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			switch d.Kind {
			case "NodePool":
				t.docs[docKey("NodePool", d.Name)] = d
			case "HorizontalPodAutoscaler":
				t.docs[docKey("HorizontalPodAutoscaler", hpaKey(d.Namespace, d.Name))] = d
			}
		}
	}
	if t.v, err = manifest.NewValidator(); err != nil {
		return nil, err
	}
	return t, nil
}

// edited applies edits to the documents they name and decodes the results
// as loading does: NodePools through the API server's validation.
func (t *targets) edited(edits []Edit) (pools map[string]*v1.NodePool, hpas map[string]*autoscalingv2.HorizontalPodAutoscaler, err error) {
	objs := map[string]map[string]any{}
	var order []string
	for _, e := range edits {
		k := docKey(e.Kind, e.Name)
		d, ok := t.docs[k]
		if !ok {
			return nil, nil, fmt.Errorf("the scenario has no %s %q", e.Kind, e.Name)
		}
		o, ok := objs[k]
		if !ok {
			o = deepCopy(d.Object).(map[string]any)
			objs[k] = o
			order = append(order, k)
		}
		if err := setPath(o, e.Path, e.Value); err != nil {
			return nil, nil, fmt.Errorf("%s %s: %w", e.Kind, e.Name, err)
		}
	}
	pools, hpas = map[string]*v1.NodePool{}, map[string]*autoscalingv2.HorizontalPodAutoscaler{}
	for _, k := range order {
		d := *t.docs[k].Header()
		d.Object = objs[k]
		switch d.Kind {
		case "NodePool":
			t.mu.Lock()
			obj, ps := t.v.Decode(&d)
			t.mu.Unlock()
			if len(ps.Errors()) > 0 {
				return nil, nil, ps.Errors()
			}
			pools[d.Name] = obj.(*v1.NodePool)
		case "HorizontalPodAutoscaler":
			obj, ps := manifest.DecodeBuiltin(&d)
			if len(ps) > 0 {
				return nil, nil, ps
			}
			h := obj.(*autoscalingv2.HorizontalPodAutoscaler)
			hpas[hpaKey(h.Namespace, h.Name)] = h
		}
	}
	return pools, hpas, nil
}

// unchanged reports whether edits leave the documents they name as they
// are: the alternative is the input's.
func (t *targets) unchanged(edits []Edit) bool {
	objs := map[string]map[string]any{}
	for _, e := range edits {
		k := docKey(e.Kind, e.Name)
		d, ok := t.docs[k]
		if !ok {
			return false
		}
		if objs[k] == nil {
			objs[k] = deepCopy(d.Object).(map[string]any)
		}
		if setPath(objs[k], e.Path, e.Value) != nil {
			return false
		}
	}
	for k, o := range objs {
		a, err1 := json.Marshal(o)
		b, err2 := json.Marshal(t.docs[k].Object)
		if err1 != nil || err2 != nil || string(a) != string(b) {
			return false
		}
	}
	return true
}

// withEdits is in with the edited NodePools and HPAs in place of the
// loaded ones; everything else is shared, which a run only reads.
func (t *targets) withEdits(in *scenario.Input, edits []Edit) (*scenario.Input, error) {
	pools, hpas, err := t.edited(edits)
	if err != nil {
		return nil, err
	}
	out := *in
	out.NodePools = make([]*v1.NodePool, len(in.NodePools))
	for i, np := range in.NodePools {
		if p, ok := pools[np.Name]; ok {
			out.NodePools[i] = p
		} else {
			out.NodePools[i] = np.DeepCopy()
		}
	}
	out.HPAs = make([]*autoscalingv2.HorizontalPodAutoscaler, len(in.HPAs))
	for i, h := range in.HPAs {
		if e, ok := hpas[hpaKey(h.Namespace, h.Name)]; ok {
			out.HPAs[i] = e
		} else {
			out.HPAs[i] = h.DeepCopy()
		}
	}
	return &out, nil
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, x := range t {
			l[i] = deepCopy(x)
		}
		return l
	}
	return v
}

// setPath sets the value at path in obj, making the maps and the selected
// list items it needs.
func setPath(obj map[string]any, path []string, value any) error {
	cur := obj
	for i, seg := range path[:len(path)-1] {
		next := path[i+1]
		if field, want, ok := strings.Cut(next, "="); ok {
			list, _ := cur[seg].([]any)
			var item map[string]any
			for _, x := range list {
				if m, ok := x.(map[string]any); ok && fmt.Sprint(lookup(m, field)) == want {
					item = m
					break
				}
			}
			if item == nil {
				item = map[string]any{}
				setDotted(item, field, want)
				cur[seg] = append(list, item)
			}
			cur = item
			continue
		}
		if strings.Contains(seg, "=") {
			continue // the item was entered above
		}
		m, ok := cur[seg].(map[string]any)
		if !ok {
			if cur[seg] != nil {
				return fmt.Errorf("%s is not an object", strings.Join(path[:i+1], "."))
			}
			m = map[string]any{}
			cur[seg] = m
		}
		cur = m
	}
	cur[path[len(path)-1]] = value
	return nil
}

func lookup(m map[string]any, dotted string) any {
	var v any = m
	for _, s := range strings.Split(dotted, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[s]
	}
	return v
}

func setDotted(m map[string]any, dotted string, v any) {
	segs := strings.Split(dotted, ".")
	for _, s := range segs[:len(segs)-1] {
		n := map[string]any{}
		m[s] = n
		m = n
	}
	m[segs[len(segs)-1]] = v
}
