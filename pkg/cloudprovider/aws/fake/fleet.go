package fake

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
)

// Fleet is a CreateFleet request as received.
type Fleet struct {
	// ID is the fleet ID the fake answered.
	ID string
	// Type: instant (the only one the fake launches).
	Type string
	// TargetCapacityType: on-demand or spot.
	TargetCapacityType string
	// AllocationStrategy of the target capacity type's options.
	AllocationStrategy string
	TotalCapacity      int32
	// Overrides of every launch template config, in order.
	Overrides []Override
	// LaunchTemplateName is the first config's template.
	LaunchTemplateName string
	// Tags are the instance tags (TagSpecification instance);
	// TagSpecifications every resource type's.
	Tags              map[string]string
	TagSpecifications map[string]map[string]string
	Context           string
}

// Override is one LaunchTemplateConfigs.N.Overrides.M.
type Override struct {
	InstanceType, SubnetID, Zone string
	Priority                     *float64
	ImageID                      string
	// LaunchTemplateName (or ID) of the config the override is in.
	LaunchTemplateName, LaunchTemplateID string
}

func (fl Fleet) clone() Fleet {
	c := fl
	c.Overrides = append([]Override(nil), fl.Overrides...)
	c.Tags = copyTags(fl.Tags)
	c.TagSpecifications = map[string]map[string]string{}
	for k, v := range fl.TagSpecifications {
		c.TagSpecifications[k] = copyTags(v)
	}
	return c
}

// Fleets are every CreateFleet request received (copies).
func (f *AWS) Fleets() []Fleet {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Fleet, len(f.ec2.fleets))
	for i, fl := range f.ec2.fleets {
		out[i] = fl.clone()
	}
	return out
}

func parseFleet(q url.Values) Fleet {
	fl := Fleet{
		Type:               q.Get("Type"),
		TargetCapacityType: q.Get("TargetCapacitySpecification.DefaultTargetCapacityType"),
		TotalCapacity:      int32Param(q, "TargetCapacitySpecification.TotalTargetCapacity"),
		TagSpecifications:  tagSpecifications(q, "TagSpecification"),
		Context:            q.Get("Context"),
	}
	if fl.Type == "" {
		fl.Type = "maintain"
	}
	if fl.TargetCapacityType == "spot" {
		fl.AllocationStrategy = q.Get("SpotOptions.AllocationStrategy")
	} else {
		fl.AllocationStrategy = q.Get("OnDemandOptions.AllocationStrategy")
	}
	fl.Tags = copyTags(fl.TagSpecifications["instance"])
	for i, c := range indexes(q, "LaunchTemplateConfigs") {
		name := q.Get(c + ".LaunchTemplateSpecification.LaunchTemplateName")
		id := q.Get(c + ".LaunchTemplateSpecification.LaunchTemplateId")
		if i == 0 {
			fl.LaunchTemplateName = name
		}
		for _, o := range indexes(q, c+".Overrides") {
			ov := Override{
				InstanceType: q.Get(o + ".InstanceType"), SubnetID: q.Get(o + ".SubnetId"),
				Zone: q.Get(o + ".AvailabilityZone"), ImageID: q.Get(o + ".ImageId"),
				LaunchTemplateName: name, LaunchTemplateID: id,
			}
			if p, err := strconv.ParseFloat(q.Get(o+".Priority"), 64); err == nil {
				ov.Priority = &p
			}
			fl.Overrides = append(fl.Overrides, ov)
		}
	}
	return fl
}

type xmlTemplateSpec struct {
	ID      string `xml:"launchTemplateId,omitempty"`
	Name    string `xml:"launchTemplateName,omitempty"`
	Version string `xml:"version"`
}

type xmlOverride struct {
	InstanceType string   `xml:"instanceType,omitempty"`
	SubnetID     string   `xml:"subnetId,omitempty"`
	Zone         string   `xml:"availabilityZone,omitempty"`
	ImageID      string   `xml:"imageId,omitempty"`
	Priority     *float64 `xml:"priority,omitempty"`
}

type xmlTemplateAndOverrides struct {
	Spec      xmlTemplateSpec `xml:"launchTemplateSpecification"`
	Overrides xmlOverride     `xml:"overrides"`
}

