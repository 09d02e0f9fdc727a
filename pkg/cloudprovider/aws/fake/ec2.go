package fake

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

var ec2Service = &service{
	name:           "ec2",
	protocol:       ec2Query,
	xmlNamespace:   "http://ec2.amazonaws.com/doc/2016-11-15/",
	throttleCode:   "RequestLimitExceeded",
	throttleStatus: http.StatusServiceUnavailable,
	query: map[string]func(*AWS, url.Values) (any, error){
		"DescribeSubnets":               (*AWS).describeSubnets,
		"DescribeCapacityReservations":  (*AWS).describeCapacityReservations,
		"DescribeSecurityGroups":        (*AWS).describeSecurityGroups,
		"DescribeImages":                (*AWS).describeImages,
		"DescribeAvailabilityZones":     (*AWS).describeAvailabilityZones,
		"DescribeInstanceTypes":         (*AWS).describeInstanceTypes,
		"DescribeInstanceTypeOfferings": (*AWS).describeInstanceTypeOfferings,
		"DescribeSpotPriceHistory":      (*AWS).describeSpotPriceHistory,
		"CreateLaunchTemplate":          idempotent("CreateLaunchTemplate", (*AWS).createLaunchTemplate),
		"DescribeLaunchTemplates":       (*AWS).describeLaunchTemplates,
		"DeleteLaunchTemplate":          (*AWS).deleteLaunchTemplate,
		"CreateFleet":                   idempotent("CreateFleet", (*AWS).createFleet),
		"DescribeInstances":             (*AWS).describeInstances,
		"TerminateInstances":            (*AWS).terminateInstances,
		"CreateTags":                    (*AWS).createTags,
	},
}

// Subnet is a subnet of the fake account.
type Subnet struct {
	ID, VPCID, Zone, ZoneID, CIDR string
	// AvailableIPs: free addresses, one fewer per instance launched in the
	// subnet. AddSubnet takes 0 for the CIDR's size less the five AWS
	// reserves (8187 without a CIDR), and a negative number for none free
	// (CreateFleet then answers InsufficientFreeAddressesInSubnet).
	AvailableIPs int32
	Tags         map[string]string
}

// SecurityGroup is a security group of the fake account.
type SecurityGroup struct {
	ID, Name, VPCID string
	Tags            map[string]string
}

// Image is an AMI.
type Image struct {
	ID, Name string
	// OwnerID is the owner's account; OwnerAlias "amazon" for Amazon's
	// images. The Owners parameter matches either ("self" the fake's
	// account).
	OwnerID, OwnerAlias string
	// Architecture: x86_64 or arm64.
	Architecture    string
	CreationDate    time.Time
	DeprecationTime *time.Time
	// State, default available.
	State string
	Tags  map[string]string
}

// ec2State is what the fake EC2 holds. Slices keep insertion order, so
// answers are deterministic.
type ec2State struct {
	vpcs           map[string]string
	subnets        []*Subnet
	securityGroups []*SecurityGroup
	images         []*Image
	// zones: name → zone ID, for DescribeAvailabilityZones.
	zones map[string]string

	// From SeedCatalog.
	types    []instanceTypeInfo
	typeArch map[string]string
	// offered: instance type → zones; onDemand: type → USD/hour in the
	// fake's region; spot: type → zone → USD/hour.
	offered  map[string][]string
	onDemand map[string]float64
	spot     map[string]map[string]float64
	// pricing: the Pricing API's products (every region the catalog has).
	pricing []product

	launchTemplates []*LaunchTemplate
	instances       []*Instance
	reservations    []*CapacityReservation
	fleets          []Fleet
	// answered: the answers of idempotent calls by action and ClientToken.
	answered map[string]any
}

func (s *ec2State) init() {
	s.answered = map[string]any{}
	s.vpcs = map[string]string{}
	s.zones = map[string]string{}
	s.typeArch = map[string]string{}
	s.offered = map[string][]string{}
	s.onDemand = map[string]float64{}
	s.spot = map[string]map[string]float64{}
}

