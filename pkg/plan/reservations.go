package plan

import (
	"fmt"
	"strings"
)

// ReservationNotes say, of each EC2NodeClass that selects capacity
// reservations, that a plan does not know them: which reservations exist
// and how many instances each has free is the cloud's (a scenario's
// spec.capacityReservations in the simulator), so the plan's claims are
// on-demand and spot where the cluster would launch into a reservation.
func (o *Objects) ReservationNotes() []string {
	var notes []string
	for _, nc := range o.NodeClasses {
		if len(nc.Spec.CapacityReservationSelectorTerms) == 0 {
			continue
		}
		known := ""
		if n := len(nc.Status.CapacityReservations); n > 0 {
			ids := make([]string, n)
			for i, r := range nc.Status.CapacityReservations {
				ids[i] = r.ID
			}
			known = fmt.Sprintf(" (its status lists %s, without how many instances each has free)", strings.Join(ids, ", "))
		}
		notes = append(notes, fmt.Sprintf("EC2NodeClass %s selects capacity reservations (spec.capacityReservationSelectorTerms)%s: a plan cannot see what they have free, so it plans their pods on on-demand and spot; to see reservations used, simulate a scenario with spec.capacityReservations", nc.Name, known))
	}
	return notes
}
