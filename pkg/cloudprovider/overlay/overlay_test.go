package overlay

import (
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

func typ(name, family string, price float64) *cloudprovider.InstanceType {
	var offs cloudprovider.Offerings
	for _, z := range []string{"zone-a", "zone-b"} {
		offs = append(offs,
			&cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
			&cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeSpot, Price: price / 3, Available: true})
	}
	return &cloudprovider.InstanceType{
		Name: name,
		Requirements: scheduling.NewRequirements(
			scheduling.NewRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, name),
			scheduling.NewRequirement("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, family),
			scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, "zone-a", "zone-b"),
			scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot, v1.CapacityTypeOnDemand),
		),
		Offerings: offs,
		Capacity:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")},
	}
}

func pool(name string, labels map[string]string) *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.Labels = labels
	return np
}

type spec func(*v1alpha1.NodeOverlay)

func ov(name string, weight int32, reqs []v1alpha1.Requirement, fs ...spec) *v1alpha1.NodeOverlay {
	o := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if weight > 0 {
		o.Spec.Weight = &weight
	}
	o.Spec.Requirements = reqs
	for _, f := range fs {
		f(o)
	}
	return o
}

func adjust(s string) spec { return func(o *v1alpha1.NodeOverlay) { o.Spec.PriceAdjustment = &s } }
func price(s string) spec  { return func(o *v1alpha1.NodeOverlay) { o.Spec.Price = &s } }
func capacity(kv ...string) spec {
	return func(o *v1alpha1.NodeOverlay) {
		o.Spec.Capacity = corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			o.Spec.Capacity[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
	}
}

func in(key string, values ...string) v1alpha1.Requirement {
	return v1alpha1.Requirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func family(f string) []v1alpha1.Requirement {
	return []v1alpha1.Requirement{in("karpenter.k8s.aws/instance-family", f)}
}

func priceOf(t *testing.T, its []*cloudprovider.InstanceType, name, zone, ct string) float64 {
	t.Helper()
	for _, it := range its {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == ct {
				return o.Price
			}
		}
	}
	t.Fatalf("no offering %s %s %s", name, zone, ct)
	return 0
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestAdjustedPrice(t *testing.T) {
	for _, tc := range []struct {
		spec spec
		want float64
	}{
		{adjust("+10%"), 1.1},
		{adjust("-15%"), 0.85},
		{adjust("-100%"), 0},
		{adjust("+0.25"), 1.25},
		{adjust("-2"), 0}, // never below zero
		{price("0.4"), 0.4},
	} {
		o := ov("x", 0, nil, tc.spec)
		if got := AdjustedPrice(1, o); !near(got, tc.want) {
			t.Errorf("%v: got %v, want %v", o.Spec, got, tc.want)
		}
	}
}

func TestPriceBySelectorAndWeight(t *testing.T) {
	m6i, c6i := typ("m6i.xlarge", "m6i", 0.192), typ("c6i.xlarge", "c6i", 0.17)
	pools := []*v1.NodePool{pool("general", nil)}
	its := map[string][]*cloudprovider.InstanceType{"general": {m6i, c6i}}
	spotOnly := append(family("m6i"), in(v1.LabelCapacityType, v1.CapacityTypeSpot))
	res := Apply(pools, its, []*v1alpha1.NodeOverlay{
		ov("savings-plan", 10, family("m6i"), adjust("-20%")),
		ov("licence", 5, family("m6i"), adjust("+1")), // lower weight: m6i is already priced
		ov("spot-fee", 0, spotOnly, adjust("+0.01")),  // also lower
		ov("c-zone-b", 1, []v1alpha1.Requirement{in("karpenter.k8s.aws/instance-family", "c6i"), in(v1.LabelZone, "zone-b")}, price("0.05")),
	}, HighestWeight)
	got := res.InstanceTypes["general"]
	if p := priceOf(t, got, "m6i.xlarge", "zone-a", v1.CapacityTypeOnDemand); !near(p, 0.192*0.8) {
		t.Errorf("m6i on-demand: %v, want the savings plan's -20%% only (%v)", p, 0.192*0.8)
	}
	if p := priceOf(t, got, "m6i.xlarge", "zone-b", v1.CapacityTypeSpot); !near(p, 0.192/3*0.8) {
		t.Errorf("m6i spot: %v, want -20%% (adjustments do not stack)", p)
	}
	if p := priceOf(t, got, "c6i.xlarge", "zone-b", v1.CapacityTypeOnDemand); p != 0.05 {
		t.Errorf("c6i zone-b: %v, want the set price 0.05", p)
	}
	if p := priceOf(t, got, "c6i.xlarge", "zone-a", v1.CapacityTypeOnDemand); p != 0.17 {
		t.Errorf("c6i zone-a: %v, want unchanged 0.17", p)
	}
	// The input is not modified; an untouched offering is shared.
	if m6i.Offerings[0].Price != 0.192 {
		t.Errorf("input modified: %v", m6i.Offerings[0].Price)
	}
	for _, s := range res.Statuses {
		if !s.Valid {
			t.Errorf("%s refused: %s", s.Name, s.Message)
		}
	}
	ch := res.Changes["general"]["m6i.xlarge"]
	if ch == nil || ch.Price["zone-a/on-demand"] != "savings-plan" || strings.Join(ch.Overlays(), ",") != "savings-plan" {
		t.Errorf("m6i change: %+v", ch)
	}
	if ch := res.Changes["general"]["c6i.xlarge"]; ch == nil || len(ch.Price) != 2 || ch.Price["zone-b/spot"] != "c-zone-b" {
		t.Errorf("c6i change: %+v", ch)
	}
}

// TestEqualWeightConflictRefusesTheWholeOverlay: two overlays of one
// weight pricing the same offering conflict; the later in upstream's
// order (names descending: "a" after "b") is refused on every pool,
// including one where it would not conflict.
func TestEqualWeightConflictRefusesTheWholeOverlay(t *testing.T) {
	pools := []*v1.NodePool{pool("general", nil), pool("batch", nil)}
	its := map[string][]*cloudprovider.InstanceType{
		"general": {typ("m6i.xlarge", "m6i", 0.192)},
		"batch":   {typ("c6i.xlarge", "c6i", 0.17)},
	}
	b := ov("b-general", 10, []v1alpha1.Requirement{in(v1.LabelNodePool, "general")}, adjust("+10%"))
	a := ov("a-everything", 10, nil, adjust("-10%"))
	res := Apply(pools, its, []*v1alpha1.NodeOverlay{a, b}, HighestWeight)
	sa, _ := res.Status("a-everything")
	sb, _ := res.Status("b-general")
	if !sb.Valid || sa.Valid || sa.Reason != v1alpha1.ReasonConflict || !strings.Contains(sa.Message, "b-general") {
		t.Fatalf("want a-everything refused for a conflict with b-general: %+v %+v", sa, sb)
	}
	if p := priceOf(t, res.InstanceTypes["batch"], "c6i.xlarge", "zone-a", v1.CapacityTypeOnDemand); p != 0.17 {
		t.Errorf("batch: %v, the refused overlay must not apply anywhere", p)
	}
	if p := priceOf(t, res.InstanceTypes["general"], "m6i.xlarge", "zone-a", v1.CapacityTypeOnDemand); !near(p, 0.192*1.1) {
		t.Errorf("general: %v, want b-general's +10%%", p)
	}
}

func TestSelectsByPoolAndTemplateLabels(t *testing.T) {
	pools := []*v1.NodePool{pool("ml", map[string]string{"team": "ml"}), pool("web", nil)}
	m := typ("m6i.xlarge", "m6i", 0.2)
	its := map[string][]*cloudprovider.InstanceType{"ml": {m}, "web": {m}}
	res := Apply(pools, its, []*v1alpha1.NodeOverlay{
		ov("ml-licence", 0, []v1alpha1.Requirement{in("team", "ml")}, adjust("+1")),
		// NotIn on a label nothing sets selects everything.
		ov("not-gpu", 0, []v1alpha1.Requirement{{Key: "gpu", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"yes"}}}, capacity("example.com/licence", "1")),
	}, HighestWeight)
	if p := priceOf(t, res.InstanceTypes["ml"], "m6i.xlarge", "zone-a", v1.CapacityTypeOnDemand); !near(p, 1.2) {
		t.Errorf("ml: %v, want +1", p)
	}
	if p := priceOf(t, res.InstanceTypes["web"], "m6i.xlarge", "zone-a", v1.CapacityTypeOnDemand); p != 0.2 {
		t.Errorf("web: %v, a pool without label team is not selected", p)
	}
	for _, np := range []string{"ml", "web"} {
		got := res.InstanceTypes[np][0]
		if q := got.Capacity["example.com/licence"]; q.Value() != 1 {
			t.Errorf("%s: capacity %v, want example.com/licence 1", np, got.Capacity)
		}
		if q := got.Allocatable()["example.com/licence"]; q.Value() != 1 {
			t.Errorf("%s: allocatable %v, want the extended resource allocatable", np, got.Allocatable())
		}
	}
	if _, ok := m.Capacity["example.com/licence"]; ok {
		t.Error("input capacity modified")
	}
	if s, _ := res.Status("ml-licence"); s.Selected != 1 {
		t.Errorf("ml-licence selected %d types, want 1", s.Selected)
	}
}

// TestCapacityMerge: resources from several overlays merge; where two set
// the same one, Joiner keeps the higher weight's (upstream's docs), and
// the upstream mode the lower's (upstream's code).
func TestCapacityMerge(t *testing.T) {
	pools := []*v1.NodePool{pool("gpu", nil)}
	its := map[string][]*cloudprovider.InstanceType{"gpu": {typ("g5.xlarge", "g5", 1)}}
	overlays := []*v1alpha1.NodeOverlay{
		ov("high", 50, nil, capacity("example.com/slices", "8", "example.com/licence", "1")),
		ov("low", 10, nil, capacity("example.com/slices", "4", "example.com/fpga", "2")),
	}
	for _, tc := range []struct {
		mode   Mode
		slices int64
		from   string
	}{{HighestWeight, 8, "high"}, {UpstreamMerge, 4, "low"}} {
		res := Apply(pools, its, overlays, tc.mode)
		c := res.InstanceTypes["gpu"][0].Capacity
		if s := c["example.com/slices"]; s.Value() != tc.slices {
			t.Errorf("mode %d: slices %v, want %d", tc.mode, s.Value(), tc.slices)
		}
		if l, f := c["example.com/licence"], c["example.com/fpga"]; l.Value() != 1 || f.Value() != 2 {
			t.Errorf("mode %d: want licence 1 and fpga 2 merged, got %v", tc.mode, c)
		}
		if from := res.Changes["gpu"]["g5.xlarge"].Capacity["example.com/slices"]; from != tc.from {
			t.Errorf("mode %d: slices from %q, want %q", tc.mode, from, tc.from)
		}
	}
	// Equal weights on the same resource conflict.
	res := Apply(pools, its, []*v1alpha1.NodeOverlay{
		ov("x", 10, nil, capacity("example.com/slices", "8")),
		ov("y", 10, nil, capacity("example.com/slices", "4")),
	}, HighestWeight)
	if sx, _ := res.Status("x"); sx.Valid || sx.Reason != v1alpha1.ReasonConflict {
		t.Errorf("want x (after y by name descending) refused: %+v", sx)
	}
}

func TestRuntimeValidation(t *testing.T) {
	pools := []*v1.NodePool{pool("general", nil)}
	its := map[string][]*cloudprovider.InstanceType{"general": {typ("m6i.xlarge", "m6i", 0.2)}}
	res := Apply(pools, its, []*v1alpha1.NodeOverlay{
		ov("cpu", 0, nil, capacity("cpu", "2")),
		ov("gt", 0, []v1alpha1.Requirement{{Key: "karpenter.k8s.aws/instance-cpu", Operator: corev1.NodeSelectorOpGt, Values: []string{"many"}}}, adjust("+1")),
		ov("unsigned", 0, nil, adjust("10%")),
	}, HighestWeight)
	for name, want := range map[string]string{"cpu": "cpu is a standard resource", "gt": `"many" is not an integer`, "unsigned": "needs a sign"} {
		s, _ := res.Status(name)
		if s.Valid || s.Reason != v1alpha1.ReasonRuntimeValidation || !strings.Contains(s.Message, want) {
			t.Errorf("%s: %+v, want RuntimeValidation with %q", name, s, want)
		}
	}
	if res.InstanceTypes["general"][0] != its["general"][0] {
		t.Error("refused overlays changed an instance type")
	}
}