// idempotent makes a call as EC2 makes CreateFleet and CreateLaunchTemplate
// (whose ClientToken the SDK fills in once per operation, the same for its
// retries): a request with a ClientToken answered before gets that answer
// again and changes nothing. This matters on loopback: Go's transport may
// fail reading a large answer when the SDK closes the request body while
// the transport still checks it for EOF, and the SDK then retries a call
// the fake has already carried out.
func idempotent(action string, call func(f *AWS, q url.Values) (any, error)) func(f *AWS, q url.Values) (any, error) {
	return func(f *AWS, q url.Values) (any, error) {
		token := q.Get("ClientToken")
		if out, ok := f.ec2.answered[action+"/"+token]; ok && token != "" {
			return out, nil
		}
		out, err := call(f, q)
		if err == nil && token != "" {
			f.ec2.answered[action+"/"+token] = out
		}
		return out, err
	}
}

// AddVPC adds a VPC.
func (f *AWS) AddVPC(id, cidr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ec2.vpcs[id] = cidr
}

// AddSubnet adds a subnet (and its zone). A missing ZoneID is derived from
// the zone (us-east-1a → use1-az1).
func (f *AWS) AddSubnet(s Subnet) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.ZoneID == "" {
		s.ZoneID = zoneID(s.Zone)
	}
	switch {
	case s.AvailableIPs < 0:
		s.AvailableIPs = 0
	case s.AvailableIPs == 0:
		s.AvailableIPs = 8187 // a /19's, when the CIDR does not say
		if p, err := netip.ParsePrefix(s.CIDR); err == nil && p.Addr().Is4() && p.Bits() >= 16 {
			s.AvailableIPs = int32(1<<(32-p.Bits())) - 5
		}
	}
	s.Tags = copyTags(s.Tags)
	f.ec2.subnets = append(f.ec2.subnets, &s)
	f.ec2.zones[s.Zone] = s.ZoneID
}

// AddSecurityGroup adds a security group.
func (f *AWS) AddSecurityGroup(g SecurityGroup) {
	f.mu.Lock()
	defer f.mu.Unlock()
	g.Tags = copyTags(g.Tags)
	f.ec2.securityGroups = append(f.ec2.securityGroups, &g)
}

// AddImage adds an AMI.
func (f *AWS) AddImage(img Image) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if img.State == "" {
		img.State = "available"
	}
	img.Tags = copyTags(img.Tags)
	f.ec2.images = append(f.ec2.images, &img)
}

// Images are the AMIs (copies).
func (f *AWS) Images() []Image {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Image, len(f.ec2.images))
	for i, img := range f.ec2.images {
		out[i] = *img
		out[i].Tags = copyTags(img.Tags)
	}
	return out
}

// zoneID makes an AZ ID from a zone name as AWS spells them: us-east-1a →
// use1-az1, ap-southeast-2b → apse2-az2.
func zoneID(zone string) string {
	if zone == "" {
		return ""
	}
	region, letter := zone[:len(zone)-1], zone[len(zone)-1]
	parts := strings.Split(region, "-")
	if len(parts) < 3 {
		return zone
	}
	short := map[string]string{"east": "e", "west": "w", "north": "n", "south": "s", "central": "c",
		"northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw"}
	var b strings.Builder
	for i, p := range parts {
		switch {
		case i == 0, i == len(parts)-1:
			b.WriteString(p)
		case short[p] != "":
			b.WriteString(short[p])
		default:
			b.WriteString(p[:1])
		}
	}
	return fmt.Sprintf("%s-az%d", b.String(), letter-'a'+1)
}

type xmlSubnet struct {
	SubnetID         string   `xml:"subnetId"`
	SubnetArn        string   `xml:"subnetArn"`
	VPCID            string   `xml:"vpcId"`
	OwnerID          string   `xml:"ownerId"`
	State            string   `xml:"state"`
	CIDR             string   `xml:"cidrBlock"`
	AvailableIPs     int32    `xml:"availableIpAddressCount"`
	Zone             string   `xml:"availabilityZone"`
	ZoneID           string   `xml:"availabilityZoneId"`
	DefaultForAz     bool     `xml:"defaultForAz"`
	MapPublicIP      bool     `xml:"mapPublicIpOnLaunch"`
	AssignIPv6       bool     `xml:"assignIpv6AddressOnCreation"`
	Tags             []xmlTag `xml:"tagSet>item"`
	IPv6Native       bool     `xml:"ipv6Native"`
	CustomerOwnedIPs bool     `xml:"mapCustomerOwnedIpOnLaunch"`
}

type describeSubnetsOutput struct {
	Subnets   []xmlSubnet `xml:"subnetSet>item"`
	NextToken string      `xml:"nextToken,omitempty"`
}

