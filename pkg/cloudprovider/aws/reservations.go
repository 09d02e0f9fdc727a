package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// CapacityBlockExpiryLead is how long before a Capacity Block's end its
// status says expiring: nothing more launches into it and its nodes are
// deleted, 10 minutes before EC2 starts taking the instances back, as
// upstream's provider does.
const CapacityBlockExpiryLead = 40 * time.Minute

// Reservation states in an EC2NodeClass's status.
const (
	reservationActive   = "active"
	reservationExpiring = "expiring"
)

// capacityReservations are the active reservations the NodeClass's
// capacityReservationSelectorTerms select (ORed; a term by id, or by
// owner, tags and match criteria together), by ID, those already ended
// left out; each one's free instances are remembered for its offerings.
// A reservation an id term names that does not exist is no error: it may
// have ended.
func (p *Provider) capacityReservations(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.CapacityReservation, error) {
	now := p.opts.Clock.Now()
	found := map[string]ec2types.CapacityReservation{}
	for _, t := range nc.Spec.CapacityReservationSelectorTerms {
		in := &ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{filter("state", "active")}}
		if t.ID != "" {
			in.CapacityReservationIds = []string{t.ID}
		} else {
			in.Filters = append(in.Filters, tagFilters(t.Tags)...)
			if t.OwnerID != "" {
				in.Filters = append(in.Filters, filter("owner-id", t.OwnerID))
			}
			if t.InstanceMatchCriteria != "" {
				in.Filters = append(in.Filters, filter("instance-match-criteria", t.InstanceMatchCriteria))
			}
		}
		pages := ec2.NewDescribeCapacityReservationsPaginator(p.ec2, in)
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if isCode(err, "InvalidCapacityReservationId.NotFound") {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("describing capacity reservations for capacityReservationSelectorTerms: %w", err)
			}
			for _, r := range out.CapacityReservations {
				if end := r.EndDate; end != nil && !end.After(now) {
					continue
				}
				found[aws.ToString(r.CapacityReservationId)] = r
			}
		}
	}
	out := make([]awsv1.CapacityReservation, 0, len(found))
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(found)) {
		r := found[id]
		cr := awsv1.CapacityReservation{ID: id, AvailabilityZone: aws.ToString(r.AvailabilityZone), InstanceType: aws.ToString(r.InstanceType),
			OwnerID: aws.ToString(r.OwnerId), InstanceMatchCriteria: string(r.InstanceMatchCriteria), ReservationType: string(r.ReservationType),
			Interruptible: aws.ToBool(r.Interruptible), State: reservationActive}
		if cr.ReservationType == "" {
			cr.ReservationType = cloudprovider.ReservationTypeDefault
		}
		if r.EndDate != nil {
			end := metav1.NewTime(*r.EndDate)
			cr.EndTime = &end
			if cr.ReservationType == cloudprovider.ReservationTypeCapacityBlock && !now.Before(r.EndDate.Add(-CapacityBlockExpiryLead)) {
				cr.State = reservationExpiring
			}
		}
		if free := int(aws.ToInt32(r.AvailableInstanceCount)); p.reservationFree[id] != free {
			p.reservationFree[id] = free
			p.reservationsChanged.Add(1)
		}
		out = append(out, cr)
	}
	return out, nil
}

