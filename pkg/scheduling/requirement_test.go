package scheduling

import (
	"math"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

var (
	opIn           = corev1.NodeSelectorOpIn
	opNotIn        = corev1.NodeSelectorOpNotIn
	opExists       = corev1.NodeSelectorOpExists
	opDoesNotExist = corev1.NodeSelectorOpDoesNotExist
	opGt           = corev1.NodeSelectorOpGt
	opLt           = corev1.NodeSelectorOpLt
	opGte          = corev1.NodeSelectorOperator(v1.OpGte)
	opLte          = corev1.NodeSelectorOperator(v1.OpLte)
)

// universe is the set of values the oracle checks membership over.
var universe = []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "a", "b", "c"}

// samples has, for every operator, requirements that overlap each other in
// interesting ways.
var samples = []*Requirement{
	NewRequirement("k", opIn, "1", "2", "a"),
	NewRequirement("k", opIn, "5"),
	NewRequirement("k", opNotIn, "2", "b"),
	NewRequirement("k", opNotIn, "5", "6", "7"),
	NewRequirement("k", opExists),
	NewRequirement("k", opDoesNotExist),
	NewRequirement("k", opGt, "3"),
	NewRequirement("k", opGt, "8"),
	NewRequirement("k", opLt, "4"),
	NewRequirement("k", opLt, "2"),
	NewRequirement("k", opGte, "5"),
	NewRequirement("k", opLte, "5"),
	NewRequirement("k", opLte, "0"),
}

// TestIntersectionOracle: for every ordered pair of sample requirements (so
// every operator pair), the intersection allows exactly the values both allow.
func TestIntersectionOracle(t *testing.T) {
	for _, a := range samples {
		for _, b := range samples {
			got := a.Intersection(b)
			for _, v := range universe {
				if want := a.Has(v) && b.Has(v); got.Has(v) != want {
					t.Errorf("(%s) ∩ (%s) = (%s): Has(%q) = %v, want %v", a, b, got, v, got.Has(v), want)
				}
			}
			// Intersection is commutative in what it allows.
			rev := b.Intersection(a)
			for _, v := range universe {
				if rev.Has(v) != got.Has(v) {
					t.Errorf("(%s) ∩ (%s) not commutative at %q", a, b, v)
				}
			}
		}
	}
}

func TestOperatorSemantics(t *testing.T) {
	tests := []struct {
		req      *Requirement
		has, not []string
		op       corev1.NodeSelectorOperator
		length   int
	}{
		{NewRequirement("k", opIn, "b", "a", "a"), []string{"a", "b"}, []string{"c"}, opIn, 2},
		{NewRequirement("k", opNotIn, "a"), []string{"b", "1"}, []string{"a"}, opNotIn, math.MaxInt - 1},
		{NewRequirement("k", opExists), []string{"a", "1"}, nil, opExists, math.MaxInt},
		{NewRequirement("k", opDoesNotExist), nil, []string{"a", "1"}, opDoesNotExist, 0},
		{NewRequirement("k", opGt, "3"), []string{"4", "100"}, []string{"3", "2", "a"}, opGt, math.MaxInt},
		{NewRequirement("k", opLt, "3"), []string{"2", "-5"}, []string{"3", "a"}, opLt, math.MaxInt},
		{NewRequirement("k", opGte, "3"), []string{"3", "4"}, []string{"2"}, opGt, math.MaxInt},
		{NewRequirement("k", opLte, "3"), []string{"3", "2"}, []string{"4"}, opLt, math.MaxInt},
		{NewRequirement("k", opGt, "x"), nil, []string{"1", "x"}, opDoesNotExist, 0},
		{NewRequirement("k", "Near", "x"), nil, []string{"x"}, opDoesNotExist, 0},
		{NewRequirement("k", opGt, "2").Intersection(NewRequirement("k", opLt, "6")), []string{"3", "5"}, []string{"2", "6"}, opNotIn, 3},
		{NewRequirement("k", opGt, "2").Intersection(NewRequirement("k", opLt, "4")).Intersection(NewRequirement("k", opNotIn, "3")), nil, []string{"3"}, opNotIn, 0},
		{NewRequirement("k", opGt, "5").Intersection(NewRequirement("k", opLt, "6")), nil, []string{"5", "6"}, opDoesNotExist, 0},
		{NewRequirement("k", opIn, "1", "5", "9").Intersection(NewRequirement("k", opGte, "5")), []string{"5", "9"}, []string{"1"}, opIn, 2},
		{NewRequirement("k", opNotIn, "a").Intersection(NewRequirement("k", opNotIn, "b")), []string{"c"}, []string{"a", "b"}, opNotIn, math.MaxInt - 2},
		{NewRequirement("k", opExists).Intersection(NewRequirement("k", opDoesNotExist)), nil, []string{"a"}, opDoesNotExist, 0},
	}
	for _, tc := range tests {
		t.Run(tc.req.String(), func(t *testing.T) {
			for _, v := range tc.has {
				if !tc.req.Has(v) {
					t.Errorf("want Has(%q)", v)
				}
			}
			for _, v := range tc.not {
				if tc.req.Has(v) {
					t.Errorf("want !Has(%q)", v)
				}
			}
			if op := tc.req.Operator(); op != tc.op {
				t.Errorf("Operator() = %s, want %s", op, tc.op)
			}
			if n := tc.req.Len(); n != tc.length {
				t.Errorf("Len() = %d, want %d", n, tc.length)
			}
		})
	}
}