func (f *AWS) describeSubnets(q url.Values) (any, error) {
	ids := list(q, "SubnetId")
	if err := requireIDs(ids, "InvalidSubnetID.NotFound", "subnet", f.ec2.subnets, func(s *Subnet) string { return s.ID }); err != nil {
		return nil, err
	}
	fs := filters(q)
	var found []xmlSubnet
	for _, s := range f.ec2.subnets {
		if len(ids) > 0 && !contains(ids, s.ID) {
			continue
		}
		ok, err := matches(fs, s.Tags, func(name string) ([]string, bool) {
			switch name {
			case "subnet-id":
				return values(s.ID), true
			case "vpc-id":
				return values(s.VPCID), true
			case "availability-zone", "availabilityZone":
				return values(s.Zone), true
			case "availability-zone-id", "availabilityZoneId":
				return values(s.ZoneID), true
			case "cidr-block", "cidrBlock", "cidr":
				return values(s.CIDR), true
			case "state":
				return values("available"), true
			case "owner-id":
				return values(AccountID), true
			}
			return nil, false
		})
		if err != nil {
			return nil, err
		}
		if ok {
			found = append(found, xmlSubnet{
				SubnetID: s.ID, VPCID: s.VPCID, OwnerID: AccountID, State: "available", CIDR: s.CIDR,
				SubnetArn:    fmt.Sprintf("arn:aws:ec2:%s:%s:subnet/%s", f.region, AccountID, s.ID),
				AvailableIPs: s.AvailableIPs, Zone: s.Zone, ZoneID: s.ZoneID, Tags: xmlTags(s.Tags),
			})
		}
	}
	from, to, next, err := page(q, len(found), 1000)
	if err != nil {
		return nil, err
	}
	return describeSubnetsOutput{Subnets: found[from:to], NextToken: next}, nil
}