// reserved gives an instance type (a copy) the reserved offerings of the
// NodeClass's reservations for it in the zones: priced at a ten-millionth
// of on-demand, as upstream's provider does (free to launch into, the
// types' order kept), available while the reservation has an instance
// free and is not expiring; its capacity types widened to reserved and
// its reservation labels set. p.mu is held.
func (p *Provider) reserved(it *cloudprovider.InstanceType, reservations []awsv1.CapacityReservation, zones map[string]bool) {
	var ids, types, interruptible []string
	for _, r := range reservations {
		if r.InstanceType != it.Name || !zones[r.AvailabilityZone] {
			continue
		}
		var od float64
		for _, o := range it.Offerings {
			if o.Zone == r.AvailabilityZone && o.CapacityType == v1.CapacityTypeOnDemand {
				od = o.Price
			}
		}
		free := p.reservationFree[r.ID]
		it.Offerings = append(it.Offerings, &cloudprovider.Offering{Zone: r.AvailabilityZone, CapacityType: v1.CapacityTypeReserved, Price: od / 10_000_000,
			Available:   free > 0 && r.State != reservationExpiring,
			Reservation: &cloudprovider.Reservation{ID: r.ID, Capacity: free, Type: r.ReservationType, Interruptible: r.Interruptible}})
		ids = append(ids, r.ID)
		types = appendNew(types, r.ReservationType)
		interruptible = appendNew(interruptible, strconv.FormatBool(r.Interruptible))
	}
	if len(ids) == 0 {
		return
	}
	it.Requirements = it.Requirements.Copy()
	cts := appendNew(it.Requirements.Get(v1.LabelCapacityType).Values(), v1.CapacityTypeReserved)
	it.Requirements[v1.LabelCapacityType] = scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, cts...)
	it.Requirements[cloudprovider.ReservationIDLabel] = scheduling.NewRequirement(cloudprovider.ReservationIDLabel, corev1.NodeSelectorOpIn, ids...)
	it.Requirements[cloudprovider.ReservationTypeLabel] = scheduling.NewRequirement(cloudprovider.ReservationTypeLabel, corev1.NodeSelectorOpIn, types...)
	it.Requirements[cloudprovider.ReservationInterruptibleLabel] = scheduling.NewRequirement(cloudprovider.ReservationInterruptibleLabel, corev1.NodeSelectorOpIn, interruptible...)
}