type xmlFleetError struct {
	TemplateAndOverrides xmlTemplateAndOverrides `xml:"launchTemplateAndOverrides"`
	Lifecycle            string                  `xml:"lifecycle"`
	Code                 string                  `xml:"errorCode"`
	Message              string                  `xml:"errorMessage"`
}

type xmlFleetInstance struct {
	TemplateAndOverrides xmlTemplateAndOverrides `xml:"launchTemplateAndOverrides"`
	Lifecycle            string                  `xml:"lifecycle"`
	InstanceIDs          []string                `xml:"instanceIds>item"`
	InstanceType         string                  `xml:"instanceType"`
	Zone                 string                  `xml:"availabilityZone,omitempty"`
	SubnetID             string                  `xml:"subnetId,omitempty"`
	Platform             string                  `xml:"platform,omitempty"`
}

type createFleetOutput struct {
	FleetID   string             `xml:"fleetId"`
	Errors    []xmlFleetError    `xml:"errorSet>item"`
	Instances []xmlFleetInstance `xml:"fleetInstanceSet>item"`
}

func (o Override) xml() xmlTemplateAndOverrides {
	return xmlTemplateAndOverrides{
		Spec: xmlTemplateSpec{ID: o.LaunchTemplateID, Name: o.LaunchTemplateName, Version: "$Latest"},
		Overrides: xmlOverride{InstanceType: o.InstanceType, SubnetID: o.SubnetID, Zone: o.Zone,
			ImageID: o.ImageID, Priority: o.Priority},
	}
}

// candidate is an override that can launch: its template, subnet, zone
// and price.
type candidate struct {
	Override
	template *LaunchTemplate
	subnet   *Subnet
	price    float64
}

// createFleet launches an instant fleet at once: all its capacity in the
// one pool the allocation strategy picks (on-demand lowest-price or
// prioritized; spot the cheapest, whatever the strategy), skipping
// overrides without capacity, which come back in errorSet.
func (f *AWS) createFleet(q url.Values) (any, error) {
	fl := parseFleet(q)
	n := f.nextID()
	fl.ID = fmt.Sprintf("fleet-%08x-0000-4000-8000-%012x", n, n)
	f.ec2.fleets = append(f.ec2.fleets, fl.clone())
	if fl.Type != "instant" {
		return nil, badRequest("InvalidParameterValue", "the fake launches only fleets of type instant, not %q", fl.Type)
	}
	switch fl.TargetCapacityType {
	case "on-demand", "spot", "capacity-block", "reserved-capacity":
	default:
		return nil, badRequest("InvalidParameterValue", "DefaultTargetCapacityType %q is invalid", fl.TargetCapacityType)
	}
	if fl.TotalCapacity < 1 {
		return nil, badRequest("InvalidTargetCapacitySpecification", "TotalTargetCapacity must be at least 1")
	}

	out := createFleetOutput{FleetID: fl.ID}
	var candidates []candidate
	for _, o := range fl.Overrides {
		c, code, msg := f.candidate(o, fl.TargetCapacityType)
		if code != "" {
			out.Errors = append(out.Errors, xmlFleetError{TemplateAndOverrides: c.Override.xml(),
				Lifecycle: fl.TargetCapacityType, Code: code, Message: msg})
			continue
		}
		candidates = append(candidates, c)
	}
	launch := int(fl.TotalCapacity)
	if p := f.faults.partial; p != nil {
		f.faults.partial = nil
		launch = max(min(launch, *p), 0)
	}
	best, ok := pick(candidates, fl.AllocationStrategy)
	if !ok {
		return out, nil
	}
	if launch < int(fl.TotalCapacity) {
		out.Errors = append(out.Errors, iceError(best.Override, fl.TargetCapacityType))
	}
	if launch == 0 {
		return out, nil
	}
	launched := xmlFleetInstance{TemplateAndOverrides: best.Override.xml(), Lifecycle: fl.TargetCapacityType,
		InstanceType: best.InstanceType, Zone: best.Zone, SubnetID: best.SubnetID}
	for range launch {
		launched.InstanceIDs = append(launched.InstanceIDs, f.launch(best, fl))
	}
	out.Instances = append(out.Instances, launched)
	return out, nil
}