// requireIDs answers AWS's NotFound error for the first of ids that does
// not exist.
func requireIDs[T any](ids []string, code, kind string, items []T, idOf func(T) string) error {
	known := make(map[string]bool, len(items))
	for _, it := range items {
		known[idOf(it)] = true
	}
	for _, id := range ids {
		if !known[id] {
			return badRequest(code, "The %s ID '%s' does not exist", kind, id)
		}
	}
	return nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

type xmlSecurityGroup struct {
	OwnerID     string   `xml:"ownerId"`
	GroupID     string   `xml:"groupId"`
	GroupName   string   `xml:"groupName"`
	Description string   `xml:"groupDescription"`
	VPCID       string   `xml:"vpcId"`
	Arn         string   `xml:"securityGroupArn"`
	Tags        []xmlTag `xml:"tagSet>item"`
}

type describeSecurityGroupsOutput struct {
	Groups    []xmlSecurityGroup `xml:"securityGroupInfo>item"`
	NextToken string             `xml:"nextToken,omitempty"`
}

func (f *AWS) describeSecurityGroups(q url.Values) (any, error) {
	ids, names := list(q, "GroupId"), list(q, "GroupName")
	if err := requireIDs(ids, "InvalidGroup.NotFound", "security group", f.ec2.securityGroups, func(g *SecurityGroup) string { return g.ID }); err != nil {
		return nil, err
	}
	fs := filters(q)
	var found []xmlSecurityGroup
	for _, g := range f.ec2.securityGroups {
		if len(ids) > 0 && !contains(ids, g.ID) || len(names) > 0 && !contains(names, g.Name) {
			continue
		}
		ok, err := matches(fs, g.Tags, func(name string) ([]string, bool) {
			switch name {
			case "group-id":
				return values(g.ID), true
			case "group-name":
				return values(g.Name), true
			case "vpc-id":
				return values(g.VPCID), true
			case "owner-id":
				return values(AccountID), true
			}
			return nil, false
		})
		if err != nil {
			return nil, err
		}
		if ok {
			found = append(found, xmlSecurityGroup{
				OwnerID: AccountID, GroupID: g.ID, GroupName: g.Name, Description: g.Name, VPCID: g.VPCID,
				Arn:  fmt.Sprintf("arn:aws:ec2:%s:%s:security-group/%s", f.region, AccountID, g.ID),
				Tags: xmlTags(g.Tags),
			})
		}
	}
	from, to, next, err := page(q, len(found), 1000)
	if err != nil {
		return nil, err
	}
	return describeSecurityGroupsOutput{Groups: found[from:to], NextToken: next}, nil
}

type xmlImage struct {
	ImageID            string   `xml:"imageId"`
	Location           string   `xml:"imageLocation"`
	State              string   `xml:"imageState"`
	OwnerID            string   `xml:"imageOwnerId"`
	OwnerAlias         string   `xml:"imageOwnerAlias,omitempty"`
	CreationDate       string   `xml:"creationDate"`
	DeprecationTime    string   `xml:"deprecationTime,omitempty"`
	Public             bool     `xml:"isPublic"`
	Architecture       string   `xml:"architecture"`
	ImageType          string   `xml:"imageType"`
	Name               string   `xml:"name"`
	Description        string   `xml:"description"`
	RootDeviceType     string   `xml:"rootDeviceType"`
	RootDeviceName     string   `xml:"rootDeviceName"`
	VirtualizationType string   `xml:"virtualizationType"`
	Hypervisor         string   `xml:"hypervisor"`
	PlatformDetails    string   `xml:"platformDetails"`
	EnaSupport         bool     `xml:"enaSupport"`
	Tags               []xmlTag `xml:"tagSet>item"`
}

type describeImagesOutput struct {
	Images    []xmlImage `xml:"imagesSet>item"`
	NextToken string     `xml:"nextToken,omitempty"`
}

// awsTime is the timestamp format EC2 answers in.
const awsTime = "2006-01-02T15:04:05.000Z"

// describeImages: as AWS, a deprecated image is listed only when
// IncludeDeprecated is true, image IDs are given, or it is the caller's own.
// Its complexity is one condition per filter and parameter of
// DescribeImages the fake honours.
func (f *AWS) describeImages(q url.Values) (any, error) {
	ids, owners := list(q, "ImageId"), list(q, "Owner")
	includeDeprecated := q.Get("IncludeDeprecated") == "true" || len(ids) > 0
	now := f.clock.Now()
	fs := filters(q)
	var found []xmlImage
	for _, img := range f.ec2.images {
		if len(ids) > 0 && !contains(ids, img.ID) {
			continue
		}
		if len(owners) > 0 && !f.ownedBy(img, owners) {
			continue
		}
		deprecated := img.DeprecationTime != nil && !img.DeprecationTime.After(now)
		if deprecated && !includeDeprecated && img.OwnerID != AccountID {
			continue
		}
		ok, err := matches(fs, img.Tags, func(name string) ([]string, bool) {
			switch name {
			case "image-id":
				return values(img.ID), true
			case "name":
				return values(img.Name), true
			case "owner-id":
				return values(img.OwnerID), true
			case "owner-alias":
				return values(img.OwnerAlias), true
			case "architecture":
				return values(img.Architecture), true
			case "state":
				return values(img.State), true
			case "image-type":
				return values("machine"), true
			case "is-public":
				return values(strconv.FormatBool(img.OwnerID != AccountID)), true
			}
			return nil, false
		})
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		x := xmlImage{
			ImageID: img.ID, Location: img.OwnerAlias + "/" + img.Name, State: img.State, OwnerID: img.OwnerID,
			OwnerAlias: img.OwnerAlias, CreationDate: img.CreationDate.UTC().Format(awsTime),
			Public: img.OwnerID != AccountID, Architecture: img.Architecture, ImageType: "machine", Name: img.Name,
			Description: img.Name, RootDeviceType: "ebs", RootDeviceName: "/dev/xvda", VirtualizationType: "hvm",
			Hypervisor: "xen", PlatformDetails: "Linux/UNIX", EnaSupport: true, Tags: xmlTags(img.Tags),
		}
		if img.DeprecationTime != nil {
			x.DeprecationTime = img.DeprecationTime.UTC().Format(awsTime)
		}
		found = append(found, x)
	}
	from, to, next, err := page(q, len(found), 1000)
	if err != nil {
		return nil, err
	}
	return describeImagesOutput{Images: found[from:to], NextToken: next}, nil
}

func (f *AWS) ownedBy(img *Image, owners []string) bool {
	for _, o := range owners {
		if o == img.OwnerID || o == img.OwnerAlias && o != "" || o == "self" && img.OwnerID == AccountID {
			return true
		}
	}
	return false
}

type xmlZone struct {
	ZoneName           string `xml:"zoneName"`
	ZoneID             string `xml:"zoneId"`
	State              string `xml:"zoneState"`
	RegionName         string `xml:"regionName"`
	ZoneType           string `xml:"zoneType"`
	OptInStatus        string `xml:"optInStatus"`
	GroupName          string `xml:"groupName"`
	NetworkBorderGroup string `xml:"networkBorderGroup"`
}

type describeAvailabilityZonesOutput struct {
	Zones []xmlZone `xml:"availabilityZoneInfo>item"`
}

func (f *AWS) describeAvailabilityZones(q url.Values) (any, error) {
	names, ids := list(q, "ZoneName"), list(q, "ZoneId")
	fs := filters(q)
	zones := make([]string, 0, len(f.ec2.zones))
	for z := range f.ec2.zones {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	var out describeAvailabilityZonesOutput
	for _, z := range zones {
		id := f.ec2.zones[z]
		if len(names) > 0 && !contains(names, z) || len(ids) > 0 && !contains(ids, id) {
			continue
		}
		ok, err := matches(fs, nil, func(name string) ([]string, bool) {
			switch name {
			case "zone-name":
				return values(z), true
			case "zone-id":
				return values(id), true
			case "region-name":
				return values(f.region), true
			case "state":
				return values("available"), true
			case "zone-type":
				return values("availability-zone"), true
			case "opt-in-status":
				return values("opt-in-not-required"), true
			}
			return nil, false
		})
		if err != nil {
			return nil, err
		}
		if ok {
			out.Zones = append(out.Zones, xmlZone{ZoneName: z, ZoneID: id, State: "available", RegionName: f.region,
				ZoneType: "availability-zone", OptInStatus: "opt-in-not-required", GroupName: f.region, NetworkBorderGroup: f.region})
		}
	}
	return out, nil
}

// SeedCatalog describes c's instance types (DescribeInstanceTypes), offers
// each type with an on-demand price in the fake's region in zones
// (DescribeInstanceTypeOfferings), and serves c's on-demand prices
// (Pricing, every region c has) and spot prices (DescribeSpotPriceHistory:
// the catalog's synthetic ones). It replaces an earlier seed.
func (f *AWS) SeedCatalog(c *catalog.Catalog, zones []string) {
	types := make([]instanceTypeInfo, len(c.Entries))
	arch := map[string]string{}
	offered := map[string][]string{}
	onDemand := map[string]float64{}
	spot := map[string]map[string]float64{}
	table := c.OnDemandByRegion[f.region]
	for i := range c.Entries {
		e := &c.Entries[i]
		types[i] = describeType(e)
		arch[e.Name] = ec2Arch(e.Arch)
		price, ok := 0.0, false
		switch {
		case table != nil:
			price, ok = table[e.Name]
		case e.OnDemandPrice != nil:
			price, ok = *e.OnDemandPrice, true
		}
		if !ok {
			continue
		}
		onDemand[e.Name] = price
		offered[e.Name] = append([]string(nil), zones...)
		spot[e.Name] = map[string]float64{}
		for _, z := range zones {
			p, ok := e.SpotPriceSynthetic[z]
			if !ok {
				p = catalog.SyntheticSpotPrice(e.Name, z, price)
			}
			spot[e.Name][z] = p
		}
	}
	products := pricingProducts(c, f.region, onDemand)

	f.mu.Lock()
	defer f.mu.Unlock()
	f.ec2.types, f.ec2.typeArch = types, arch
	f.ec2.offered, f.ec2.onDemand, f.ec2.spot = offered, onDemand, spot
	f.ec2.pricing = products
	for _, z := range zones {
		if _, ok := f.ec2.zones[z]; !ok {
			f.ec2.zones[z] = zoneID(z)
		}
	}
}

type describeInstanceTypesOutput struct {
	Types     []instanceTypeInfo `xml:"instanceTypeSet>item"`
	NextToken string             `xml:"nextToken,omitempty"`
}

func (f *AWS) describeInstanceTypes(q url.Values) (any, error) {
	names := list(q, "InstanceType")
	for _, n := range names {
		if _, ok := f.ec2.typeArch[n]; !ok {
			return nil, badRequest("InvalidInstanceType", "The following supplied instance types do not exist: [%s]", n)
		}
	}
	fs := filters(q)
	var found []instanceTypeInfo
	for _, t := range f.ec2.types {
		if len(names) > 0 && !contains(names, t.InstanceType) {
			continue
		}
		ok, err := matches(fs, nil, t.attributes)
		if err != nil {
			return nil, err
		}
		if ok {
			found = append(found, t)
		}
	}
	from, to, next, err := page(q, len(found), 100)
	if err != nil {
		return nil, err
	}
	return describeInstanceTypesOutput{Types: found[from:to], NextToken: next}, nil
}

type xmlOffering struct {
	InstanceType string `xml:"instanceType"`
	LocationType string `xml:"locationType"`
	Location     string `xml:"location"`
}

type describeInstanceTypeOfferingsOutput struct {
	Offerings []xmlOffering `xml:"instanceTypeOfferingSet>item"`
	NextToken string        `xml:"nextToken,omitempty"`
}

// describeInstanceTypeOfferings: LocationType region (the default),
// availability-zone or availability-zone-id; filters location and
// instance-type.
func (f *AWS) describeInstanceTypeOfferings(q url.Values) (any, error) {
	locType := q.Get("LocationType")
	if locType == "" {
		locType = "region"
	}
	fs := filters(q)
	var found []xmlOffering
	for _, t := range f.ec2.types {
		zones := f.ec2.offered[t.InstanceType]
		var locations []string
		switch locType {
		case "region":
			if len(zones) > 0 {
				locations = []string{f.region}
			}
		case "availability-zone":
			locations = zones
		case "availability-zone-id":
			for _, z := range zones {
				locations = append(locations, f.ec2.zones[z])
			}
		default:
			return nil, badRequest("InvalidParameterValue", "LocationType %q is invalid", locType)
		}
		for _, loc := range locations {
			ok, err := matches(fs, nil, func(name string) ([]string, bool) {
				switch name {
				case "location":
					return values(loc), true
				case "instance-type":
					return values(t.InstanceType), true
				}
				return nil, false
			})
			if err != nil {
				return nil, err
			}
			if ok {
				found = append(found, xmlOffering{InstanceType: t.InstanceType, LocationType: locType, Location: loc})
			}
		}
	}
	from, to, next, err := page(q, len(found), 1000)
	if err != nil {
		return nil, err
	}
	return describeInstanceTypeOfferingsOutput{Offerings: found[from:to], NextToken: next}, nil
}

type xmlSpotPrice struct {
	InstanceType       string `xml:"instanceType"`
	ProductDescription string `xml:"productDescription"`
	SpotPrice          string `xml:"spotPrice"`
	Timestamp          string `xml:"timestamp"`
	Zone               string `xml:"availabilityZone"`
	ZoneID             string `xml:"availabilityZoneId"`
}

type describeSpotPriceHistoryOutput struct {
	Prices    []xmlSpotPrice `xml:"spotPriceHistorySet>item"`
	NextToken string         `xml:"nextToken,omitempty"`
}

// describeSpotPriceHistory answers one current price per type and zone,
// product Linux/UNIX (spot prices are the catalog's synthetic ones).
func (f *AWS) describeSpotPriceHistory(q url.Values) (any, error) {
	types, products := list(q, "InstanceType"), list(q, "ProductDescription")
	zone := q.Get("AvailabilityZone")
	fs := filters(q)
	now := f.clock.Now().UTC().Format(awsTime)
	const product = "Linux/UNIX"
	if len(products) > 0 && !contains(products, product) {
		return describeSpotPriceHistoryOutput{}, nil
	}
	var found []xmlSpotPrice
	for _, t := range f.ec2.types {
		name := t.InstanceType
		if len(types) > 0 && !contains(types, name) {
			continue
		}
		for _, z := range f.ec2.offered[name] {
			if zone != "" && z != zone {
				continue
			}
			ok, err := matches(fs, nil, func(fname string) ([]string, bool) {
				switch fname {
				case "instance-type":
					return values(name), true
				case "availability-zone":
					return values(z), true
				case "product-description":
					return values(product), true
				}
				return nil, false
			})
			if err != nil {
				return nil, err
			}
			if ok {
				found = append(found, xmlSpotPrice{InstanceType: name, ProductDescription: product,
					SpotPrice: strconv.FormatFloat(f.ec2.spot[name][z], 'f', 6, 64), Timestamp: now,
					Zone: z, ZoneID: f.ec2.zones[z]})
			}
		}
	}
	from, to, next, err := page(q, len(found), 1000)
	if err != nil {
		return nil, err
	}
	return describeSpotPriceHistoryOutput{Prices: found[from:to], NextToken: next}, nil
}
