// Package schedulerconfig is the part of the cluster's kube-scheduler
// configuration that Joiner's decisions must follow to predict where
// kube-scheduler puts pods: today the PodTopologySpread plugin's
// defaultConstraints, which kube-scheduler applies to every pod that
// declares no topologySpreadConstraints of its own.
//
// The document has upstream Karpenter's shape (its --scheduler-config flag
// and SCHEDULER_CONFIG variable take the same YAML or JSON):
//
//	podTopologySpread:
//	  defaultConstraints:
//	  - maxSkew: 1
//	    topologyKey: topology.kubernetes.io/zone
//	    whenUnsatisfiable: ScheduleAnyway
//
// As kube-scheduler requires, a default constraint has no labelSelector:
// each pod's is deduced from the Services that select it and its
// ReplicationController, ReplicaSet or StatefulSet (DefaultSelector), so
// that it counts the same pods kube-scheduler counts.
package schedulerconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Config is a scheduler configuration; the zero Config (or nil) changes
// nothing.
type Config struct {
	PodTopologySpread *PodTopologySpread `json:"podTopologySpread,omitempty"`
}

// PodTopologySpread mirrors kube-scheduler's PodTopologySpreadArgs.
type PodTopologySpread struct {
	// DefaultConstraints apply to a pod with no topologySpreadConstraints
	// of its own.
	DefaultConstraints []corev1.TopologySpreadConstraint `json:"defaultConstraints,omitempty"`
}

// Parse reads a scheduler configuration (YAML or JSON) from source (a
// flag, a variable or a file, named in errors). Unknown fields are errors,
// as are constraints kube-scheduler would refuse. An empty document is no
// configuration (nil).
func Parse(raw []byte, source string) (*Config, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: not YAML or JSON: %w", source, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	c := &Config{}
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("%s: %w (the document holds podTopologySpread.defaultConstraints, a list of topology spread constraints without labelSelector)", source, unknownField(err))
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return c, nil
}

// unknownField words encoding/json's unknown-field error as a field name.
func unknownField(err error) error {
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("unknown field %s", f)
	}
	return err
}

// Validate refuses what kube-scheduler's ValidatePodTopologySpreadArgs
// refuses, so that a configuration Joiner accepts is one the cluster's
// scheduler can run, and the reverse.
func (c *Config) Validate() error {
	if c == nil {
		return nil
	}
	for i, tsc := range c.DefaultConstraints() {
		field := fmt.Sprintf("podTopologySpread.defaultConstraints[%d]", i)
		if err := validateConstraint(tsc); err != nil {
			return fmt.Errorf("%s.%w", field, err)
		}
		for j, before := range c.DefaultConstraints()[:i] {
			if before.TopologyKey == tsc.TopologyKey && before.WhenUnsatisfiable == tsc.WhenUnsatisfiable {
				return fmt.Errorf("%s repeats [%d] (topologyKey %s, whenUnsatisfiable %s): keep one", field, j, tsc.TopologyKey, tsc.WhenUnsatisfiable)
			}
		}
	}
	return nil
}

func validateConstraint(tsc corev1.TopologySpreadConstraint) error {
	switch {
	case tsc.MaxSkew <= 0:
		return fmt.Errorf("maxSkew: %d, must be greater than 0", tsc.MaxSkew)
	case tsc.TopologyKey == "":
		return fmt.Errorf("topologyKey: must be set (topology.kubernetes.io/zone, say)")
	case len(validation.IsQualifiedName(tsc.TopologyKey)) > 0:
		return fmt.Errorf("topologyKey: %q is not a label name: %s", tsc.TopologyKey, strings.Join(validation.IsQualifiedName(tsc.TopologyKey), "; "))
	case tsc.WhenUnsatisfiable != corev1.DoNotSchedule && tsc.WhenUnsatisfiable != corev1.ScheduleAnyway:
		return fmt.Errorf("whenUnsatisfiable: %q, must be %s or %s", tsc.WhenUnsatisfiable, corev1.DoNotSchedule, corev1.ScheduleAnyway)
	case tsc.LabelSelector != nil:
		return fmt.Errorf("labelSelector: must not be set: kube-scheduler deduces each pod's from the Services and controller that select it; remove it")
	case len(tsc.MatchLabelKeys) > 0:
		return fmt.Errorf("matchLabelKeys: must not be set: kube-scheduler replaces a default constraint's selector with the deduced one, so it has no effect; remove it")
	}
	return nil
}

// DefaultConstraints are the configured defaults (none for a nil Config).
func (c *Config) DefaultConstraints() []corev1.TopologySpreadConstraint {
	if c == nil || c.PodTopologySpread == nil {
		return nil
	}
	return c.PodTopologySpread.DefaultConstraints
}

// Owner is what a pod's controller contributes to its default selector:
// a ReplicationController's selector (Labels), or a ReplicaSet's or
// StatefulSet's (Selector). Other controllers contribute nothing.
type Owner struct {
	Labels   map[string]string
	Selector *metav1.LabelSelector
}

// DefaultSelector is the selector kube-scheduler gives p's default
// constraints (its helper.DefaultSelector): the selectors of the Services
// in p's namespace that select it, merged (a later Service's value wins a
// key), then its ReplicationController's labels over them, or its
// ReplicaSet's or StatefulSet's selector added as requirements. nil when
// nothing selects the pod: kube-scheduler then leaves it unconstrained.
func DefaultSelector(p *corev1.Pod, services []*corev1.Service, owner Owner) *metav1.LabelSelector {
	matchLabels := map[string]string{}
	for _, svc := range services {
		if svc.Namespace != p.Namespace || svc.Spec.Selector == nil {
			continue // a Service without a selector selects nothing
		}
		if labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(p.Labels)) {
			for k, v := range svc.Spec.Selector {
				matchLabels[k] = v
			}
		}
	}
	for k, v := range owner.Labels {
		matchLabels[k] = v
	}
	var exprs []metav1.LabelSelectorRequirement
	if s := owner.Selector; s != nil {
		for _, k := range slices.Sorted(maps.Keys(s.MatchLabels)) {
			exprs = append(exprs, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{s.MatchLabels[k]}})
		}
		for _, e := range s.MatchExpressions {
			exprs = append(exprs, *e.DeepCopy())
		}
	}
	if len(matchLabels) == 0 && len(exprs) == 0 {
		return nil // an empty selector would count every pod of the namespace
	}
	if len(matchLabels) == 0 {
		matchLabels = nil
	}
	return &metav1.LabelSelector{MatchLabels: matchLabels, MatchExpressions: exprs}
}

// Apply is p as kube-scheduler schedules it under defaults: p itself
// when it declares constraints of its own, when there are no defaults or
// when selector is nil; otherwise a copy (sharing everything else with p,
// which it does not change) whose constraints are the defaults, each
// with selector.
func Apply(p *corev1.Pod, defaults []corev1.TopologySpreadConstraint, selector *metav1.LabelSelector) *corev1.Pod {
	if len(defaults) == 0 || selector == nil || len(p.Spec.TopologySpreadConstraints) > 0 {
		return p
	}
	cp := *p
	cp.Spec.TopologySpreadConstraints = make([]corev1.TopologySpreadConstraint, len(defaults))
	for i := range defaults {
		cp.Spec.TopologySpreadConstraints[i] = *defaults[i].DeepCopy()
		cp.Spec.TopologySpreadConstraints[i].LabelSelector = selector.DeepCopy()
	}
	return &cp
}
