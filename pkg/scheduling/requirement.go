// Package scheduling is the pure algebra Joiner schedules with: label
// requirements (In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte, minValues),
// taints and tolerations, node affinity with its preferences, and pod
// resource requests. It imports no client and keeps no state.
package scheduling

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// Requirement is the set of values a label may take. It is either a finite
// set (In; DoesNotExist when empty) or the complement of one (NotIn; Exists
// when empty), optionally narrowed to an integer range (Gt/Lt/Gte/Lte, kept
// as exclusive bounds). Values are sorted and unique, so every operation is
// deterministic. A Requirement is immutable once built.
type Requirement struct {
	Key        string
	complement bool
	values     []string
	gt, lt     *int64 // exclusive bounds; nil means unbounded
	// MinValues asks for at least this many distinct values among the
	// instance types a NodeClaim keeps.
	MinValues *int
}

// NewRequirement builds a requirement from an operator and values. Gt, Lt,
// Gte and Lte take one integer; a value that is not one yields a requirement
// nothing satisfies (the API rejects such manifests before they get here).
func NewRequirement(key string, op corev1.NodeSelectorOperator, values ...string) *Requirement {
	r := &Requirement{Key: key}
	switch op {
	case corev1.NodeSelectorOpIn:
		r.values = sortedUnique(values)
	case corev1.NodeSelectorOpNotIn:
		r.complement = true
		r.values = sortedUnique(values)
	case corev1.NodeSelectorOpExists:
		r.complement = true
	case corev1.NodeSelectorOpDoesNotExist:
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, v1.OpGte, v1.OpLte:
		n, err := strconv.ParseInt(firstOr(values, ""), 10, 64)
		if err != nil || len(values) != 1 {
			return r // empty set
		}
		r.complement = true
		// Bounds are exclusive; Gte/Lte at the ends of int64 are unbounded,
		// and Gt/Lt beyond them allow nothing.
		switch {
		case op == corev1.NodeSelectorOpGt && n == math.MaxInt64,
			op == corev1.NodeSelectorOpLt && n == math.MinInt64:
			return &Requirement{Key: key}
		case op == corev1.NodeSelectorOpGt:
			r.gt = &n
		case op == corev1.NodeSelectorOpLt:
			r.lt = &n
		case op == v1.OpGte && n != math.MinInt64:
			r.gt = ptr(n - 1)
		case op == v1.OpLte && n != math.MaxInt64:
			r.lt = ptr(n + 1)
		}
	default:
		return r // unknown operator: nothing satisfies it
	}
	return r
}

// FromNodeSelectorRequirement converts an API requirement, with minValues.
func FromNodeSelectorRequirement(in v1.NodeSelectorRequirementWithMinValues) *Requirement {
	r := NewRequirement(in.Key, in.Operator, in.Values...)
	if in.MinValues != nil {
		m := *in.MinValues
		r.MinValues = &m
	}
	return r
}

func firstOr(v []string, def string) string {
	if len(v) > 0 {
		return v[0]
	}
	return def
}

func ptr[T any](v T) *T { return &v }

func sortedUnique(v []string) []string {
	out := slices.Clone(v)
	sort.Strings(out)
	return slices.Compact(out)
}

// Has reports whether value is allowed.
func (r *Requirement) Has(value string) bool {
	if !r.complement {
		_, found := slices.BinarySearch(r.values, value)
		return found
	}
	if _, found := slices.BinarySearch(r.values, value); found {
		return false
	}
	return r.inRange(value)
}

func (r *Requirement) inRange(value string) bool {
	if r.gt == nil && r.lt == nil {
		return true
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return false
	}
	return (r.gt == nil || n > *r.gt) && (r.lt == nil || n < *r.lt)
}

// Len is the number of allowed values; math.MaxInt for an open set.
func (r *Requirement) Len() int {
	if r.complement {
		if r.gt != nil && r.lt != nil {
			if *r.gt < 0 && *r.lt > math.MaxInt64+*r.gt {
				return math.MaxInt - len(r.values) // wider than int64 can count
			}
			n := *r.lt - *r.gt - 1 - int64(r.excludedInRange())
			return int(max(n, 0))
		}
		return math.MaxInt - len(r.values)
	}
	return len(r.values)
}