func appendNew(list []string, v string) []string {
	if slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

// markLaunched and markTerminated count an instance into and out of its
// reservation until the next DescribeCapacityReservations says so;
// markFull is a launch EC2 refused for want of room in it.
func (p *Provider) markLaunched(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reservationFree[id] = max(p.reservationFree[id]-1, 0)
	p.reservationsChanged.Add(1)
}

func (p *Provider) markTerminated(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reservationFree[id]++
	p.reservationsChanged.Add(1)
}

func (p *Provider) markFull(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reservationFree[id] = 0
	p.reservationsChanged.Add(1)
}

// reservedOffering is a type's reserved offering.
type reservedOffering struct {
	it *cloudprovider.InstanceType
	o  *cloudprovider.Offering
}

// reservedChoice is what a reserved launch goes into: the offerings it
// may launch into, of one reservation kind (a fleet takes one market
// type), cheapest first, as upstream's CapacityReservationTypeFilter,
// CapacityBlockFilter and ReservedOfferingFilter leave them: the kind of
// the cheapest offering (ties: an ODCR, then a Capacity Block, then an
// interruptible ODCR); of Capacity Blocks, the cheapest type's alone; of
// a type's reservations in a zone, the one with the most free.
func reservedChoice(its []*cloudprovider.InstanceType, reqs scheduling.Requirements) []reservedOffering {
	zone, rid := reqs.Get(v1.LabelZone), reqs.Get(cloudprovider.ReservationIDLabel)
	var all []reservedOffering
	for _, it := range its {
		for _, o := range it.Offerings {
			if o.Reservation != nil && o.Available && zone.Has(o.Zone) && rid.Has(o.Reservation.ID) {
				all = append(all, reservedOffering{it, o})
			}
		}
	}
	if len(all) == 0 {
		return nil
	}
	rank := func(r *cloudprovider.Reservation) int {
		switch {
		case r.Type == cloudprovider.ReservationTypeCapacityBlock:
			return 1
		case r.Interruptible:
			return 2
		}
		return 0
	}
	slices.SortStableFunc(all, func(a, b reservedOffering) int {
		switch {
		case a.o.Price != b.o.Price:
			if a.o.Price < b.o.Price {
				return -1
			}
			return 1
		case rank(a.o.Reservation) != rank(b.o.Reservation):
			return rank(a.o.Reservation) - rank(b.o.Reservation)
		case a.o.Reservation.Capacity != b.o.Reservation.Capacity:
			return b.o.Reservation.Capacity - a.o.Reservation.Capacity
		}
		return 0
	})
	kind := rank(all[0].o.Reservation)
	var out []reservedOffering
	seen := map[string]bool{} // type/zone
	for _, c := range all {
		if rank(c.o.Reservation) != kind || seen[c.it.Name+"/"+c.o.Zone] {
			continue
		}
		if kind == 1 && c.it.Name != all[0].it.Name {
			continue // a fleet takes one Capacity Block type
		}
		seen[c.it.Name+"/"+c.o.Zone] = true
		out = append(out, c)
	}
	return out
}

// reservedFleet sets a reserved launch's fleet options, as upstream's
// CreateFleetInputBuilder: Capacity Blocks as capacity-block, an
// interruptible ODCR as reserved-capacity of that reservation type, an
// ODCR as on-demand (lowest price).
func reservedFleet(in *ec2.CreateFleetInput, r *cloudprovider.Reservation) {
	switch {
	case r.Type == cloudprovider.ReservationTypeCapacityBlock:
		in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeCapacityBlock
	case r.Interruptible:
		in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeReservedCapacity
		in.ReservedCapacityOptions = &ec2types.ReservedCapacityOptionsRequest{ReservationTypes: []ec2types.FleetReservationType{ec2types.FleetReservationTypeInterruptibleCapacityReservation}}
	default:
		in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeOnDemand
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
}

// reservationLabels set (or, for an unreserved instance, clear) a
// claim's reservation labels.
func reservationLabels(labels map[string]string, r *cloudprovider.Reservation) {
	for _, k := range []string{cloudprovider.ReservationIDLabel, cloudprovider.ReservationTypeLabel, cloudprovider.ReservationInterruptibleLabel} {
		delete(labels, k)
	}
	if r == nil {
		return
	}
	labels[v1.LabelCapacityType] = v1.CapacityTypeReserved
	labels[cloudprovider.ReservationIDLabel] = r.ID
	labels[cloudprovider.ReservationTypeLabel] = r.Type
	labels[cloudprovider.ReservationInterruptibleLabel] = strconv.FormatBool(r.Interruptible)
}

// instanceReservation is the reservation an instance runs in, as
// upstream reads it: one it was launched into (targeted,
// capacity-reservations-only); nil for an instance in an open ODCR by
// chance, or when the gate is off.
func (p *Provider) instanceReservation(in *ec2types.Instance) *cloudprovider.Reservation {
	spec := in.CapacityReservationSpecification
	if !p.opts.ReservedCapacity || in.CapacityReservationId == nil || spec == nil ||
		spec.CapacityReservationPreference != ec2types.CapacityReservationPreferenceCapacityReservationsOnly {
		return nil
	}
	r := &cloudprovider.Reservation{ID: aws.ToString(in.CapacityReservationId), Type: cloudprovider.ReservationTypeDefault}
	switch in.InstanceLifecycle {
	case ec2types.InstanceLifecycleTypeCapacityBlock:
		r.Type = cloudprovider.ReservationTypeCapacityBlock
	case ec2types.InstanceLifecycleTypeInterruptibleCapacityReservation:
		r.Interruptible = true
	}
	return r
}

// blockCheckEvery is how often instances in expiring Capacity Blocks are
// looked for (upstream's expiration controller requeues every minute).
const blockCheckEvery = time.Minute

// expireCapacityBlocks announces each instance of a Capacity Block that
// ends within CapacityBlockExpiryLead, once, as an interruption the
// controller deletes its claim for, as upstream's capacity-block
// expiration controller does. The blocks are the resolved NodeClasses';
// nothing is listed while none expires.
func (p *Provider) expireCapacityBlocks(ctx context.Context) {
	now := p.opts.Clock.Now()
	ids := map[string]bool{}
	p.mu.Lock()
	for _, r := range p.resolved {
		for _, cr := range r.status.CapacityReservations {
			if cr.ReservationType == cloudprovider.ReservationTypeCapacityBlock && cr.EndTime != nil && !now.Before(cr.EndTime.Add(-CapacityBlockExpiryLead)) {
				ids[cr.ID] = true
			}
		}
	}
	p.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	claims, err := p.List(ctx)
	if err != nil {
		logError(ctx, err, "listing instances for expiring capacity blocks")
		return
	}
	for _, nc := range claims {
		id := nc.Labels[cloudprovider.ReservationIDLabel]
		if !ids[id] || p.expiring[nc.Status.ProviderID] {
			continue
		}
		select {
		case p.interruptions <- cloudprovider.Interruption{ProviderID: nc.Status.ProviderID, Kind: cloudprovider.CapacityBlockExpiring}:
			p.expiring[nc.Status.ProviderID] = true
		case <-ctx.Done():
			return
		}
	}
}
