package fake

import (
	"fmt"
	"net/url"
	"time"
)

// CapacityReservation is an EC2 capacity reservation: an On-Demand
// Capacity Reservation (ReservationType default) or a Capacity Block, for
// Total instances of one type in one zone, Available of them free.
type CapacityReservation struct {
	ID, InstanceType, Zone string
	Total, Available       int32
	// ReservationType: default or capacity-block.
	ReservationType       string
	Interruptible         bool
	OwnerID               string
	InstanceMatchCriteria string // open or targeted
	// State: active (the default), expired, cancelled, ….
	State string
	Tags  map[string]string
	// EndDate: zero for none.
	EndDate time.Time
}

func (r *CapacityReservation) clone() CapacityReservation {
	c := *r
	c.Tags = copyTags(r.Tags)
	return c
}

// AddCapacityReservation creates a reservation, its defaults filled
// (default type, targeted, active, the fake's account, Available = Total).
func (f *AWS) AddCapacityReservation(r CapacityReservation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.ReservationType == "" {
		r.ReservationType = "default"
	}
	if r.InstanceMatchCriteria == "" {
		r.InstanceMatchCriteria = "targeted"
	}
	if r.State == "" {
		r.State = "active"
	}
	if r.OwnerID == "" {
		r.OwnerID = AccountID
	}
	if r.Available == 0 {
		r.Available = r.Total
	}
	r.Tags = copyTags(r.Tags)
	f.ec2.reservations = append(f.ec2.reservations, &r)
}

// CapacityReservations are the reservations (copies).
func (f *AWS) CapacityReservations() []CapacityReservation {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]CapacityReservation, len(f.ec2.reservations))
	for i, r := range f.ec2.reservations {
		out[i] = r.clone()
	}
	return out
}

// SetCapacityReservationState changes a reservation's state (expired,
// cancelled), as EC2 does at its end: an instance of a reservation no
// longer active carries on as on-demand, in no reservation.
func (f *AWS) SetCapacityReservationState(id, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.reservation(id)
	if r == nil {
		return
	}
	r.State = state
	if state == "active" {
		return
	}
	for _, in := range f.ec2.instances {
		if in.CapacityReservationID == id {
			in.CapacityReservationID, in.Lifecycle = "", ""
		}
	}
}

func (f *AWS) reservation(id string) *CapacityReservation {
	for _, r := range f.ec2.reservations {
		if r.ID == id {
			return r
		}
	}
	return nil
}

type xmlCapacityReservation struct {
	ID                    string   `xml:"capacityReservationId"`
	OwnerID               string   `xml:"ownerId"`
	InstanceType          string   `xml:"instanceType"`
	Zone                  string   `xml:"availabilityZone"`
	ZoneID                string   `xml:"availabilityZoneId,omitempty"`
	Total                 int32    `xml:"totalInstanceCount"`
	Available             int32    `xml:"availableInstanceCount"`
	State                 string   `xml:"state"`
	InstanceMatchCriteria string   `xml:"instanceMatchCriteria"`
	ReservationType       string   `xml:"reservationType"`
	Interruptible         bool     `xml:"interruptible"`
	EndDate               string   `xml:"endDate,omitempty"`
	EndDateType           string   `xml:"endDateType"`
	InstancePlatform      string   `xml:"instancePlatform"`
	Tags                  []xmlTag `xml:"tagSet>item"`
}

type describeCapacityReservationsOutput struct {
	Reservations []xmlCapacityReservation `xml:"capacityReservationSet>item"`
	NextToken    string                   `xml:"nextToken,omitempty"`
}

// describeCapacityReservations answers by CapacityReservationId.N and the
// filters upstream's provider sends (state, owner-id,
// instance-match-criteria, instance-type, availability-zone, tag:K,
// tag-key).
func (f *AWS) describeCapacityReservations(q url.Values) (any, error) {
	ids := list(q, "CapacityReservationId")
	if err := requireIDs(ids, "InvalidCapacityReservationId.NotFound", "capacity reservation", f.ec2.reservations, func(r *CapacityReservation) string { return r.ID }); err != nil {
		return nil, err
	}
	fs := filters(q)
	var found []xmlCapacityReservation
	for _, r := range f.ec2.reservations {
		if len(ids) > 0 && !contains(ids, r.ID) {
			continue
		}
		ok, err := matches(fs, r.Tags, func(name string) ([]string, bool) {
			switch name {
			case "state":
				return values(r.State), true
			case "owner-id":
				return values(r.OwnerID), true
			case "instance-match-criteria":
				return values(r.InstanceMatchCriteria), true
			case "instance-type":
				return values(r.InstanceType), true
			case "availability-zone":
				return values(r.Zone), true
			case "reservation-type":
				return values(r.ReservationType), true
			}
			return nil, false
		})
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		x := xmlCapacityReservation{ID: r.ID, OwnerID: r.OwnerID, InstanceType: r.InstanceType, Zone: r.Zone, ZoneID: f.ec2.zones[r.Zone],
			Total: r.Total, Available: r.Available, State: r.State, InstanceMatchCriteria: r.InstanceMatchCriteria,
			ReservationType: r.ReservationType, Interruptible: r.Interruptible, EndDateType: "unlimited", InstancePlatform: "Linux/UNIX", Tags: xmlTags(r.Tags)}
		if !r.EndDate.IsZero() {
			x.EndDate, x.EndDateType = r.EndDate.UTC().Format(awsTime), "limited"
		}
		found = append(found, x)
	}
	from, to, next, err := page(q, len(found), 1000)
	if err != nil {
		return nil, err
	}
	return describeCapacityReservationsOutput{Reservations: found[from:to], NextToken: next}, nil
}

// reservedCandidate checks a launch into the reservation a template
// targets: it exists, is active, is of the override's type and zone, has
// an instance free. code is the fleet error's when not.
func (f *AWS) reservedCandidate(c candidate) (code, msg string) {
	r := f.reservation(c.template.CapacityReservationID)
	switch {
	case r == nil:
		return "InvalidCapacityReservationId.NotFound", fmt.Sprintf("The capacity reservation ID '%s' does not exist", c.template.CapacityReservationID)
	case r.State != "active":
		return "InvalidCapacityReservationId.Malformed", fmt.Sprintf("The capacity reservation '%s' is %s", r.ID, r.State)
	case r.InstanceType != c.InstanceType || r.Zone != c.Zone:
		return "InvalidParameterCombination", fmt.Sprintf("The capacity reservation '%s' is for %s in %s, not %s in %s", r.ID, r.InstanceType, r.Zone, c.InstanceType, c.Zone)
	case r.Available <= 0:
		return "ReservationCapacityExceeded", fmt.Sprintf("The requested capacity reservation '%s' does not have sufficient capacity.", r.ID)
	}
	return "", ""
}
