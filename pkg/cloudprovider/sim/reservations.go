package sim

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// Reservation is a capacity reservation the simulated EC2 holds: an
// On-Demand Capacity Reservation (Type "default", interruptible or not) or
// a Capacity Block, for Count instances of one type in one zone, until End
// (zero: no end).
type Reservation struct {
	ID                    string
	InstanceType          string
	Zone                  string
	Count                 int
	Type                  string // cloudprovider.ReservationTypeDefault or ReservationTypeCapacityBlock
	Interruptible         bool
	OwnerID               string
	InstanceMatchCriteria string // open or targeted
	Tags                  map[string]string
	End                   time.Time
}

// ExpiryLead is how long before a Capacity Block's end upstream's AWS
// provider stops launching into it and deletes its nodes (EC2 starts
// reclaiming the instances 30 minutes before the end).
const ExpiryLead = 40 * time.Minute

// SelectedBy reports whether an EC2NodeClass's
// capacityReservationSelectorTerm selects the reservation, as upstream's
// DescribeCapacityReservations filters do: by id alone, or by owner, tags
// ("*" any value) and match criteria together. Terms are ORed.
func (r *Reservation) SelectedBy(t awsv1.CapacityReservationSelectorTerm) bool {
	if t.ID != "" {
		return t.ID == r.ID
	}
	if t.OwnerID != "" && t.OwnerID != r.OwnerID {
		return false
	}
	if t.InstanceMatchCriteria != "" && t.InstanceMatchCriteria != r.InstanceMatchCriteria {
		return false
	}
	for k, v := range t.Tags {
		have, ok := r.Tags[k]
		if !ok || (v != "*" && v != have) {
			return false
		}
	}
	return true
}

// reservation is a Reservation and what the cloud keeps of it: the
// instances running in it, whether it is expiring (a Capacity Block inside
// ExpiryLead) or ended, and its one offering, which every NodePool whose
// node class selects it shares, so one count holds for all.
type reservation struct {
	Reservation
	used     int
	expiring bool
	ended    bool
	endedAt  time.Time
	offering *cloudprovider.Offering
}

func (r *reservation) refresh() {
	left := max(r.Count-r.used, 0)
	if r.expiring || r.ended {
		left = 0
	}
	r.offering.Reservation.Capacity = left
	r.offering.Available = left > 0
}

// setReservations makes the cloud's reservations; the pools see those
// their node class's terms select (SetNodePools).
func (p *Provider) setReservations(rs []Reservation, terms map[string][]awsv1.CapacityReservationSelectorTerm) error {
	p.reservations = map[string]*reservation{}
	p.reservationTerms = terms
	byType := map[string]*cloudprovider.InstanceType{}
	for _, it := range p.types {
		byType[it.Name] = it
	}
	for _, r := range rs {
		if _, dup := p.reservations[r.ID]; dup {
			return fmt.Errorf("capacity reservation %s is declared twice", r.ID)
		}
		it := byType[r.InstanceType]
		if it == nil {
			return fmt.Errorf("capacity reservation %s: instance type %q is not in the catalog for this region", r.ID, r.InstanceType)
		}
		var od *cloudprovider.Offering
		for _, o := range it.Offerings {
			if o.Zone == r.Zone && o.CapacityType == v1.CapacityTypeOnDemand {
				od = o
			}
		}
		if od == nil {
			return fmt.Errorf("capacity reservation %s: %s is not offered in zone %q", r.ID, r.InstanceType, r.Zone)
		}
		if r.Type == "" {
			r.Type = cloudprovider.ReservationTypeDefault
		}
		// Upstream prices a reservation at a ten-millionth of on-demand:
		// free to launch into, with the types' order kept for
		// consolidation.
		o := &cloudprovider.Offering{Zone: r.Zone, CapacityType: v1.CapacityTypeReserved, Price: od.Price / 10_000_000,
			Reservation: &cloudprovider.Reservation{ID: r.ID, Type: r.Type, Interruptible: r.Interruptible}}
		res := &reservation{Reservation: r, offering: o}
		res.refresh()
		p.reservations[r.ID] = res
	}
	return nil
}

