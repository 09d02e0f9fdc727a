package fake

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Instance is an EC2 instance.
type Instance struct {
	ID, InstanceType, Zone, SubnetID, ImageID, LaunchTemplateName string
	// CapacityType: on-demand or spot.
	CapacityType string
	// State: pending, running, shutting-down or terminated. DescribeInstances
	// moves pending to running and shutting-down to terminated before it
	// answers.
	State            string
	Tags             map[string]string
	SecurityGroupIDs []string
	LaunchTime       time.Time
	// VPCID and PrivateIP default from the subnet; InstanceProfile is the
	// launch template's.
	VPCID, PrivateIP, InstanceProfile string
	// FleetID is the CreateFleet request that launched it ("" for AddInstance).
	FleetID string
	// CapacityReservationID is the reservation it runs in, its launch
	// template's CapacityReservationPreference the preference, and
	// Lifecycle capacity-block or interruptible-capacity-reservation for
	// those reservations' instances.
	CapacityReservationID, CapacityReservationPreference, Lifecycle string

	terminatedAt time.Time
}

// terminatedVisible is how long a terminated instance is still described,
// as in AWS.
const terminatedVisible = time.Hour

func (i *Instance) clone() Instance {
	c := *i
	c.Tags = copyTags(i.Tags)
	c.SecurityGroupIDs = append([]string(nil), i.SecurityGroupIDs...)
	return c
}

// Instances are every instance, terminated ones included (copies).
func (f *AWS) Instances() []Instance {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Instance, len(f.ec2.instances))
	for i, in := range f.ec2.instances {
		out[i] = in.clone()
	}
	return out
}

// AddInstance adds an instance not launched through the fake's CreateFleet
// (an orphan, for garbage collection tests) and returns its ID. Defaults: a
// new ID, state running, launch time now, on-demand, VPC and private IP
// from the subnet.
func (f *AWS) AddInstance(in Instance) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	in.Tags = copyTags(in.Tags)
	in.SecurityGroupIDs = append([]string(nil), in.SecurityGroupIDs...)
	if in.State == "" {
		in.State = "running"
	}
	if in.CapacityType == "" {
		in.CapacityType = "on-demand"
	}
	if in.LaunchTime.IsZero() {
		in.LaunchTime = f.clock.Now()
	}
	f.place(&in, f.subnet(in.SubnetID))
	return in.ID
}

// place gives in an ID, a VPC and a private IP in subnet s (nil: none),
// and adds it.
func (f *AWS) place(in *Instance, s *Subnet) {
	n := f.nextID()
	if in.ID == "" {
		in.ID = fmt.Sprintf("i-%017x", n)
	}
	if s != nil {
		if in.VPCID == "" {
			in.VPCID = s.VPCID
		}
		if in.Zone == "" {
			in.Zone = s.Zone
		}
		if in.PrivateIP == "" {
			in.PrivateIP = hostIn(s.CIDR, n)
		}
		if s.AvailableIPs > 0 {
			s.AvailableIPs--
		}
	}
	f.ec2.instances = append(f.ec2.instances, in)
}

// hostIn is the n-th address (after AWS's reserved first four) of cidr.
func hostIn(cidr string, n int64) string {
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() {
		return ""
	}
	b := p.Masked().Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(4 + n)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}).String()
}

func (f *AWS) subnet(id string) *Subnet {
	for _, s := range f.ec2.subnets {
		if s.ID == id {
			return s
		}
	}
	return nil
}

func (f *AWS) instance(id string) *Instance {
	for _, in := range f.ec2.instances {
		if in.ID == id {
			return in
		}
	}
	return nil
}

