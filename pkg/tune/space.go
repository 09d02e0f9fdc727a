// Package tune searches NodePool settings for the ones that fit a workload
// best: a TuningSpace (a kind of the scenario API group) names the knobs and
// their values, every variant is a full simulation of the scenario, and the
// Pareto front over cost, p99 pod startup, disruptions per node-day and
// pods that never ran is what comes back.
package tune

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/manifest"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// spaceFields is the fix for an unknown field of a tuning space.
const spaceFields = "the fields of spec: nodePools (name, requirements, weight, consolidationPolicy, consolidateAfter, budgets, expireAfter, limits), workloads (hpa, namespace, targetUtilization), objectives, constraints (metric, max), search (maxVariants, samples, sampler, seed, seeds)"

// SpaceKind is the kind of a tuning space file, of scenario.ScenarioAPIVersion.
const SpaceKind = "TuningSpace"

// Space is a TuningSpace document:
//
//	apiVersion: joiner.dev/v1alpha1
//	kind: TuningSpace
//	metadata: {name: cheaper-general}
//	spec:
//	  nodePools:
//	    - name: general                      # a NodePool of the scenario
//	      requirements:                      # each alternative replaces the requirement's values (operator In)
//	        - key: karpenter.sh/capacity-type
//	          values: [[on-demand], [spot, on-demand]]
//	      weight: [10, 30]
//	      consolidationPolicy: [WhenEmptyOrUnderutilized, WhenEmpty]
//	      consolidateAfter: [30s, 5m, Never]
//	      budgets: [[{nodes: "10%"}], [{nodes: "20%"}]]
//	      expireAfter: [168h, 720h]
//	      limits: [{cpu: "200"}, {cpu: "1000"}]
//	  workloads:
//	    - hpa: api-server                   # a HorizontalPodAutoscaler of the scenario
//	      targetUtilization: [60, 70, 80]
//	  objectives: [cost, p99Startup, disruptionsPerNodeDay, podsNeverRan]
//	  constraints:
//	    - {metric: p99Startup, max: 60s}
//	    - {metric: podsNeverRan, max: 0}
//	    - {metric: disruptionsPerNodeDay, max: baseline}  # no worse than the NodePools as they are
//	  search: {maxVariants: 64, samples: 48, sampler: latinHypercube, seed: 1, seeds: 3}
//
// Each knob is a list of alternatives; a variant takes one alternative of
// every knob, the rest of the scenario as it is.
type Space struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       SpaceSpec         `json:"spec"`
	// doc is the parsed document, for the lines of later problems.
	doc *manifest.Document
}

// SpaceSpec is the body of a TuningSpace.
type SpaceSpec struct {
	NodePools []PoolKnobs     `json:"nodePools,omitempty"`
	Workloads []WorkloadKnobs `json:"workloads,omitempty"`
	// Objectives are minimised, in order of importance: the Pareto front is
	// over all of them, the choice among the front by the first, then the
	// next. Default: all four metrics, cost first.
	Objectives  []string     `json:"objectives,omitempty"`
	Constraints []Constraint `json:"constraints,omitempty"`
	Search      SearchSpec   `json:"search,omitempty"`
}

// PoolKnobs are the knobs of one NodePool.
type PoolKnobs struct {
	Name                string              `json:"name"`
	Requirements        []RequirementKnob   `json:"requirements,omitempty"`
	Weight              []int32             `json:"weight,omitempty"`
	ConsolidationPolicy []string            `json:"consolidationPolicy,omitempty"`
	ConsolidateAfter    []string            `json:"consolidateAfter,omitempty"`
	Budgets             [][]v1.Budget       `json:"budgets,omitempty"`
	ExpireAfter         []string            `json:"expireAfter,omitempty"`
	Limits              []map[string]string `json:"limits,omitempty"`
}

// RequirementKnob: alternatives for the values of the requirement on Key.
type RequirementKnob struct {
	Key    string     `json:"key"`
	Values [][]string `json:"values"`
}

// WorkloadKnobs are the knobs of one autoscaled workload.
type WorkloadKnobs struct {
	HPA       string `json:"hpa"`
	Namespace string `json:"namespace,omitempty"`
	// TargetUtilization: alternatives for the HPA's CPU averageUtilization.
	TargetUtilization []int32 `json:"targetUtilization"`
}