func (r *Requirement) excludedInRange() int {
	n := 0
	for _, v := range r.values {
		if r.inRange(v) {
			n++
		}
	}
	return n
}

// Values returns the allowed values of a finite set (nil for an open set).
func (r *Requirement) Values() []string {
	if r.complement {
		return nil
	}
	return slices.Clone(r.values)
}

// Operator is the operator that best describes the set.
func (r *Requirement) Operator() corev1.NodeSelectorOperator {
	switch {
	case r.complement && r.gt == nil && r.lt == nil && len(r.values) == 0:
		return corev1.NodeSelectorOpExists
	case r.complement && r.gt != nil && r.lt == nil && len(r.values) == 0:
		return corev1.NodeSelectorOpGt
	case r.complement && r.lt != nil && r.gt == nil && len(r.values) == 0:
		return corev1.NodeSelectorOpLt
	case r.complement:
		return corev1.NodeSelectorOpNotIn
	case len(r.values) == 0:
		return corev1.NodeSelectorOpDoesNotExist
	default:
		return corev1.NodeSelectorOpIn
	}
}

// Intersection is the set of values both requirements allow; minValues is
// the larger of the two.
func (r *Requirement) Intersection(o *Requirement) *Requirement {
	out := &Requirement{Key: r.Key, gt: maxBound(r.gt, o.gt), lt: minBound(r.lt, o.lt)}
	switch {
	case r.complement && o.complement:
		out.complement = true
		out.values = union(r.values, o.values)
		if out.gt != nil && out.lt != nil && *out.gt+1 >= *out.lt {
			out = &Requirement{Key: r.Key} // no integer in the range
		}
	case r.complement:
		out.values = filter(o.values, r.Has)
		out.gt, out.lt = nil, nil
	case o.complement:
		out.values = filter(r.values, o.Has)
		out.gt, out.lt = nil, nil
	default:
		out.values = intersect(r.values, o.values)
		out.gt, out.lt = nil, nil
	}
	switch {
	case r.MinValues != nil && o.MinValues != nil:
		out.MinValues = ptr(max(*r.MinValues, *o.MinValues))
	case r.MinValues != nil:
		out.MinValues = ptr(*r.MinValues)
	case o.MinValues != nil:
		out.MinValues = ptr(*o.MinValues)
	}
	return out
}

// AllowsAbsence reports whether a node without the label satisfies the
// requirement (NotIn and DoesNotExist do, as in Kubernetes node affinity).
func (r *Requirement) AllowsAbsence() bool {
	op := r.Operator()
	return op == corev1.NodeSelectorOpNotIn || op == corev1.NodeSelectorOpDoesNotExist
}

// Intersects reports whether some node can satisfy both requirements: they
// share a value, or both are satisfied by the label's absence.
func (r *Requirement) Intersects(o *Requirement) bool {
	// Without two complements the shared values are those of a finite
	// side the other has: found without building the intersection (this
	// runs per instance type per pod placed).
	var shared bool
	switch {
	case !r.complement:
		shared = slices.ContainsFunc(r.values, o.Has)
	case !o.complement:
		shared = slices.ContainsFunc(o.values, r.Has)
	default:
		shared = r.Intersection(o).Len() > 0
	}
	return shared || r.AllowsAbsence() && o.AllowsAbsence()
}

// Any returns an allowed value (the smallest, for a finite set), for labelling
// a node; ok is false when no value is allowed or the set is open without a
// range.
func (r *Requirement) Any() (string, bool) {
	if !r.complement {
		if len(r.values) == 0 {
			return "", false
		}
		return r.values[0], true
	}
	if r.gt != nil || r.lt != nil {
		start := int64(0)
		if r.gt != nil {
			start = *r.gt + 1 // cannot overflow: Gt MaxInt64 allows nothing
		} else if r.lt != nil && *r.lt <= 0 {
			start = *r.lt - int64(len(r.values)) - 1
		}
		// At most len(values) candidates are excluded, so one more suffices.
		for i, n := 0, start; i <= len(r.values) && (r.lt == nil || n < *r.lt); i, n = i+1, n+1 {
			if s := strconv.FormatInt(n, 10); r.Has(s) {
				return s, true
			}
		}
	}
	return "", false
}

