package sim

import (
	"fmt"
	"math"
	"slices"
	"time"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	simcloud "github.com/joiner-autoscaler/joiner/pkg/cloudprovider/sim"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// capacityBlockReclaim is how long before a Capacity Block's end EC2
// terminates its instances (ExpiryLead is when Karpenter starts draining).
const capacityBlockReclaim = 30 * time.Minute

// reservationTerms are the scenario's EC2NodeClasses'
// capacityReservationSelectorTerms, by node class name.
func reservationTerms(in *scenario.Input) map[string][]awsv1.CapacityReservationSelectorTerm {
	out := map[string][]awsv1.CapacityReservationSelectorTerm{}
	for _, nc := range in.NodeClasses {
		if len(nc.Spec.CapacityReservationSelectorTerms) > 0 {
			out[nc.Name] = nc.Spec.CapacityReservationSelectorTerms
		}
	}
	return out
}

// scheduleReservations arms the ends of the scenario's reservations: a
// Capacity Block expires ExpiryLead before its end — nothing launches into
// it and its nodes are deleted, as upstream's capacity-block expiration
// controller does, and EC2 takes what is left 30 minutes before the end;
// an On-Demand Capacity Reservation that ends leaves its instances running
// as on-demand, relabelled (upstream's capacity-type controller).
func (e *simulation) scheduleReservations() {
	for _, r := range e.cloud.Reservations() {
		if r.End.IsZero() {
			continue
		}
		id := r.ID
		if r.Type == cloudprovider.ReservationTypeCapacityBlock {
			e.clk.at(maxTime(e.start, r.End.Add(-simcloud.ExpiryLead)), func() { e.expireBlock(id) })
			e.clk.at(maxTime(e.start, r.End.Add(-capacityBlockReclaim)), func() { e.reclaimBlock(id) })
			continue
		}
		e.clk.at(r.End, func() { e.endReservation(id) })
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// expireBlock drains the nodes of a Capacity Block about to end.
func (e *simulation) expireBlock(id string) {
	pids := e.cloud.ExpireReservation(id)
	e.rep.note(fmt.Sprintf("capacity block %s expiring at minute %d: %d node(s) deleted, no more launches into it", id, int(e.clk.now.Sub(e.start).Minutes()), len(pids)))
	for _, n := range e.nodesOf(pids) {
		e.drainFor(n, "CapacityBlockExpiration")
	}
	e.dirty = true
	e.armBatch()
}

// reclaimBlock is EC2 taking a Capacity Block's instances back.
func (e *simulation) reclaimBlock(id string) {
	for _, n := range slices.Clone(e.nodes) { // takeBack removes from e.nodes
		if n.offering.ReservationID() == id {
			e.takeBack(n, "CapacityBlockExpiration")
		}
	}
	e.armBatch()
}

// reclaimReservation is the owner of an interruptible reservation taking
// it back: as upstream's interruption controller on EC2's two-minute
// warning, each of its nodes' claims is deleted at once (drained), and
// two minutes later the instance is gone.
func (e *simulation) reclaimReservation(id string) {
	pids := e.cloud.InterruptReservation(id)
	e.rep.note(fmt.Sprintf("capacity reservation %s taken back by its owner at minute %d: %d node(s) interrupted", id, int(e.clk.now.Sub(e.start).Minutes()), len(pids)))
	for _, n := range e.nodesOf(pids) {
		e.traceInterruption(n, "CapacityReservationInterrupted")
		e.drainFor(n, "CapacityReservationInterrupted")
		e.clk.after(simcloud.InterruptionNotice, func() { e.takeBack(n, "CapacityReservationInterrupted") })
	}
	e.dirty = true
	e.armBatch()
}

// endReservation demotes the instances of an ended On-Demand Capacity
// Reservation to on-demand.
func (e *simulation) endReservation(id string) {
	pids := e.cloud.EndReservation(id)
	for _, n := range e.nodesOf(pids) {
		in := e.cloud.Instance(n.claim.Status.ProviderID)
		if n.first == nil {
			n.first = n.offering
		}
		n.demoted = append(n.demoted, priced{from: e.clk.now, offering: in.Offering})
		n.offering = in.Offering
		e.syncNode(n)
	}
	e.rep.note(fmt.Sprintf("capacity reservation %s ended at minute %d: %d node(s) carry on as on-demand", id, int(e.clk.now.Sub(e.start).Minutes()), len(pids)))
	e.dirty = true
}

func (e *simulation) nodesOf(providerIDs []string) []*simNode {
	want := map[string]bool{}
	for _, id := range providerIDs {
		want[id] = true
	}
	var out []*simNode
	for _, n := range e.nodes {
		if n.state != nodeGone && want[n.claim.Status.ProviderID] {
			out = append(out, n)
		}
	}
	return out
}

// priced is a node's offering from a time on (after a reservation ended).
type priced struct {
	from     time.Time
	offering *cloudprovider.Offering
}

// segments are the node's hours at each offering it ran as, up to t.
func (n *simNode) segments(t time.Time) []priced {
	if len(n.demoted) == 0 {
		return []priced{{from: n.launched, offering: n.offering}}
	}
	out := []priced{{from: n.launched, offering: n.first}}
	return append(out, n.demoted...)
}

// hoursAt splits the node's hours to t by the offering it ran as.
func (n *simNode) hoursAt(t time.Time) []struct {
	offering *cloudprovider.Offering
	hours    float64
} {
	end := t
	if n.state == nodeGone {
		end = n.gone
	}
	segs := n.segments(t)
	out := make([]struct {
		offering *cloudprovider.Offering
		hours    float64
	}, len(segs))
	for i, s := range segs {
		to := end
		if i+1 < len(segs) && segs[i+1].from.Before(end) {
			to = segs[i+1].from
		}
		out[i].offering = s.offering
		out[i].hours = math.Max(0, to.Sub(s.from).Hours())
	}
	return out
}

// reservationNotes say how the scenario's reservations were used.
func (e *simulation) reservationNotes() {
	for _, r := range e.cloud.Reservations() {
		if !r.Selected {
			e.rep.note(fmt.Sprintf("capacity reservation %s (%d × %s in %s): no EC2NodeClass's capacityReservationSelectorTerms select it, so no node launched into it", r.ID, r.Count, r.InstanceType, r.Zone))
			continue
		}
		var hours float64
		for _, n := range e.allNodes {
			for _, s := range n.hoursAt(e.end) {
				if s.offering.ReservationID() == r.ID {
					hours += s.hours
				}
			}
		}
		end := e.end
		for _, t := range []time.Time{r.End, r.EndedAt} {
			if !t.IsZero() && t.Before(end) {
				end = t
			}
		}
		kind := r.Type
		if r.Interruptible {
			kind += ", interruptible"
		}
		held := float64(r.Count) * math.Max(0, end.Sub(e.start).Hours())
		use := 0.0
		if held > 0 {
			use = hours / held * 100
		}
		e.rep.note(fmt.Sprintf("capacity reservation %s (%s, %d × %s in %s): %.1f of %.1f reserved instance-hours used (%.0f %%)",
			r.ID, kind, r.Count, r.InstanceType, r.Zone, hours, held, use))
	}
	if len(e.cloud.Reservations()) > 0 {
		e.rep.note("a capacity reservation is paid for whether used or not: its nodes are priced at upstream's ten-millionth of on-demand, and the reservations themselves are not in the cost")
	}
}