// TestIntersects covers the absence rule: NotIn and DoesNotExist are both
// satisfied by a node without the label.
func TestIntersects(t *testing.T) {
	tests := []struct {
		a, b *Requirement
		want bool
	}{
		{NewRequirement("k", opIn, "a"), NewRequirement("k", opIn, "a", "b"), true},
		{NewRequirement("k", opIn, "a"), NewRequirement("k", opIn, "b"), false},
		{NewRequirement("k", opIn, "a"), NewRequirement("k", opNotIn, "a"), false},
		{NewRequirement("k", opNotIn, "a"), NewRequirement("k", opDoesNotExist), true},
		{NewRequirement("k", opDoesNotExist), NewRequirement("k", opDoesNotExist), true},
		{NewRequirement("k", opExists), NewRequirement("k", opDoesNotExist), false},
		{NewRequirement("k", opGt, "4"), NewRequirement("k", opLt, "5"), false},
		{NewRequirement("k", opGte, "4"), NewRequirement("k", opLte, "4"), true},
		{NewRequirement("k", opGt, "4"), NewRequirement("k", opIn, "5"), true},
		{NewRequirement("k", opGt, "4"), NewRequirement("k", opDoesNotExist), false},
	}
	for _, tc := range tests {
		if got := tc.a.Intersects(tc.b); got != tc.want {
			t.Errorf("(%s).Intersects(%s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := tc.b.Intersects(tc.a); got != tc.want {
			t.Errorf("(%s).Intersects(%s) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestMinValues(t *testing.T) {
	two, three := 2, 3
	a := FromNodeSelectorRequirement(v1.NodeSelectorRequirementWithMinValues{Key: "family", Operator: opIn, Values: []string{"m5", "m6i", "c6i"}, MinValues: &two})
	b := FromNodeSelectorRequirement(v1.NodeSelectorRequirementWithMinValues{Key: "family", Operator: opExists, MinValues: &three})
	if got := a.Intersection(b).MinValues; got == nil || *got != 3 {
		t.Fatalf("minValues of intersection = %v, want the larger, 3", got)
	}
	if got := a.Intersection(NewRequirement("family", opNotIn, "m5")).MinValues; got == nil || *got != 2 {
		t.Fatalf("minValues survives intersection with a plain requirement: %v", got)
	}
	if got := NewRequirement("family", opIn, "a").Intersection(NewRequirement("family", opIn, "a")).MinValues; got != nil {
		t.Fatalf("no minValues in, none out: %v", *got)
	}
	*a.MinValues = 10 // the intersection must hold its own copy
	if got := a.Intersection(NewRequirement("family", opExists)).MinValues; *got != 10 {
		t.Fatal("sanity")
	}
	if !strings.Contains(a.String(), "minValues 10") {
		t.Errorf("String() omits minValues: %s", a)
	}
}

func TestRequirementsCompatible(t *testing.T) {
	pool := NewRequirements(
		NewRequirement(v1.LabelCapacityType, opIn, "spot", "on-demand"),
		NewRequirement("team", opIn, "a"),
	)
	wellKnown := func(k string) bool { return k == v1.LabelZone }
	tests := []struct {
		name string
		pod  Requirements
		want string // substring of the error; "" for compatible
	}{
		{"matching", NewRequirements(NewRequirement(v1.LabelCapacityType, opIn, "spot")), ""},
		{"conflict", NewRequirements(NewRequirement(v1.LabelCapacityType, opIn, "reserved")), "karpenter.sh/capacity-type In [reserved], but only karpenter.sh/capacity-type In [on-demand spot]"},
		{"undefined custom label", NewRequirements(NewRequirement("gpu", opExists)), `label "gpu" is not defined`},
		{"undefined NotIn ok", NewRequirements(NewRequirement("gpu", opNotIn, "true")), ""},
		{"undefined DoesNotExist ok", NewRequirements(NewRequirement("gpu", opDoesNotExist)), ""},
		{"undefined well-known ok", NewRequirements(NewRequirement(v1.LabelZone, opIn, "us-east-1a")), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := pool.Compatible(tc.pod, wellKnown)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
		})
	}
	labels := NewRequirements(NewRequirement("a", opIn, "x"), NewRequirement("b", opIn, "y", "z")).Labels()
	if len(labels) != 1 || labels["a"] != "x" {
		t.Errorf("Labels() = %v, want only the pinned a=x", labels)
	}
}

func TestAny(t *testing.T) {
	for _, r := range samples {
		v, ok := r.Any()
		if ok && !r.Has(v) {
			t.Errorf("(%s).Any() = %q, which it does not allow", r, v)
		}
		if _, err := strconv.Atoi(v); ok && r.gt != nil && err != nil {
			t.Errorf("(%s).Any() = %q is not a number", r, v)
		}
	}
}

// FuzzIntersection: whatever two requirements are built from, intersecting
// them never panics and allows exactly what both allow.
func FuzzIntersection(f *testing.F) {
	f.Add(uint8(0), uint8(1), "1,2,a", "2,b", "5")
	f.Add(uint8(4), uint8(6), "", "3", "x")
	f.Add(uint8(6), uint8(7), "9223372036854775807", "-9223372036854775808", "0")
	ops := []corev1.NodeSelectorOperator{opIn, opNotIn, opExists, opDoesNotExist, opGt, opLt, opGte, opLte}
	f.Fuzz(func(t *testing.T, opA, opB uint8, valsA, valsB, probe string) {
		a := NewRequirement("k", ops[int(opA)%len(ops)], splitNonEmpty(valsA)...)
		b := NewRequirement("k", ops[int(opB)%len(ops)], splitNonEmpty(valsB)...)
		got := a.Intersection(b)
		probes := append(append(splitNonEmpty(valsA), splitNonEmpty(valsB)...), probe, "0", "1", "-1")
		for _, v := range probes {
			if want := a.Has(v) && b.Has(v); got.Has(v) != want {
				t.Fatalf("(%s) ∩ (%s) = (%s): Has(%q) = %v, want %v", a, b, got, v, got.Has(v), want)
			}
		}
		_ = got.Len()
		_ = got.String()
		// Intersects takes shortcuts; it must agree with the intersection.
		if want := got.Len() > 0 || a.AllowsAbsence() && b.AllowsAbsence(); a.Intersects(b) != want || b.Intersects(a) != want {
			t.Fatalf("(%s).Intersects(%s) = %v, reverse %v, want %v", a, b, a.Intersects(b), b.Intersects(a), want)
		}
		if v, ok := got.Any(); ok && !got.Has(v) {
			t.Fatalf("Any() = %q not allowed by %s", v, got)
		}
	})
}

func splitNonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func TestNodeSelectorRequirementsRoundTrip(t *testing.T) {
	two := 2
	in := NewRequirements(
		NewRequirement("zone", corev1.NodeSelectorOpIn, "b", "a"),
		NewRequirement("arch", corev1.NodeSelectorOpNotIn, "arm64"),
		NewRequirement("gpu", corev1.NodeSelectorOpExists),
		NewRequirement("spot", corev1.NodeSelectorOpDoesNotExist),
	)
	cpu := NewRequirement("cpu", v1.OpGte, "4").Intersection(NewRequirement("cpu", corev1.NodeSelectorOpLt, "64")).
		Intersection(NewRequirement("cpu", corev1.NodeSelectorOpNotIn, "8"))
	in.Add(cpu)
	family := NewRequirement("family", corev1.NodeSelectorOpIn, "m", "c", "r")
	family.MinValues = &two
	in.Add(family)
	out := FromNodeSelectorRequirements(in.NodeSelectorRequirements())
	if in.String() != out.String() {
		t.Errorf("round trip changed the requirements:\n in  %s\n out %s", in, out)
	}
	for _, v := range []string{"3", "4", "8", "63", "64"} {
		if in.Get("cpu").Has(v) != out.Get("cpu").Has(v) {
			t.Errorf("cpu %s: in %v, out %v", v, in.Get("cpu").Has(v), out.Get("cpu").Has(v))
		}
	}
}
