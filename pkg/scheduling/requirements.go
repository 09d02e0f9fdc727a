package scheduling

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// Requirements is a conjunction of requirements, at most one per key.
type Requirements map[string]*Requirement

// NewRequirements intersects the given requirements into a set.
func NewRequirements(rs ...*Requirement) Requirements {
	out := Requirements{}
	out.Add(rs...)
	return out
}

// FromNodeSelectorRequirements converts API requirements.
func FromNodeSelectorRequirements(in []v1.NodeSelectorRequirementWithMinValues) Requirements {
	out := Requirements{}
	for _, r := range in {
		out.Add(FromNodeSelectorRequirement(r))
	}
	return out
}

// FromCoreNodeSelectorRequirements converts Kubernetes node-selector requirements.
func FromCoreNodeSelectorRequirements(in []corev1.NodeSelectorRequirement) Requirements {
	out := Requirements{}
	for _, r := range in {
		out.Add(NewRequirement(r.Key, r.Operator, r.Values...))
	}
	return out
}

// FromNodePool is what a NodePool's nodes may be: its template's
// requirements and labels. (Provisioning adds the karpenter.sh/nodepool
// label of its own claims.) A pool that says nothing of a key, such as
// karpenter.sh/capacity-type, allows every value of it — upstream has no
// default there.
func FromNodePool(np *v1.NodePool) Requirements {
	reqs := FromNodeSelectorRequirements(np.Spec.Template.Spec.Requirements)
	reqs.Merge(FromLabels(np.Spec.Template.Labels))
	return reqs
}

// FromLabels turns labels into single-value In requirements.
func FromLabels(labels map[string]string) Requirements {
	out := Requirements{}
	for k, v := range labels {
		out.Add(NewRequirement(k, corev1.NodeSelectorOpIn, v))
	}
	return out
}

// Add intersects requirements into the set.
func (rs Requirements) Add(in ...*Requirement) {
	for _, r := range in {
		if cur, ok := rs[r.Key]; ok {
			rs[r.Key] = cur.Intersection(r)
		} else {
			rs[r.Key] = r
		}
	}
}

// Merge intersects every requirement of o into the set.
func (rs Requirements) Merge(o Requirements) {
	for _, k := range o.Keys() {
		rs.Add(o[k])
	}
}

// Copy returns a shallow copy (requirements themselves are immutable).
func (rs Requirements) Copy() Requirements {
	out := make(Requirements, len(rs))
	for k, r := range rs {
		out[k] = r
	}
	return out
}

// Has reports whether the set constrains key.
func (rs Requirements) Has(key string) bool { _, ok := rs[key]; return ok }

// anything is what an unconstrained key allows. Shared, so Get allocates
// nothing: it runs in the scheduler's innermost loops.
var anything = &Requirement{complement: true}

// Get returns the requirement on key; an unconstrained key allows anything
// (that requirement's Key is empty: use Has to tell the two apart).
func (rs Requirements) Get(key string) *Requirement {
	if r, ok := rs[key]; ok {
		return r
	}
	return anything
}

// Keys returns the constrained keys, sorted.
func (rs Requirements) Keys() []string {
	keys := make([]string, 0, len(rs))
	for k := range rs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// IncompatibleError says which key two requirement sets disagree on.
type IncompatibleError struct {
	Key           string
	Wanted, Offer string // the incoming and the existing requirement, rendered
	Undefined     bool   // the existing side does not define the key at all
}

func (e *IncompatibleError) Error() string {
	if e.Undefined {
		return fmt.Sprintf("requires %s, which nothing here sets (label %q is not defined)", e.Wanted, e.Key)
	}
	return fmt.Sprintf("requires %s, but only %s is allowed", e.Wanted, e.Offer)
}

// Intersects checks the keys both sets constrain: each pair must share a
// value (or both allow the label's absence). Keys only one side constrains
// are not checked. The first conflict, by key order, is returned.
func (rs Requirements) Intersects(incoming Requirements) error {
	for _, k := range incoming.Keys() {
		if existing, ok := rs[k]; ok && !existing.Intersects(incoming[k]) {
			return &IncompatibleError{Key: k, Wanted: incoming[k].String(), Offer: existing.String()}
		}
	}
	return nil
}

// Compatible is Intersects plus: a key the incoming set requires to exist
// (In, Exists, Gt, …) must be constrained here too, unless allowUndefined
// says the key will be supplied anyway (a well-known label every instance
// type sets, for example).
func (rs Requirements) Compatible(incoming Requirements, allowUndefined func(key string) bool) error {
	for _, k := range incoming.Keys() {
		if _, ok := rs[k]; ok || incoming[k].AllowsAbsence() || (allowUndefined != nil && allowUndefined(k)) {
			continue
		}
		return &IncompatibleError{Key: k, Wanted: incoming[k].String(), Undefined: true}
	}
	return rs.Intersects(incoming)
}

// Labels returns the labels the set pins to one value (In with one value),
// which a node launched for it will carry.
func (rs Requirements) Labels() map[string]string {
	out := map[string]string{}
	for k, r := range rs {
		if vals := r.Values(); len(vals) == 1 {
			out[k] = vals[0]
		}
	}
	return out
}

// MatchesLabels reports whether a node with these labels satisfies the set.
func (rs Requirements) MatchesLabels(labels map[string]string) bool {
	for k, r := range rs {
		v, ok := labels[k]
		if !ok {
			if !r.AllowsAbsence() {
				return false
			}
			continue
		}
		if !r.Has(v) {
			return false
		}
	}
	return true
}

// String renders the set in key order.
func (rs Requirements) String() string {
	parts := make([]string, 0, len(rs))
	for _, k := range rs.Keys() {
		parts = append(parts, rs[k].String())
	}
	return strings.Join(parts, ", ")
}

// NodeSelectorRequirements expresses the set in the API's terms, by key.
func (rs Requirements) NodeSelectorRequirements() []v1.NodeSelectorRequirementWithMinValues {
	var out []v1.NodeSelectorRequirementWithMinValues
	for _, k := range rs.Keys() {
		out = append(out, rs[k].NodeSelectorRequirements()...)
	}
	return out
}

// Unmet names the first requirement (in key order) that a node with these
// labels does not satisfy, with what the node has instead; "" when the set
// matches. It is MatchesLabels with a reason a person can act on.
func (rs Requirements) Unmet(labels map[string]string) string {
	for _, k := range rs.Keys() {
		r := rs[k]
		v, ok := labels[k]
		switch {
		case !ok && !r.AllowsAbsence():
			return fmt.Sprintf("%s, and the node has no %s label", r, k)
		case ok && !r.Has(v):
			return fmt.Sprintf("%s, and the node has %s=%s", r, k, v)
		}
	}
	return ""
}

// CacheKey is the set, exactly (every value of every requirement, in key
// order): equal keys mean equal sets. String is for people and shortens.
func (rs Requirements) CacheKey() string {
	var b strings.Builder
	for _, k := range rs.Keys() {
		rs[k].appendKey(&b)
		b.WriteByte(';')
	}
	return b.String()
}