// Constraint bounds a metric: variants above Max are not on the front.
type Constraint struct {
	Metric string `json:"metric"`
	// Max is a number in the metric's unit (USD, seconds, disruptions per
	// node-day, pods), for p99Startup also a duration such as "60s", or
	// "baseline": no worse than the scenario's NodePools as they are.
	Max json.RawMessage `json:"max"`
	max float64
	// baseline: Max is the baseline's value of the metric.
	baseline bool
}

// SearchSpec says how to search. Flags of `joiner tune` override it.
type SearchSpec struct {
	// MaxVariants: a space of at most this many variants is searched
	// exhaustively; a larger one is sampled. Default 64.
	MaxVariants int `json:"maxVariants,omitempty"`
	// Samples drawn from a large space. Default MaxVariants.
	Samples int `json:"samples,omitempty"`
	// Sampler: latinHypercube (default) or random.
	Sampler string `json:"sampler,omitempty"`
	// Seed of the sampler. Default the scenario's seed.
	Seed *int64 `json:"seed,omitempty"`
	// Seeds the finalists are re-run over (the scenario's seed, then the
	// next ones). Default 3.
	Seeds int `json:"seeds,omitempty"`
}

// The metrics a space can minimise or bound.
const (
	MetricCost                  = "cost"
	MetricP99Startup            = "p99Startup"
	MetricDisruptionsPerNodeDay = "disruptionsPerNodeDay"
	MetricPodsNeverRan          = "podsNeverRan"
)

// Metrics are every metric, in the default order of objectives.
var metricNames = []string{MetricCost, MetricP99Startup, MetricDisruptionsPerNodeDay, MetricPodsNeverRan}

// Samplers a space can name.
const (
	SamplerLatinHypercube = "latinHypercube"
	SamplerRandom         = "random"
)

// tunableKeys are the requirement keys a space may vary, the instance
// selectors the issue names.
var tunableKeys = []string{
	awsv1.LabelInstanceCategory, awsv1.LabelInstanceFamily, awsv1.LabelInstanceGeneration,
	awsv1.Group + "/instance-size", v1.LabelArch, v1.LabelCapacityType, v1.LabelInstanceType,
}

// IsSpaceDocument reports whether d is a TuningSpace.
func IsSpaceDocument(d *manifest.Document) bool { return d.Kind == SpaceKind }

// ParseSpace reads a space file: one TuningSpace document, decoded
// strictly and checked on its own (the knobs against the scenario are
// checked by Check). Problems name the file, line, field and fix.
func ParseSpace(file string, data []byte) (*Space, error) {
	docs, err := manifest.Parse(file, data)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, manifest.Problems{{File: file, Line: 1, Message: fmt.Sprintf("a space file holds one %s document; this has %d", SpaceKind, len(docs)),
			Fix: "put each space in a file of its own"}}
	}
	return spaceOf(docs[0])
}

// CheckSpace checks a TuningSpace document on its own, as ParseSpace does
// (joiner validate calls it); the knobs against a scenario are checked when
// a search is planned.
func CheckSpace(d *manifest.Document) error {
	_, err := spaceOf(d)
	return err
}

func spaceOf(d *manifest.Document) (*Space, error) {
	if d.APIVersion != scenario.ScenarioAPIVersion || d.Kind != SpaceKind {
		field := "apiVersion"
		if d.APIVersion == scenario.ScenarioAPIVersion {
			field = "kind"
		}
		return nil, manifest.Problems{{File: d.File, Line: d.LineOf(field), Doc: d.Doc, Kind: d.Kind, Name: d.Name, Field: field,
			Message: fmt.Sprintf("a tuning space is apiVersion %s, kind %s; this is %q %q", scenario.ScenarioAPIVersion, SpaceKind, d.APIVersion, d.Kind),
			Fix:     fmt.Sprintf("apiVersion: %s\nkind: %s", scenario.ScenarioAPIVersion, SpaceKind)}}
	}
	s := &Space{doc: d}
	if ps := manifest.DecodeStrictFields(d, s, spaceFields); len(ps) > 0 {
		return nil, ps
	}
	if ps := s.validate(); len(ps) > 0 {
		return nil, ps
	}
	return s, nil
}

