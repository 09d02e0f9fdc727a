// Package overlay applies NodeOverlays (karpenter.sh/v1alpha1) to the
// instance types each NodePool may launch: a price or a price adjustment
// for the offerings an overlay's requirements select, extended resources
// for the instance types. It is pure: the simulator, `joiner plan` and the
// controller (behind the NodeOverlay feature gate) call the same Apply.
//
// What holds where several overlays select the same thing, as upstream's:
// overlays are taken by weight, highest first, equal weights by name
// descending. An offering's price is the first such overlay's: prices and
// adjustments do not stack (a "-20%" and a "+0.10" on one offering give
// the "-20%" of the higher weight, never both). An overlay of the same
// weight as one already pricing an offering is refused whole
// (ValidationSucceeded False, reason Conflict), on every NodePool, so no
// overlay is ever half applied.
//
// Capacity merges: each extended resource from the highest-weight overlay
// setting it, as upstream documents ("higher weights take precedence").
// Upstream's code instead lets a lower weight's value overwrite a higher
// one's for the same resource; DecisionsKarpenter reproduces that, so a
// prediction of upstream is upstream's. Two overlays of the same weight
// setting the same resource on the same type conflict.
package overlay

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// Mode says whose capacity merge to follow (see the package doc).
type Mode int

const (
	// HighestWeight: each resource from the highest-weight overlay.
	HighestWeight Mode = iota
	// UpstreamMerge: upstream's code, the last (lowest-weight) overlay's.
	UpstreamMerge
)

// Status is what became of one overlay.
type Status struct {
	Name string
	// Valid is false when the overlay was refused; Reason is then
	// v1alpha1.ReasonConflict or v1alpha1.ReasonRuntimeValidation.
	Valid           bool
	Reason, Message string
	// Selected counts the (NodePool, instance type) pairs it applied to.
	Selected int
}

// Change is what overlays did to one instance type of one NodePool.
type Change struct {
	// Price names the overlay that priced each changed offering, keyed
	// "zone/capacity-type".
	Price map[string]string
	// Capacity names the overlay behind each added resource.
	Capacity map[corev1.ResourceName]string
}

