package provisioning

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// reservations counts capacity reservations down over one pass, as
// upstream's ReservationManager does: each starts at the Capacity its
// offerings report (the smallest, where NodePools see the same one
// differently), and a planned claim holds one unit of every reservation
// it could still launch into — pessimistically, since which of its types
// launches is the cloud's choice — and gives back those a later pod rules
// out. A claim holds a reservation at most once. Claims already launched
// are not counted here: the cloud's Capacity has them.
type reservations struct {
	capacity map[string]int
	// strict is provisioning's mode (upstream's
	// DisableReservedCapacityFallback): a pod that could use a reservation
	// but finds none left is deferred to the next pass rather than put on
	// on-demand or spot, and a pod that would take a claim's last
	// reservation away goes to another claim. Disruption's simulations
	// run without it, as upstream's do.
	strict bool
}

// newReservations is nil when no pool has a reserved offering: then no
// claim holds anything and nothing is counted.
func newReservations(pools []*poolInfo, strict bool) *reservations {
	var r *reservations
	for _, p := range pools {
		for _, i := range p.reserved {
			for _, o := range p.its[i].it.Offerings {
				res := o.Reservation
				if res == nil {
					continue
				}
				if r == nil {
					r = &reservations{capacity: map[string]int{}, strict: strict}
				}
				if have, ok := r.capacity[res.ID]; !ok || res.Capacity < have {
					r.capacity[res.ID] = res.Capacity
				}
			}
		}
	}
	return r
}

// canReserve: the claim holds the reservation already, or some is left.
func (r *reservations) canReserve(cl *claim, id string) bool {
	return slices.Contains(cl.reserved, id) || r.capacity[id] > 0
}

// hold moves the claim's holdings to ids: new ones are counted down, the
// ones it no longer holds are given back.
func (r *reservations) hold(cl *claim, ids []string) {
	for _, id := range ids {
		if !slices.Contains(cl.reserved, id) {
			r.capacity[id]--
		}
	}
	for _, id := range cl.reserved {
		if !slices.Contains(ids, id) {
			r.capacity[id]++
		}
	}
	cl.reserved = ids
}

// toReserve are the reservations the claim could launch into with these
// candidates and requirements and may hold (sorted IDs), and whether any
// available reserved offering suits them at all, held or not.
func (r *reservations) toReserve(cl *claim, cand bitset, reqs scheduling.Requirements) (ids []string, compatible bool) {
	zone, ct := reqs.Get(v1.LabelZone), reqs.Get(v1.LabelCapacityType)
	if !ct.Has(v1.CapacityTypeReserved) {
		return nil, false
	}
	rid := reqs.Get(cloudprovider.ReservationIDLabel)
	for _, i := range cl.pool.reserved {
		if !cand.has(i) {
			continue
		}
		for _, o := range cl.pool.its[i].it.Offerings {
			if o.Reservation == nil || !o.Available || !zone.Has(o.Zone) || !rid.Has(o.Reservation.ID) {
				continue
			}
			compatible = true
			if id := o.Reservation.ID; r.canReserve(cl, id) && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ids, compatible
}

// check is the reservations' part of a pod joining the claim: the
// reservations the claim would hold, or, in strict mode, why it may not
// take the pod.
func (r *reservations) check(cl *claim, cand bitset, reqs scheduling.Requirements) ([]string, error) {
	ids, compatible := r.toReserve(cl, cand, reqs)
	if r.strict && len(ids) == 0 {
		switch {
		case compatible:
			return nil, &Reason{Code: ReasonReservedCapacity}
		case len(cl.reserved) > 0:
			return nil, &Reason{Code: ReasonReservedCapacity, LastReservation: true}
		}
	}
	return ids, nil
}

// reservedRequirements pins a claim holding reservations to them, as
// upstream's FinalizeScheduling does: capacity type reserved, and the
// reservation IDs it holds, so the cloud launches into one of them and
// never over-launches a reservation the pass counted down.
func reservedRequirements(reqs scheduling.Requirements, ids []string) {
	reqs.Add(scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved))
	reqs.Add(scheduling.NewRequirement(cloudprovider.ReservationIDLabel, corev1.NodeSelectorOpIn, ids...))
}