func (s *Space) problem(field, msg, fix string) manifest.Problem {
	d := s.doc
	return manifest.Problem{File: d.File, Line: d.LineOf(field), Doc: d.Doc, Kind: d.Kind, Name: d.Name, Field: field, Message: msg, Fix: fix}
}

// validate checks what the space says on its own, and fills defaults.
func (s *Space) validate() manifest.Problems {
	c := &spaceCheck{s: s}
	sp := &s.Spec
	if len(sp.NodePools) == 0 && len(sp.Workloads) == 0 {
		c.bad("spec", "the space has no knobs", "add spec.nodePools: [{name: POOL, consolidateAfter: [1m, 5m]}] naming a NodePool of the scenario")
	}
	pools := map[string]bool{}
	for i, p := range sp.NodePools {
		c.pool(fmt.Sprintf("spec.nodePools[%d]", i), p, pools)
	}
	for i, w := range sp.Workloads {
		c.workload(fmt.Sprintf("spec.workloads[%d]", i), w)
	}
	if len(sp.Objectives) == 0 {
		sp.Objectives = slices.Clone(metricNames)
	}
	c.objectives(sp.Objectives)
	for i := range sp.Constraints {
		c.constraint(fmt.Sprintf("spec.constraints[%d]", i), &sp.Constraints[i])
	}
	se := &sp.Search
	if se.MaxVariants < 0 || se.Samples < 0 || se.Seeds < 0 {
		c.bad("spec.search", "maxVariants, samples and seeds must not be negative", "leave them out for the defaults (64, maxVariants, 3)")
	}
	switch se.Sampler {
	case "", SamplerLatinHypercube, SamplerRandom:
	default:
		c.bad("spec.search.sampler", fmt.Sprintf("%q is not a sampler", se.Sampler), "use latinHypercube or random")
	}
	return c.ps
}

// spaceCheck collects a space's problems.
type spaceCheck struct {
	s  *Space
	ps manifest.Problems
}

func (c *spaceCheck) bad(field, msg, fix string) { c.ps = append(c.ps, c.s.problem(field, msg, fix)) }

// alternatives: a knob present must list at least one.
func (c *spaceCheck) alternatives(at string, n int, what string) {
	if n == 0 {
		c.bad(at, "no alternatives", fmt.Sprintf("list at least one %s, or leave the knob out", what))
	}
}

// pool checks one NodePool's knobs; pools are the names seen so far.
func (c *spaceCheck) pool(at string, p PoolKnobs, pools map[string]bool) {
	if p.Name == "" {
		c.bad(at+".name", "required", "name a NodePool of the scenario: name: general")
	} else if pools[p.Name] {
		c.bad(at+".name", fmt.Sprintf("NodePool %q has knobs twice", p.Name), "merge its knobs into one entry")
	}
	pools[p.Name] = true
	if p.knobs() == 0 {
		c.bad(at, fmt.Sprintf("NodePool %q has no knobs", p.Name), "add one: requirements, weight, consolidationPolicy, consolidateAfter, budgets, expireAfter or limits")
	}
	c.requirements(at, p.Requirements)
	for j, w := range p.Weight {
		if w < 1 || w > 100 {
			c.bad(fmt.Sprintf("%s.weight[%d]", at, j), fmt.Sprintf("%d is outside 1..100", w), "a NodePool weight is from 1 to 100")
		}
	}
	for j, cp := range p.ConsolidationPolicy {
		switch v1.ConsolidationPolicy(cp) {
		case v1.ConsolidationPolicyWhenEmpty, v1.ConsolidationPolicyWhenEmptyOrUnderutilized, v1.ConsolidationPolicyBalanced:
		default:
			c.bad(fmt.Sprintf("%s.consolidationPolicy[%d]", at, j), fmt.Sprintf("%q is not a consolidation policy", cp), "use WhenEmpty, WhenEmptyOrUnderutilized or Balanced")
		}
	}
	for _, k := range []struct {
		name string
		vals []string
	}{{"consolidateAfter", p.ConsolidateAfter}, {"expireAfter", p.ExpireAfter}} {
		for j, v := range k.vals {
			if _, err := v1.ParseNillableDuration(v); err != nil {
				c.bad(fmt.Sprintf("%s.%s[%d]", at, k.name, j), fmt.Sprintf("%q is not a duration", v), `a Go duration such as "30s" or "168h", or "Never"`)
			}
		}
	}
	for j, b := range p.Budgets {
		if len(b) == 0 {
			c.bad(fmt.Sprintf("%s.budgets[%d]", at, j), "an empty list of budgets", `list at least one budget, e.g. [{nodes: "10%"}]`)
		}
	}
	for j, l := range p.Limits {
		if len(l) == 0 {
			c.bad(fmt.Sprintf("%s.limits[%d]", at, j), "empty limits", `give at least one resource, e.g. {cpu: "1000"}`)
		}
	}
	for _, k := range []struct {
		name string
		n    int
		ok   bool
	}{{"weight", len(p.Weight), p.Weight != nil}, {"consolidationPolicy", len(p.ConsolidationPolicy), p.ConsolidationPolicy != nil},
		{"consolidateAfter", len(p.ConsolidateAfter), p.ConsolidateAfter != nil}, {"budgets", len(p.Budgets), p.Budgets != nil},
		{"expireAfter", len(p.ExpireAfter), p.ExpireAfter != nil}, {"limits", len(p.Limits), p.Limits != nil}} {
		if k.ok {
			c.alternatives(at+"."+k.name, k.n, "value")
		}
	}
}

