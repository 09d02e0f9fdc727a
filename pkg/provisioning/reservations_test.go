package provisioning

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// reserved gives a type a reserved offering: reservation id in zone with
// capacity left, priced as upstream's provider prices one.
func reserved(id, zone string, capacity int) func(*cloudprovider.InstanceType) {
	return func(t *cloudprovider.InstanceType) {
		od := t.Offerings.Compatible(scheduling.NewRequirements(
			scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, zone),
			scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand))).Cheapest()
		t.Offerings = append(t.Offerings, &cloudprovider.Offering{Zone: zone, CapacityType: v1.CapacityTypeReserved, Price: od.Price / 10_000_000,
			Available: capacity > 0, Reservation: &cloudprovider.Reservation{ID: id, Capacity: capacity, Type: cloudprovider.ReservationTypeDefault}})
		t.Requirements[v1.LabelCapacityType] = scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn,
			v1.CapacityTypeSpot, v1.CapacityTypeOnDemand, v1.CapacityTypeReserved)
		ids := append(t.Requirements.Get(cloudprovider.ReservationIDLabel).Values(), id)
		t.Requirements[cloudprovider.ReservationIDLabel] = scheduling.NewRequirement(cloudprovider.ReservationIDLabel, corev1.NodeSelectorOpIn, ids...)
	}
}

func reservedOrOnDemand() poolOpt {
	return requirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved, v1.CapacityTypeOnDemand)
}

// heldReservations is what a plan is pinned to: its capacity type and
// reservation IDs ("" and nil for an unreserved plan).
func heldReservations(p *NodeClaimPlan) (string, []string) {
	ct := p.Requirements.Get(v1.LabelCapacityType).Values()
	if !slices.Equal(ct, []string{v1.CapacityTypeReserved}) {
		return "", nil
	}
	return v1.CapacityTypeReserved, p.Requirements.Get(cloudprovider.ReservationIDLabel).Values()
}

func codes(res *Results) []ReasonCode {
	var out []ReasonCode
	for _, pe := range res.Unschedulable {
		for _, c := range pe.CodeByNodePool {
			out = append(out, c)
		}
	}
	return out
}

func TestReservationIsCountedDownAndAPodDeferredNotFallenBack(t *testing.T) {
	for _, upstream := range []bool{false, true} {
		its := []*cloudprovider.InstanceType{it("m", 4, reserved("cr-1", "zone-a", 1)), it("m", 8)}
		// Each pod needs a node of its own: 3 of 4 cores.
		pods := times(2, func() *corev1.Pod { return pod("3", "1Gi") })
		res := solve(t, []*v1.NodePool{pool("p", reservedOrOnDemand())}, its, pods, func(s *Snapshot) {
			if upstream {
				s.Policy.Decisions = DecisionsKarpenter
			}
		})
		if len(res.NewNodeClaims) != 1 {
			t.Fatalf("upstream=%v: %d claims, want 1 (the reservation's); the second pod waits for the next pass", upstream, len(res.NewNodeClaims))
		}
		if ct, ids := heldReservations(res.NewNodeClaims[0]); ct != v1.CapacityTypeReserved || !slices.Equal(ids, []string{"cr-1"}) {
			t.Errorf("upstream=%v: claim pinned to %q %v, want reserved [cr-1]: %s", upstream, ct, ids, res.NewNodeClaims[0].Requirements)
		}
		if its := res.NewNodeClaims[0].InstanceTypes; len(its) != 1 || its[0].Name != "m.4x" {
			t.Errorf("upstream=%v: the reserved claim's types are %v, want only m.4x (the one with the reservation)", upstream, its)
		}
		if got := codes(res); !slices.Equal(got, []ReasonCode{ReasonReservedCapacity}) {
			t.Errorf("upstream=%v: the second pod's reasons are %v, want [ReservedCapacity]", upstream, got)
		}
	}
}

func TestReservationFallbackModePlacesEveryPod(t *testing.T) {
	// One type, so each pod needs a node of it. (With a larger type too,
	// both pods would share it on-demand: in fallback mode a pod may take
	// a claim's last reservation away, as upstream's may.)
	its := []*cloudprovider.InstanceType{it("m", 4, reserved("cr-1", "zone-a", 1))}
	pods := times(2, func() *corev1.Pod { return pod("3", "1Gi") })
	res := solve(t, []*v1.NodePool{pool("p", reservedOrOnDemand())}, its, pods, func(s *Snapshot) { s.ReservationFallback = true })
	requireAllPlaced(t, res)
	var reservedClaims int
	for _, nc := range res.NewNodeClaims {
		if ct, _ := heldReservations(nc); ct != "" {
			reservedClaims++
		}
	}
	if len(res.NewNodeClaims) != 2 || reservedClaims != 1 {
		t.Errorf("%d claims, %d reserved; want 2, one in the reservation (disruption's simulations fall back, as upstream's)", len(res.NewNodeClaims), reservedClaims)
	}
}