// Overlays are the names of the overlays behind the change, sorted.
func (c *Change) Overlays() []string {
	set := map[string]bool{}
	for _, n := range c.Price {
		set[n] = true
	}
	for _, n := range c.Capacity {
		set[n] = true
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Result is Apply's answer.
type Result struct {
	// InstanceTypes are the NodePools' instance types with the overlays
	// applied: a changed type is a copy (its unchanged offerings shared),
	// an unchanged one the input's pointer.
	InstanceTypes map[string][]*cloudprovider.InstanceType
	// Statuses, one per overlay, by name.
	Statuses []Status
	// Changes by NodePool, then instance type name.
	Changes map[string]map[string]*Change
}

// Behind names the overlays that changed the price or capacity of any of
// these instance types of the NodePool, sorted; nil for none, and for a
// nil Result.
func (r *Result) Behind(pool string, its []*cloudprovider.InstanceType) []string {
	if r == nil {
		return nil
	}
	set := map[string]bool{}
	for _, it := range its {
		if ch := r.Changes[pool][it.Name]; ch != nil {
			for _, n := range ch.Overlays() {
				set[n] = true
			}
		}
	}
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Status returns the named overlay's status.
func (r *Result) Status(name string) (Status, bool) {
	for _, s := range r.Statuses {
		if s.Name == name {
			return s, true
		}
	}
	return Status{}, false
}

// Apply applies the overlays to each NodePool's instance types (its, by
// NodePool name). Neither input is modified.
func Apply(pools []*v1.NodePool, its map[string][]*cloudprovider.InstanceType, overlays []*v1alpha1.NodeOverlay, mode Mode) *Result {
	ordered := append([]*v1alpha1.NodeOverlay(nil), overlays...)
	v1alpha1.OrderByWeight(ordered)
	st := &store{mode: mode, types: map[typeKey]*typeUpdate{}}
	statuses := map[string]*Status{}
	for _, o := range ordered {
		s := &Status{Name: o.Name, Valid: true}
		statuses[o.Name] = s
		if err := Validate(o); err != nil {
			s.Valid, s.Reason, s.Message = false, v1alpha1.ReasonRuntimeValidation, err.Error()
			continue
		}
		m := matcher{reqs: requirementsOf(o)}
		var hits []hit
		for _, np := range pools {
			for _, it := range its[np.Name] {
				if offs := m.offerings(np, it); len(offs) > 0 {
					hits = append(hits, hit{typeKey{np.Name, it.Name}, offs})
				}
			}
		}
		if why := st.conflict(o, hits); why != "" {
			s.Valid, s.Reason, s.Message = false, v1alpha1.ReasonConflict, why
			continue
		}
		st.record(o, hits)
		s.Selected = len(hits)
	}
	res := &Result{InstanceTypes: map[string][]*cloudprovider.InstanceType{}, Changes: map[string]map[string]*Change{}}
	for _, o := range overlays {
		if s, ok := statuses[o.Name]; ok {
			res.Statuses = append(res.Statuses, *s)
		}
	}
	sort.Slice(res.Statuses, func(i, j int) bool { return res.Statuses[i].Name < res.Statuses[j].Name })
	for _, np := range pools {
		list := its[np.Name]
		out := make([]*cloudprovider.InstanceType, len(list))
		for i, it := range list {
			u := st.types[typeKey{np.Name, it.Name}]
			if u == nil || u.empty() {
				out[i] = it
				continue
			}
			out[i] = u.apply(it)
			if res.Changes[np.Name] == nil {
				res.Changes[np.Name] = map[string]*Change{}
			}
			res.Changes[np.Name][it.Name] = u.change()
		}
		if list != nil {
			res.InstanceTypes[np.Name] = out
		}
	}
	return res
}

// Validate checks what the CRD's schema cannot: that requirements parse
// and capacity names no standard resource. Apply refuses an invalid
// overlay with reason RuntimeValidation.
func Validate(o *v1alpha1.NodeOverlay) error {
	var errs []string
	for i, r := range o.Spec.Requirements {
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(r.Values) == 0 {
				errs = append(errs, fmt.Sprintf("requirements[%d]: %s %s needs a value", i, r.Key, r.Operator))
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, v1.OpGte, v1.OpLte:
			if len(r.Values) != 1 {
				errs = append(errs, fmt.Sprintf("requirements[%d]: %s %s needs exactly one integer", i, r.Key, r.Operator))
			} else if _, err := strconv.ParseInt(r.Values[0], 10, 64); err != nil {
				errs = append(errs, fmt.Sprintf("requirements[%d]: %s %s %q is not an integer", i, r.Key, r.Operator, r.Values[0]))
			}
		default:
			errs = append(errs, fmt.Sprintf("requirements[%d]: unknown operator %q", i, r.Operator))
		}
		if r.Key == corev1.LabelHostname {
			errs = append(errs, fmt.Sprintf("requirements[%d]: label %s is restricted", i, r.Key))
		}
	}
	for name := range o.Spec.Capacity {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods:
			errs = append(errs, fmt.Sprintf("capacity: %s is a standard resource, which an overlay cannot change", name))
		}
	}
	if o.Spec.Price != nil && o.Spec.PriceAdjustment != nil {
		errs = append(errs, "price and priceAdjustment are both set")
	}
	if p := o.Spec.Price; p != nil {
		if _, err := strconv.ParseFloat(*p, 64); err != nil || strings.HasPrefix(*p, "-") {
			errs = append(errs, fmt.Sprintf("price %q is not a non-negative number", *p))
		}
	}
	if p := o.Spec.PriceAdjustment; p != nil {
		if _, err := parseAdjustment(*p); err != nil {
			errs = append(errs, err.Error())
		}
	}
	sort.Strings(errs)
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// AdjustedPrice is price after an overlay's price or priceAdjustment
// ("0.25", "+0.5", "-0.1", "+10%", "-15%"), never below zero.
func AdjustedPrice(price float64, o *v1alpha1.NodeOverlay) float64 {
	if o.Spec.Price != nil {
		p, _ := strconv.ParseFloat(*o.Spec.Price, 64)
		return p
	}
	if o.Spec.PriceAdjustment == nil {
		return price
	}
	a, _ := parseAdjustment(*o.Spec.PriceAdjustment)
	out := price + a.amount
	if a.percent {
		out = price * (1 + a.amount/100)
	}
	return max(out, 0)
}

type adjustment struct {
	amount  float64
	percent bool
}

func parseAdjustment(s string) (adjustment, error) {
	if !strings.HasPrefix(s, "+") && !strings.HasPrefix(s, "-") {
		return adjustment{}, fmt.Errorf("priceAdjustment %q needs a sign: +0.5, -0.1, +10%%, -15%%", s)
	}
	num, percent := strings.CutSuffix(s, "%")
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return adjustment{}, fmt.Errorf("priceAdjustment %q is not a signed number or percentage", s)
	}
	if percent && f < -100 {
		return adjustment{}, fmt.Errorf("priceAdjustment %q lowers the price by more than 100%%", s)
	}
	return adjustment{f, percent}, nil
}

func requirementsOf(o *v1alpha1.NodeOverlay) scheduling.Requirements {
	rs := make([]corev1.NodeSelectorRequirement, len(o.Spec.Requirements))
	for i, r := range o.Spec.Requirements {
		rs[i] = r.NodeSelectorRequirement()
	}
	return scheduling.FromCoreNodeSelectorRequirements(rs)
}

// matcher finds what of an instance type an overlay's requirements select.
type matcher struct{ reqs scheduling.Requirements }

// offerings are the type's offerings the overlay selects on the pool: none
// when its requirements do not fit the type's labels, the pool's name and
// the pool's template labels (a key the overlay requires that none of
// these sets does not fit), else those whose zone and capacity type fit.
func (m matcher) offerings(np *v1.NodePool, it *cloudprovider.InstanceType) cloudprovider.Offerings {
	labels := it.Requirements.Copy()
	labels.Add(scheduling.NewRequirement(v1.LabelNodePool, corev1.NodeSelectorOpIn, np.Name))
	labels.Merge(scheduling.FromLabels(np.Spec.Template.Labels))
	if labels.Compatible(m.reqs, nil) != nil {
		return nil
	}
	return it.Offerings.Compatible(m.reqs)
}

type typeKey struct{ pool, name string }

type hit struct {
	key  typeKey
	offs cloudprovider.Offerings
}

func offeringKey(o *cloudprovider.Offering) string { return o.Zone + "/" + o.CapacityType }

// store keeps, per (NodePool, instance type), what the overlays accepted
// so far set, in the order Apply takes them.
type store struct {
	mode  Mode
	types map[typeKey]*typeUpdate
}

type priceSet struct {
	overlay *v1alpha1.NodeOverlay // whose price holds
	// lowest is the weight of the last overlay that selected the
	// offering with a price: an equal weight after it conflicts.
	lowest int32
}

type capacitySet struct {
	overlay *v1alpha1.NodeOverlay
	value   resource.Quantity
	lowest  int32
}

type typeUpdate struct {
	price    map[string]*priceSet
	capacity map[corev1.ResourceName]*capacitySet
	// lastCapacity is, for UpstreamMerge, the weight and resources of the
	// last overlay that set capacity on the type: upstream checks a
	// conflict against that overlay only.
	lastCapacity *v1alpha1.NodeOverlay
}

func (u *typeUpdate) empty() bool { return len(u.price) == 0 && len(u.capacity) == 0 }

func (s *store) conflict(o *v1alpha1.NodeOverlay, hits []hit) string {
	w := o.WeightOf()
	hasPrice := o.Spec.Price != nil || o.Spec.PriceAdjustment != nil
	for _, h := range hits {
		u := s.types[h.key]
		if u == nil {
			continue
		}
		if hasPrice {
			for _, off := range h.offs {
				if p := u.price[offeringKey(off)]; p != nil && p.lowest == w {
					return fmt.Sprintf("conflicts with NodeOverlay %s (weight %d): both price %s %s on NodePool %s", p.overlay.Name, w, h.key.name, offeringKey(off), h.key.pool)
				}
			}
		}
		for _, name := range sortedResources(o.Spec.Capacity) {
			if s.mode == UpstreamMerge {
				if last := u.lastCapacity; last != nil && last.WeightOf() == w {
					if _, ok := last.Spec.Capacity[name]; ok {
						return fmt.Sprintf("conflicts with NodeOverlay %s (weight %d): both set %s on %s of NodePool %s", last.Name, w, name, h.key.name, h.key.pool)
					}
				}
				continue
			}
			if c := u.capacity[name]; c != nil && c.lowest == w {
				return fmt.Sprintf("conflicts with NodeOverlay %s (weight %d): both set %s on %s of NodePool %s", c.overlay.Name, w, name, h.key.name, h.key.pool)
			}
		}
	}
	return ""
}

func (s *store) record(o *v1alpha1.NodeOverlay, hits []hit) {
	w := o.WeightOf()
	hasPrice := o.Spec.Price != nil || o.Spec.PriceAdjustment != nil
	for _, h := range hits {
		u := s.types[h.key]
		if u == nil {
			u = &typeUpdate{price: map[string]*priceSet{}, capacity: map[corev1.ResourceName]*capacitySet{}}
			s.types[h.key] = u
		}
		if hasPrice {
			for _, off := range h.offs {
				k := offeringKey(off)
				if p := u.price[k]; p != nil {
					p.lowest = w
					continue
				}
				u.price[k] = &priceSet{overlay: o, lowest: w}
			}
		}
		if len(o.Spec.Capacity) == 0 {
			continue
		}
		for _, name := range sortedResources(o.Spec.Capacity) {
			c := u.capacity[name]
			switch {
			case c == nil:
				u.capacity[name] = &capacitySet{overlay: o, value: o.Spec.Capacity[name], lowest: w}
			case s.mode == UpstreamMerge:
				c.overlay, c.value, c.lowest = o, o.Spec.Capacity[name], w
			default:
				c.lowest = w
			}
		}
		u.lastCapacity = o
	}
}

// apply copies the instance type with the update's prices and capacity.
func (u *typeUpdate) apply(it *cloudprovider.InstanceType) *cloudprovider.InstanceType {
	cp := *it
	if len(u.price) > 0 {
		cp.Offerings = make(cloudprovider.Offerings, len(it.Offerings))
		for i, o := range it.Offerings {
			p := u.price[offeringKey(o)]
			if p == nil {
				cp.Offerings[i] = o
				continue
			}
			oc := *o
			oc.Price = AdjustedPrice(o.Price, p.overlay)
			cp.Offerings[i] = &oc
		}
	}
	if len(u.capacity) > 0 {
		cp.Capacity = it.Capacity.DeepCopy()
		if cp.Capacity == nil {
			cp.Capacity = corev1.ResourceList{}
		}
		for name, c := range u.capacity {
			cp.Capacity[name] = c.value.DeepCopy()
		}
	}
	return &cp
}

func (u *typeUpdate) change() *Change {
	c := &Change{}
	if len(u.price) > 0 {
		c.Price = map[string]string{}
		for k, p := range u.price {
			c.Price[k] = p.overlay.Name
		}
	}
	if len(u.capacity) > 0 {
		c.Capacity = map[corev1.ResourceName]string{}
		for name, s := range u.capacity {
			c.Capacity[name] = s.overlay.Name
		}
	}
	return c
}

func sortedResources(rl corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(rl))
	for n := range rl {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