// requirements checks a NodePool's requirement knobs.
func (c *spaceCheck) requirements(at string, reqs []RequirementKnob) {
	keys := map[string]bool{}
	for j, r := range reqs {
		rat := fmt.Sprintf("%s.requirements[%d]", at, j)
		if !slices.Contains(tunableKeys, r.Key) {
			c.bad(rat+".key", fmt.Sprintf("%q is not a key the space can vary", r.Key), "use one of "+strings.Join(tunableKeys, ", "))
		}
		if keys[r.Key] {
			c.bad(rat+".key", fmt.Sprintf("%q is varied twice", r.Key), "list all its alternatives under one key")
		}
		keys[r.Key] = true
		c.alternatives(rat+".values", len(r.Values), "list of values, e.g. values: [[spot], [spot, on-demand]]")
		for k, vs := range r.Values {
			if len(vs) == 0 {
				c.bad(fmt.Sprintf("%s.values[%d]", rat, k), "an empty list of values matches no instance type", "list at least one value")
			}
		}
	}
}

// workload checks one HPA's knobs.
func (c *spaceCheck) workload(at string, w WorkloadKnobs) {
	if w.HPA == "" {
		c.bad(at+".hpa", "required", "name a HorizontalPodAutoscaler of the scenario: hpa: api-server")
	}
	c.alternatives(at+".targetUtilization", len(w.TargetUtilization), "CPU utilisation percentage")
	for j, u := range w.TargetUtilization {
		if u < 1 || u > 100 {
			c.bad(fmt.Sprintf("%s.targetUtilization[%d]", at, j), fmt.Sprintf("%d is outside 1..100", u), "a target utilisation is a percentage of the CPU request, e.g. 70")
		}
	}
}

// objectives checks the objectives: known metrics, each once.
func (c *spaceCheck) objectives(objectives []string) {
	seen := map[string]bool{}
	for i, o := range objectives {
		if !slices.Contains(metricNames, o) {
			c.bad(fmt.Sprintf("spec.objectives[%d]", i), fmt.Sprintf("%q is not a metric", o), "use "+strings.Join(metricNames, ", "))
		} else if seen[o] {
			c.bad(fmt.Sprintf("spec.objectives[%d]", i), fmt.Sprintf("%q is listed twice", o), "list each objective once")
		}
		seen[o] = true
	}
}