func TestUsedUpReservationFallsBackToOnDemand(t *testing.T) {
	// The next pass: the cloud says the reservation is full.
	its := []*cloudprovider.InstanceType{it("m", 4, reserved("cr-1", "zone-a", 0)), it("m", 8)}
	res := solve(t, []*v1.NodePool{pool("p", reservedOrOnDemand())}, its, []*corev1.Pod{pod("3", "1Gi")})
	requireAllPlaced(t, res)
	if ct, _ := heldReservations(res.NewNodeClaims[0]); ct != "" {
		t.Errorf("claim pinned to %s with no reservation left", ct)
	}
}

func TestReservationDefersRatherThanFallingToALowerWeightPool(t *testing.T) {
	its := []*cloudprovider.InstanceType{it("m", 4, reserved("cr-1", "zone-a", 1)), it("m", 8)}
	pools := []*v1.NodePool{pool("reserved", weight(10), reservedOrOnDemand()), pool("fallback", weight(1))}
	res := solve(t, pools, its, times(2, func() *corev1.Pod { return pod("3", "1Gi") }))
	if len(res.NewNodeClaims) != 1 || res.NewNodeClaims[0].NodePool.Name != "reserved" {
		t.Fatalf("claims %v; want one, of NodePool reserved", res.NewNodeClaims)
	}
	if len(res.Unschedulable) != 1 {
		t.Errorf("%d pods unschedulable, want the second deferred", len(res.Unschedulable))
	}
}

func TestReservationSharedByPoolsCountsOnceAtItsSmallest(t *testing.T) {
	// Two NodePools see cr-1 through different offerings: 2 left in one
	// view, 1 in the other; upstream keeps the smaller.
	a := []*cloudprovider.InstanceType{it("m", 4, reserved("cr-1", "zone-a", 2))}
	b := []*cloudprovider.InstanceType{it("m", 4, reserved("cr-1", "zone-a", 1))}
	pools := []*v1.NodePool{pool("a", weight(10), reservedOrOnDemand()), pool("b", weight(5), reservedOrOnDemand())}
	snap := &Snapshot{NodePools: pools, InstanceTypes: map[string][]*cloudprovider.InstanceType{"a": a, "b": b},
		Pods: times(2, func() *corev1.Pod { return pod("3", "1Gi") })}
	res := Solve(t.Context(), snap)
	if len(res.NewNodeClaims) != 1 {
		t.Errorf("%d claims, want 1: the reservation has one instance left however many pools see it", len(res.NewNodeClaims))
	}
}

func TestPodThatWouldTakeAClaimsLastReservationGoesElsewhere(t *testing.T) {
	its := []*cloudprovider.InstanceType{it("m", 8, reserved("cr-1", "zone-a", 1))}
	first := pod("1", "1Gi")
	second := pod("1", "1Gi", nodeSelector(v1.LabelZone, "zone-b"))
	res := solve(t, []*v1.NodePool{pool("p", reservedOrOnDemand())}, its, []*corev1.Pod{first, second})
	requireAllPlaced(t, res)
	if len(res.NewNodeClaims) != 2 {
		t.Fatalf("%d claims, want 2: the zone-b pod may not join the claim that holds zone-a's reservation", len(res.NewNodeClaims))
	}
	for _, nc := range res.NewNodeClaims {
		ct, _ := heldReservations(nc)
		if want := nc.Pods[0] == first; (ct != "") != want {
			t.Errorf("claim for %s pinned to %q; reserved is wanted only for the zone-a pod", nc.Pods[0].Name, ct)
		}
	}
}

func TestNoReservationNoChange(t *testing.T) {
	// A pool whose types have no reserved offering plans as before: no
	// counting, no reservation requirements.
	res := solve(t, []*v1.NodePool{pool("p", reservedOrOnDemand())}, standardTypes(), times(3, func() *corev1.Pod { return pod("3", "1Gi") }))
	requireAllPlaced(t, res)
	for _, nc := range res.NewNodeClaims {
		if nc.Requirements.Has(cloudprovider.ReservationIDLabel) {
			t.Errorf("claim with reservation requirements without reservations: %s", nc.Requirements)
		}
	}
}