// String renders the requirement as a person reads it: "zone In [a b]".
func (r *Requirement) String() string {
	var parts []string
	switch op := r.Operator(); op {
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		parts = append(parts, string(op))
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		parts = append(parts, fmt.Sprintf("%s [%s]", op, strings.Join(truncate(r.values, 8), " ")))
	}
	if r.complement {
		if r.gt != nil {
			parts = append(parts, fmt.Sprintf("Gt %d", *r.gt))
		}
		if r.lt != nil {
			parts = append(parts, fmt.Sprintf("Lt %d", *r.lt))
		}
		if len(r.values) > 0 && (r.gt != nil || r.lt != nil) {
			parts = append(parts, fmt.Sprintf("NotIn [%s]", strings.Join(truncate(r.values, 8), " ")))
		}
	}
	s := r.Key + " " + strings.Join(slices.Compact(parts), ", ")
	if r.MinValues != nil {
		s += fmt.Sprintf(" (minValues %d)", *r.MinValues)
	}
	return s
}

func truncate(v []string, n int) []string {
	if len(v) <= n {
		return v
	}
	return append(slices.Clone(v[:n]), fmt.Sprintf("and %d more", len(v)-n))
}

func maxBound(a, b *int64) *int64 {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case *a > *b:
		return a
	default:
		return b
	}
}

func minBound(a, b *int64) *int64 {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case *a < *b:
		return a
	default:
		return b
	}
}

func union(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		case a[i] > b[j]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

func intersect(a, b []string) []string {
	var out []string
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

func filter(v []string, keep func(string) bool) []string {
	var out []string
	for _, s := range v {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// NodeSelectorRequirements expresses the requirement in the API's terms:
// one entry, or for a bounded complement one per bound plus NotIn. minValues
// rides on the first.
func (r *Requirement) NodeSelectorRequirements() []v1.NodeSelectorRequirementWithMinValues {
	var out []v1.NodeSelectorRequirementWithMinValues
	add := func(op corev1.NodeSelectorOperator, values ...string) {
		out = append(out, v1.NodeSelectorRequirementWithMinValues{Key: r.Key, Operator: op, Values: values})
	}
	switch op := r.Operator(); {
	case op == corev1.NodeSelectorOpIn:
		add(op, slices.Clone(r.values)...)
	case op == corev1.NodeSelectorOpExists || op == corev1.NodeSelectorOpDoesNotExist:
		add(op)
	default:
		if r.gt != nil {
			add(corev1.NodeSelectorOpGt, strconv.FormatInt(*r.gt, 10))
		}
		if r.lt != nil {
			add(corev1.NodeSelectorOpLt, strconv.FormatInt(*r.lt, 10))
		}
		if len(r.values) > 0 {
			add(corev1.NodeSelectorOpNotIn, slices.Clone(r.values)...)
		}
	}
	if r.MinValues != nil {
		m := *r.MinValues
		out[0].MinValues = &m
	}
	return out
}

// appendKey writes the requirement exactly, every value and bound, for use
// as a cache key (String shortens long value lists for people).
func (r *Requirement) appendKey(b *strings.Builder) {
	b.WriteString(r.Key)
	if r.complement {
		b.WriteString(" !")
	}
	for _, v := range r.values {
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(v))
	}
	if r.gt != nil {
		b.WriteString(" >")
		b.WriteString(strconv.FormatInt(*r.gt, 10))
	}
	if r.lt != nil {
		b.WriteString(" <")
		b.WriteString(strconv.FormatInt(*r.lt, 10))
	}
	if r.MinValues != nil {
		b.WriteString(" min")
		b.WriteString(strconv.Itoa(*r.MinValues))
	}
}

// CacheKey is the requirement, exactly: equal keys mean equal requirements.
func (r *Requirement) CacheKey() string {
	var b strings.Builder
	r.appendKey(&b)
	return b.String()
}