// constraint checks one constraint and reads its bound.
func (c *spaceCheck) constraint(at string, con *Constraint) {
	if !slices.Contains(metricNames, con.Metric) {
		c.bad(at+".metric", fmt.Sprintf("%q is not a metric", con.Metric), "use "+strings.Join(metricNames, ", "))
		return
	}
	if string(con.Max) == `"baseline"` {
		con.baseline = true
		return
	}
	m, err := parseMax(con.Metric, con.Max)
	if err != nil {
		fix := `a number in the metric's unit, e.g. max: 0, or max: baseline (no worse than the NodePools as they are)`
		if con.Metric == MetricP99Startup {
			fix = `seconds or a duration, e.g. max: 60s, or max: baseline (no worse than the NodePools as they are)`
		}
		c.bad(at+".max", err.Error(), fix)
	}
	con.max = m
}

func (p PoolKnobs) knobs() int {
	n := len(p.Requirements)
	for _, k := range []bool{p.Weight != nil, p.ConsolidationPolicy != nil, p.ConsolidateAfter != nil, p.Budgets != nil, p.ExpireAfter != nil, p.Limits != nil} {
		if k {
			n++
		}
	}
	return n
}

// parseMax reads a constraint's bound: a number, or for p99Startup also a
// duration string.
func parseMax(metric string, raw json.RawMessage) (float64, error) {
	if len(raw) == 0 {
		return 0, fmt.Errorf("required")
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err == nil {
		if f < 0 {
			return 0, fmt.Errorf("%v is negative", f)
		}
		return f, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("%s is not a number", raw)
	}
	if metric != MetricP99Startup {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return d.Seconds(), nil
}

// check checks the space against the scenario: every NodePool and HPA it
// names exists, and every alternative on its own gives a NodePool the API
// server would accept. Problems point at the space file's line.
func (s *Space) check(t *targets, dims []Dimension) error {
	var ps manifest.Problems
	var pools []string
	for k := range t.docs {
		if name, ok := strings.CutPrefix(k, "NodePool/"); ok {
			pools = append(pools, name)
		}
	}
	sort.Strings(pools)
	for i, p := range s.Spec.NodePools {
		if _, ok := t.docs[docKey("NodePool", p.Name)]; !ok && p.Name != "" {
			ps = append(ps, s.problem(fmt.Sprintf("spec.nodePools[%d].name", i), fmt.Sprintf("the scenario has no NodePool %q", p.Name),
				"name one of its NodePools: "+strings.Join(pools, ", ")))
		}
	}
	for i, w := range s.Spec.Workloads {
		d, ok := t.docs[docKey("HorizontalPodAutoscaler", hpaKey(w.Namespace, w.HPA))]
		if !ok {
			ps = append(ps, s.problem(fmt.Sprintf("spec.workloads[%d].hpa", i), fmt.Sprintf("the scenario has no HorizontalPodAutoscaler %s", hpaKey(w.Namespace, w.HPA)),
				"name an HPA of the scenario (and its namespace, if not default)"))
			continue
		}
		if !hasCPUUtilization(d.Object) {
			ps = append(ps, s.problem(fmt.Sprintf("spec.workloads[%d].hpa", i), fmt.Sprintf("HorizontalPodAutoscaler %s has no CPU Utilization metric to tune", hpaKey(w.Namespace, w.HPA)),
				"give it metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 70}}}]"))
		}
	}
	if len(ps) > 0 {
		return ps
	}
	for _, d := range dims {
		for j, alt := range d.Alternatives {
			if _, _, err := t.edited(alt); err != nil {
				msg := err.Error()
				var vps manifest.Problems
				if errors.As(err, &vps) && len(vps) > 0 {
					msg = fmt.Sprintf("%s %q would be refused: %s: %s", vps[0].Kind, vps[0].Name, vps[0].Field, vps[0].Message)
					if vps[0].Fix != "" {
						msg += " (" + vps[0].Fix + ")"
					}
				}
				ps = append(ps, s.problem(fmt.Sprintf("%s[%d]", d.at, j), msg, "change or drop this alternative"))
			}
		}
	}
	if len(ps) > 0 {
		return ps
	}
	return nil
}

func hasCPUUtilization(hpa map[string]any) bool {
	spec, _ := hpa["spec"].(map[string]any)
	metrics, _ := spec["metrics"].([]any)
	for _, m := range metrics {
		mm, _ := m.(map[string]any)
		if fmt.Sprint(lookup(mm, "resource.name")) == "cpu" && fmt.Sprint(lookup(mm, "resource.target.type")) == "Utilization" {
			return true
		}
	}
	return false
}