// stateCodes are EC2's instance state codes.
var stateCodes = map[string]int{"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48, "stopping": 64, "stopped": 80}

type xmlState struct {
	Code int    `xml:"code"`
	Name string `xml:"name"`
}

func state(name string) xmlState { return xmlState{Code: stateCodes[name], Name: name} }

type xmlGroup struct {
	ID   string `xml:"groupId"`
	Name string `xml:"groupName,omitempty"`
}

type xmlPlacement struct {
	Zone    string `xml:"availabilityZone"`
	ZoneID  string `xml:"availabilityZoneId,omitempty"`
	Tenancy string `xml:"tenancy"`
}

type xmlProfile struct {
	Arn string `xml:"arn"`
	ID  string `xml:"id"`
}

type xmlInstance struct {
	ID               string        `xml:"instanceId"`
	ImageID          string        `xml:"imageId"`
	State            xmlState      `xml:"instanceState"`
	PrivateDNSName   string        `xml:"privateDnsName"`
	InstanceType     string        `xml:"instanceType"`
	LaunchTime       string        `xml:"launchTime"`
	Placement        xmlPlacement  `xml:"placement"`
	SubnetID         string        `xml:"subnetId,omitempty"`
	VPCID            string        `xml:"vpcId,omitempty"`
	PrivateIP        string        `xml:"privateIpAddress,omitempty"`
	Groups           []xmlGroup    `xml:"groupSet>item"`
	Architecture     string        `xml:"architecture,omitempty"`
	RootDeviceType   string        `xml:"rootDeviceType"`
	Virtualization   string        `xml:"virtualizationType"`
	Hypervisor       string        `xml:"hypervisor"`
	Lifecycle        string        `xml:"instanceLifecycle,omitempty"`
	CapacityRsvnID   string        `xml:"capacityReservationId,omitempty"`
	SpotRequestID    string        `xml:"spotInstanceRequestId,omitempty"`
	InstanceProfile  *xmlProfile   `xml:"iamInstanceProfile,omitempty"`
	Tags             []xmlTag      `xml:"tagSet>item"`
	StateReason      *xmlReason    `xml:"stateReason,omitempty"`
	PlatformDetails  string        `xml:"platformDetails"`
	AMILaunchIndex   int           `xml:"amiLaunchIndex"`
	EBSOptimized     bool          `xml:"ebsOptimized"`
	ENASupport       bool          `xml:"enaSupport"`
	SourceDestCheck  bool          `xml:"sourceDestCheck"`
	MetadataOptions  *xmlMetadata  `xml:"metadataOptions,omitempty"`
	CapacityReserved *xmlNoCapRsvn `xml:"capacityReservationSpecification,omitempty"`
}

type xmlReason struct {
	Code    string `xml:"code"`
	Message string `xml:"message"`
}

type xmlMetadata struct {
	State        string `xml:"state"`
	HTTPTokens   string `xml:"httpTokens"`
	HTTPEndpoint string `xml:"httpEndpoint"`
}

type xmlNoCapRsvn struct {
	Preference string        `xml:"capacityReservationPreference"`
	Target     *xmlCapTarget `xml:"capacityReservationTarget,omitempty"`
}

type xmlCapTarget struct {
	ID string `xml:"capacityReservationId"`
}

type xmlReservation struct {
	ID        string        `xml:"reservationId"`
	OwnerID   string        `xml:"ownerId"`
	Instances []xmlInstance `xml:"instancesSet>item"`
}

type describeInstancesOutput struct {
	Reservations []xmlReservation `xml:"reservationSet>item"`
	NextToken    string           `xml:"nextToken,omitempty"`
}

func (f *AWS) xmlInstance(in *Instance) xmlInstance {
	x := xmlInstance{
		ID: in.ID, ImageID: in.ImageID, State: state(in.State), InstanceType: in.InstanceType,
		PrivateDNSName: f.privateDNSName(in.PrivateIP),
		LaunchTime:     in.LaunchTime.UTC().Format(awsTime),
		Placement:      xmlPlacement{Zone: in.Zone, ZoneID: f.ec2.zones[in.Zone], Tenancy: "default"},
		SubnetID:       in.SubnetID, VPCID: in.VPCID, PrivateIP: in.PrivateIP,
		Architecture:   f.ec2.typeArch[in.InstanceType],
		RootDeviceType: "ebs", Virtualization: "hvm", Hypervisor: "xen", PlatformDetails: "Linux/UNIX",
		EBSOptimized: true, ENASupport: true, SourceDestCheck: true,
		Tags:             xmlTags(in.Tags),
		MetadataOptions:  &xmlMetadata{State: "applied", HTTPTokens: "required", HTTPEndpoint: "enabled"},
		CapacityReserved: &xmlNoCapRsvn{Preference: "open"},
	}
	for _, g := range in.SecurityGroupIDs {
		x.Groups = append(x.Groups, xmlGroup{ID: g, Name: f.securityGroupName(g)})
	}
	if in.CapacityReservationPreference != "" {
		x.CapacityReserved.Preference = in.CapacityReservationPreference
	}
	if in.CapacityReservationID != "" {
		x.CapacityRsvnID = in.CapacityReservationID
		x.CapacityReserved.Target = &xmlCapTarget{ID: in.CapacityReservationID}
		x.Lifecycle = in.Lifecycle
	}
	if in.CapacityType == "spot" {
		x.Lifecycle = "spot"
		x.SpotRequestID = "sir-" + idSuffix(in.ID)[:8]
	}
	if in.InstanceProfile != "" {
		arn := in.InstanceProfile
		if !strings.HasPrefix(arn, "arn:") {
			arn = fmt.Sprintf("arn:aws:iam::%s:instance-profile/%s", AccountID, in.InstanceProfile)
		}
		x.InstanceProfile = &xmlProfile{Arn: arn, ID: "AIPA" + idSuffix(in.InstanceProfile)}
	}
	if in.State == "shutting-down" || in.State == "terminated" {
		x.StateReason = &xmlReason{Code: "Client.UserInitiatedShutdown", Message: "Client.UserInitiatedShutdown: User initiated shutdown"}
	}
	return x
}

func (f *AWS) privateDNSName(ip string) string {
	if ip == "" {
		return ""
	}
	host := "ip-" + strings.ReplaceAll(ip, ".", "-")
	if f.region == "us-east-1" {
		return host + ".ec2.internal"
	}
	return host + "." + f.region + ".compute.internal"
}

func (f *AWS) securityGroupName(id string) string {
	for _, g := range f.ec2.securityGroups {
		if g.ID == id {
			return g.Name
		}
	}
	return ""
}

// advance moves instances on as time in AWS would between two describes:
// pending → running, shutting-down → terminated.
func (f *AWS) advance() {
	for _, in := range f.ec2.instances {
		switch in.State {
		case "pending":
			in.State = "running"
		case "shutting-down":
			in.State, in.terminatedAt = "terminated", f.clock.Now()
			if s := f.subnet(in.SubnetID); s != nil {
				s.AvailableIPs++
			}
			if r := f.reservation(in.CapacityReservationID); r != nil {
				r.Available++
			}
		}
	}
}

func (f *AWS) describeInstances(q url.Values) (any, error) {
	f.advance()
	ids := list(q, "InstanceId")
	if err := requireIDs(ids, "InvalidInstanceID.NotFound", "instance", f.ec2.instances, func(in *Instance) string { return in.ID }); err != nil {
		return nil, err
	}
	fs := filters(q)
	now := f.clock.Now()
	var found []xmlReservation
	for _, in := range f.ec2.instances {
		if len(ids) > 0 && !contains(ids, in.ID) {
			continue
		}
		if in.State == "terminated" && !in.terminatedAt.IsZero() && now.Sub(in.terminatedAt) > terminatedVisible {
			continue
		}
		ok, err := matches(fs, in.Tags, f.instanceAttributes(in))
		if err != nil {
			return nil, err
		}
		if ok {
			found = append(found, xmlReservation{ID: "r-" + strings.TrimPrefix(in.ID, "i-"), OwnerID: AccountID,
				Instances: []xmlInstance{f.xmlInstance(in)}})
		}
	}
	from, to, next, err := page(q, len(found), 1000)
	if err != nil {
		return nil, err
	}
	return describeInstancesOutput{Reservations: found[from:to], NextToken: next}, nil
}

func (f *AWS) instanceAttributes(in *Instance) attributes {
	return func(name string) ([]string, bool) {
		switch name {
		case "instance-id":
			return values(in.ID), true
		case "instance-state-name":
			return values(in.State), true
		case "instance-state-code":
			return values(strconv.Itoa(stateCodes[in.State])), true
		case "instance-type":
			return values(in.InstanceType), true
		case "availability-zone":
			return values(in.Zone), true
		case "subnet-id":
			return values(in.SubnetID), true
		case "vpc-id":
			return values(in.VPCID), true
		case "image-id":
			return values(in.ImageID), true
		case "private-ip-address":
			return values(in.PrivateIP), true
		case "private-dns-name":
			return values(f.privateDNSName(in.PrivateIP)), true
		case "instance-lifecycle":
			if in.CapacityType == "spot" {
				return values("spot"), true
			}
			return nil, true
		case "instance.group-id":
			return in.SecurityGroupIDs, true
		}
		return nil, false
	}
}

type xmlStateChange struct {
	ID       string   `xml:"instanceId"`
	Current  xmlState `xml:"currentState"`
	Previous xmlState `xml:"previousState"`
}

type terminateInstancesOutput struct {
	Instances []xmlStateChange `xml:"instancesSet>item"`
}

func (f *AWS) terminateInstances(q url.Values) (any, error) {
	ids := list(q, "InstanceId")
	if len(ids) == 0 {
		return nil, badRequest("MissingParameter", "The request must contain the parameter InstanceId")
	}
	if err := requireIDs(ids, "InvalidInstanceID.NotFound", "instance", f.ec2.instances, func(in *Instance) string { return in.ID }); err != nil {
		return nil, err
	}
	var out terminateInstancesOutput
	for _, id := range ids {
		in := f.instance(id)
		prev := in.State
		if prev != "terminated" {
			in.State = "shutting-down"
		}
		out.Instances = append(out.Instances, xmlStateChange{ID: id, Current: state(in.State), Previous: state(prev)})
	}
	return out, nil
}

type createTagsOutput struct {
	Return bool `xml:"return"`
}

// createTags tags instances, launch templates, subnets, security groups and
// images.
func (f *AWS) createTags(q url.Values) (any, error) {
	ids, tags := list(q, "ResourceId"), tagList(q, "Tag")
	var targets []map[string]string
	for _, id := range ids {
		t := f.tagsOf(id)
		if t == nil {
			code := "InvalidID"
			switch {
			case strings.HasPrefix(id, "i-"):
				code = "InvalidInstanceID.NotFound"
			case strings.HasPrefix(id, "lt-"):
				code = "InvalidLaunchTemplateId.NotFound"
			}
			return nil, badRequest(code, "The ID '%s' does not exist", id)
		}
		targets = append(targets, t)
	}
	for _, t := range targets {
		for k, v := range tags {
			t[k] = v
		}
	}
	return createTagsOutput{Return: true}, nil
}

// tagsOf is the tag map of a resource by ID; nil when there is none.
func (f *AWS) tagsOf(id string) map[string]string {
	ensure := func(m *map[string]string) map[string]string {
		if *m == nil {
			*m = map[string]string{}
		}
		return *m
	}
	for _, in := range f.ec2.instances {
		if in.ID == id {
			return ensure(&in.Tags)
		}
	}
	for _, lt := range f.ec2.launchTemplates {
		if lt.ID == id {
			return ensure(&lt.Tags)
		}
	}
	for _, s := range f.ec2.subnets {
		if s.ID == id {
			return ensure(&s.Tags)
		}
	}
	for _, g := range f.ec2.securityGroups {
		if g.ID == id {
			return ensure(&g.Tags)
		}
	}
	for _, img := range f.ec2.images {
		if img.ID == id {
			return ensure(&img.Tags)
		}
	}
	return nil
}