// reservedTypes gives a NodePool's types the reserved offerings of the
// reservations its node class selects: a copy of each type with such a
// reservation, its capacity types widened to reserved and its
// reservation labels set, as upstream's provider does. Copies are shared
// by the pools of one node class.
func (p *Provider) reservedTypes(nodeClass string, its []*cloudprovider.InstanceType, copies map[string]*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	selected := map[string][]*reservation{}
	for _, id := range p.reservationIDs() {
		r := p.reservations[id]
		if slices.ContainsFunc(p.reservationTerms[nodeClass], r.SelectedBy) {
			selected[r.InstanceType] = append(selected[r.InstanceType], r)
		}
	}
	if len(selected) == 0 {
		return its
	}
	out := make([]*cloudprovider.InstanceType, len(its))
	for i, it := range its {
		out[i] = it
		rs := selected[it.Name]
		if len(rs) == 0 {
			continue
		}
		key := nodeClass + "\x00" + it.Name
		if cp, ok := copies[key]; ok {
			out[i] = cp
			continue
		}
		cp := *it
		cp.Offerings = slices.Clone(it.Offerings)
		cp.Requirements = it.Requirements.Copy()
		ids, types, interruptible := []string{}, map[string]bool{}, map[string]bool{}
		for _, r := range rs {
			cp.Offerings = append(cp.Offerings, r.offering)
			ids = append(ids, r.ID)
			types[r.Type] = true
			interruptible[strconv.FormatBool(r.Interruptible)] = true
		}
		cts := append(cp.Requirements.Get(v1.LabelCapacityType).Values(), v1.CapacityTypeReserved)
		// Set, not Added: Add would intersect with the catalog's sets.
		cp.Requirements[v1.LabelCapacityType] = scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, cts...)
		cp.Requirements[cloudprovider.ReservationIDLabel] = scheduling.NewRequirement(cloudprovider.ReservationIDLabel, corev1.NodeSelectorOpIn, ids...)
		cp.Requirements[cloudprovider.ReservationTypeLabel] = scheduling.NewRequirement(cloudprovider.ReservationTypeLabel, corev1.NodeSelectorOpIn, slices.Sorted(maps.Keys(types))...)
		cp.Requirements[cloudprovider.ReservationInterruptibleLabel] = scheduling.NewRequirement(cloudprovider.ReservationInterruptibleLabel, corev1.NodeSelectorOpIn, slices.Sorted(maps.Keys(interruptible))...)
		copies[key] = &cp
		out[i] = &cp
	}
	return out
}

func (p *Provider) reservationIDs() []string { return slices.Sorted(maps.Keys(p.reservations)) }

// Reservations are the cloud's reservations, by ID, each with how many
// instances run in it now.
func (p *Provider) Reservations() []ReservationUse {
	var out []ReservationUse
	for _, id := range p.reservationIDs() {
		r := p.reservations[id]
		selected := false
		for _, terms := range p.reservationTerms {
			selected = selected || slices.ContainsFunc(terms, r.SelectedBy)
		}
		out = append(out, ReservationUse{Reservation: r.Reservation, Used: r.used, Expiring: r.expiring, Ended: r.ended, EndedAt: r.endedAt, Selected: selected})
	}
	return out
}

// ReservationUse is a reservation and its state now.
type ReservationUse struct {
	Reservation
	Used            int
	Expiring, Ended bool
	// EndedAt is when it ended or its owner took it back (zero: it did not).
	EndedAt time.Time
	// Selected: some EC2NodeClass's terms select it.
	Selected bool
}

// ExpireReservation starts a Capacity Block's expiry (ExpiryLead before
// its end): nothing more launches into it, and it returns the provider IDs
// of its instances, which upstream's expiration controller deletes the
// claims of. It is a no-op returning nothing for an unknown ID.
func (p *Provider) ExpireReservation(id string) []string {
	r := p.reservations[id]
	if r == nil || r.expiring {
		return nil
	}
	r.expiring = true
	return p.closed(r)
}

// closed offers a reservation no more, and returns its instances.
func (p *Provider) closed(r *reservation) []string {
	r.refresh()
	p.changed()
	return p.instancesIn(r.ID)
}

// end ends a reservation now, returning its instances; nil when it is
// unknown or ended already.
func (p *Provider) end(id string) []string {
	r := p.reservations[id]
	if r == nil || r.ended {
		return nil
	}
	r.ended, r.endedAt = true, p.opts.Now()
	return p.closed(r)
}

// InterruptReservation is the owner of an interruptible reservation
// taking it back: nothing more launches into it, and it returns the
// provider IDs of its instances, which get EC2's two-minute warning.
func (p *Provider) InterruptReservation(id string) []string { return p.end(id) }

// EndReservation ends a reservation. An instance still running in an
// On-Demand Capacity Reservation carries on as on-demand, as EC2 does:
// its offering becomes its type's on-demand one in the zone and its
// NodeClaim is relabelled (upstream's capacity-type controller demotes
// the claim), and the IDs of those instances are returned.
func (p *Provider) EndReservation(id string) []string {
	demoted := p.end(id)
	for _, pid := range demoted {
		in := p.instances[pid]
		for _, o := range in.InstanceType.Offerings {
			if o.Zone == in.Offering.Zone && o.CapacityType == v1.CapacityTypeOnDemand {
				in.Offering = o
			}
		}
		in.NodeClaim.Labels[v1.LabelCapacityType] = v1.CapacityTypeOnDemand
		delete(in.NodeClaim.Labels, cloudprovider.ReservationIDLabel)
		delete(in.NodeClaim.Labels, cloudprovider.ReservationTypeLabel)
		delete(in.NodeClaim.Labels, cloudprovider.ReservationInterruptibleLabel)
	}
	return demoted
}

func (p *Provider) instancesIn(id string) []string {
	var out []string
	for pid, in := range p.instances {
		if in.Offering.ReservationID() == id {
			out = append(out, pid)
		}
	}
	sort.Strings(out)
	return out
}

// reservedLaunch and reservedRelease count an instance in or out of its
// reservation.
func (p *Provider) reservedLaunch(o *cloudprovider.Offering) {
	if r := p.reservations[o.ReservationID()]; r != nil {
		r.used++
		r.refresh()
		p.changed()
	}
}

func (p *Provider) reservedRelease(o *cloudprovider.Offering) {
	if r := p.reservations[o.ReservationID()]; r != nil {
		r.used--
		r.refresh()
		p.changed()
	}
}