func iceError(o Override, capacityType string) xmlFleetError {
	return xmlFleetError{TemplateAndOverrides: o.xml(), Lifecycle: capacityType,
		Code:    "InsufficientInstanceCapacity",
		Message: fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s).", o.InstanceType, o.Zone)}
}

// candidate checks an override: its template exists, its subnet exists,
// its type is offered in its zone with capacity. code is the error entry's
// when it cannot launch.
func (f *AWS) candidate(o Override, capacityType string) (c candidate, code, msg string) {
	c.Override = o
	if c.template = f.launchTemplate(o.LaunchTemplateName, o.LaunchTemplateID); c.template == nil {
		if o.LaunchTemplateName == "" {
			return c, "InvalidLaunchTemplateId.NotFound", fmt.Sprintf("The specified launch template, with template ID %s, does not exist.", o.LaunchTemplateID)
		}
		return c, "InvalidLaunchTemplateName.NotFoundException", fmt.Sprintf("The specified launch template, with template name %s, does not exist.", o.LaunchTemplateName)
	}
	if o.SubnetID != "" {
		if c.subnet = f.subnet(o.SubnetID); c.subnet == nil {
			return c, "InvalidSubnetID.NotFound", fmt.Sprintf("The subnet ID '%s' does not exist", o.SubnetID)
		}
		c.Zone = c.subnet.Zone
		if c.subnet.AvailableIPs == 0 {
			return c, "InsufficientFreeAddressesInSubnet", fmt.Sprintf("There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", o.SubnetID)
		}
	}
	if !contains(f.ec2.offered[o.InstanceType], c.Zone) {
		return c, "Unsupported", fmt.Sprintf("Your requested instance type (%s) is not supported in your requested Availability Zone (%s).", o.InstanceType, c.Zone)
	}
	if c.template.CapacityReservationID != "" {
		code, msg := f.reservedCandidate(c)
		return c, code, msg // free: it is paid for
	}
	if f.faults.ice[offering{o.InstanceType, c.Zone, capacityType}] {
		e := iceError(c.Override, capacityType)
		return c, e.Code, e.Message
	}
	c.price = f.ec2.onDemand[o.InstanceType]
	if capacityType == "spot" {
		c.price = f.ec2.spot[o.InstanceType][c.Zone]
	}
	return c, "", ""
}

// pick is the pool an instant fleet launches in: the lowest priority for a
// prioritized strategy, else the lowest price; ties go to the first.
func pick(cs []candidate, strategy string) (candidate, bool) {
	prioritized := strategy == "prioritized" || strategy == "capacity-optimized-prioritized"
	key := func(c candidate) float64 {
		if prioritized {
			if c.Priority == nil {
				return math.Inf(1)
			}
			return *c.Priority
		}
		return c.price
	}
	if len(cs) == 0 {
		return candidate{}, false
	}
	best := cs[0]
	for _, c := range cs[1:] {
		if key(c) < key(best) {
			best = c
		}
	}
	return best, true
}

// launch starts one pending instance of c for fleet fl and returns its ID.
func (f *AWS) launch(c candidate, fl Fleet) string {
	tags := copyTags(c.template.InstanceTags)
	for k, v := range fl.Tags {
		tags[k] = v
	}
	image := c.ImageID
	if image == "" {
		image = c.template.ImageID
	}
	in := &Instance{
		InstanceType: c.InstanceType, Zone: c.Zone, SubnetID: c.SubnetID, ImageID: image,
		LaunchTemplateName: c.template.Name, CapacityType: fl.TargetCapacityType, State: "pending",
		Tags: tags, SecurityGroupIDs: append([]string(nil), c.template.SecurityGroupIDs...),
		LaunchTime: f.clock.Now(), InstanceProfile: c.template.InstanceProfile, FleetID: fl.ID,
		CapacityReservationPreference: c.template.CapacityReservationPreference,
	}
	if r := f.reservation(c.template.CapacityReservationID); r != nil {
		r.Available--
		in.CapacityReservationID, in.CapacityType = r.ID, "on-demand"
		switch {
		case r.ReservationType == "capacity-block":
			in.Lifecycle = "capacity-block"
		case r.Interruptible:
			in.Lifecycle = "interruptible-capacity-reservation"
		}
	}
	f.place(in, c.subnet)
	return in.ID
}
