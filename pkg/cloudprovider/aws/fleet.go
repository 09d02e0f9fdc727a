package aws

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// Tags every instance, launch template and instance profile carries,
// besides the NodeClass's and kubernetes.io/cluster/<name>.
const (
	tagManagedBy      = "karpenter.sh/managed-by"
	tagEKSClusterName = "eks:eks-cluster-name"
	tagNodeClaim      = "karpenter.sh/nodeclaim"
	tagCluster        = "karpenter.k8s.aws/cluster"
)

// maxInstanceTypes caps a launch's instance types, the cheapest kept, as
// upstream caps them.
const maxInstanceTypes = 60

// insufficientCapacityCodes are the fleet error codes upstream treats as
// "no capacity for this offering now", cached so the next launch avoids it.
var insufficientCapacityCodes = []string{
	"InsufficientInstanceCapacity",
	"MaxSpotInstanceCountExceeded",
	"VcpuLimitExceeded",
	"UnfulfillableCapacity",
	"Unsupported",
	"InsufficientFreeAddressesInSubnet",
	"ReservationCapacityExceeded",
}

// Create launches an instance for the claim with one CreateFleet (type
// instant): the instance types its requirements allow, cheapest first, in
// every selected subnet of an allowed zone, spot when allowed and offered
// (price-capacity-optimized), else on-demand (lowest-price). Offerings
// EC2 has no capacity for are remembered for UnavailableFor; when nothing
// launches for want of capacity the error is an InsufficientCapacityError.
func (p *Provider) Create(ctx context.Context, claim *v1.NodeClaim) (*v1.NodeClaim, error) {
	r, err := p.nodeClass(ctx, claim.Spec.NodeClassRef)
	if err != nil {
		return nil, err
	}
	all, err := p.instanceTypes(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("launching nodeclaim %s: %w", claim.Name, err)
	}
	reqs := scheduling.FromNodeSelectorRequirements(claim.Spec.Requirements)
	its := compatibleTypes(all, reqs, claim.Spec.Resources.Requests)
	if len(its) == 0 {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("launching nodeclaim %s: none of %d instance types meets its requirements with an available offering", claim.Name, len(all)))
	}
	its = withoutExotic(its)
	ct := reqs.Get(v1.LabelCapacityType)
	if p.opts.ReservedCapacity && ct.Has(v1.CapacityTypeReserved) {
		if choice := reservedChoice(its, reqs); len(choice) > 0 {
			launched, err := p.launch(ctx, r, claim, nil, reqs, v1.CapacityTypeReserved, false, choice)
			if isCode(err, launchTemplateNotFound) || errors.Is(err, errLaunchTemplateGone) {
				launched, err = p.launch(ctx, r, claim, nil, reqs, v1.CapacityTypeReserved, false, choice)
			}
			if err != nil {
				return nil, fmt.Errorf("launching nodeclaim %s into a capacity reservation: %w", claim.Name, err)
			}
			return launched, nil
		}
	}
	if !ct.Has(v1.CapacityTypeSpot) && !ct.Has(v1.CapacityTypeOnDemand) {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("launching nodeclaim %s: none of the capacity reservations it may launch into has an instance free", claim.Name))
	}
	capacityType := chooseCapacityType(its, reqs)
	if capacityType == v1.CapacityTypeSpot && reqs.Get(v1.LabelCapacityType).Has(v1.CapacityTypeOnDemand) {
		its = withoutDearSpot(its, reqs)
	}
	reqs = reqs.Copy()
	reqs.Add(scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, capacityType))
	cloudprovider.SortByPrice(its, reqs)
	prioritized := p.byOverlaidPrice(claim.Labels[v1.LabelNodePool], its, reqs)
	if len(its) > maxInstanceTypes {
		its = its[:maxInstanceTypes]
	}
	launched, err := p.launch(ctx, r, claim, its, reqs, capacityType, prioritized, nil)
	if isCode(err, launchTemplateNotFound) || errors.Is(err, errLaunchTemplateGone) {
		// Deleted behind the provider's back: launch once more, making it anew.
		launched, err = p.launch(ctx, r, claim, its, reqs, capacityType, prioritized, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("launching nodeclaim %s: %w", claim.Name, err)
	}
	return launched, nil
}

// launchTemplateNotFound is CreateFleet's error for a launch template
// that does not exist.
const launchTemplateNotFound = "InvalidLaunchTemplateName.NotFoundException"

// errLaunchTemplateGone: the fleet launched nothing because a launch
// template the provider made is gone.
var errLaunchTemplateGone = errors.New("a launch template is gone")

// launch makes the launch templates and calls CreateFleet once: into
// the reserved offerings when there are any (its is nil then), else into
// its's offerings of the capacity type.
func (p *Provider) launch(ctx context.Context, r *resolvedClass, claim *v1.NodeClaim, its []*cloudprovider.InstanceType,
	reqs scheduling.Requirements, capacityType string, prioritized bool, reserved []reservedOffering) (*v1.NodeClaim, error) {
	for _, c := range reserved {
		its = appendType(its, c.it)
	}
	fleet, images, byTemplate, err := p.fleetRequest(ctx, r, claim, its, reqs, capacityType, prioritized, reserved)
	if err != nil {
		return nil, err
	}
	out, err := p.ec2.CreateFleet(ctx, fleet)
	if err != nil {
		if isCode(err, launchTemplateNotFound) {
			for _, c := range fleet.LaunchTemplateConfigs {
				p.forgetLaunchTemplate(aws.ToString(c.LaunchTemplateSpecification.LaunchTemplateName))
			}
		}
		if isCode(err, insufficientCapacityCodes...) {
			return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("CreateFleet: %w", err))
		}
		return nil, fmt.Errorf("CreateFleet: %w", err)
	}
	zoneOf := map[string]string{}
	for _, s := range r.status.Subnets {
		zoneOf[s.ID] = s.Zone
	}
	for _, e := range out.Errors {
		p.noteFleetError(e, capacityType, zoneOf, byTemplate)
	}
	for _, in := range out.Instances {
		if len(in.InstanceIds) == 0 {
			continue
		}
		var res *cloudprovider.Reservation
		if lo := in.LaunchTemplateAndOverrides; lo != nil && lo.LaunchTemplateSpecification != nil {
			res = byTemplate[aws.ToString(lo.LaunchTemplateSpecification.LaunchTemplateName)]
		}
		return p.launched(claim, r, in, its, images, capacityType, zoneOf, res), nil
	}
	for _, e := range out.Errors {
		if aws.ToString(e.ErrorCode) == launchTemplateNotFound {
			return nil, fmt.Errorf("%w: %w", errLaunchTemplateGone, fleetError(out.Errors))
		}
	}
	return nil, fleetError(out.Errors)
}

// appendType adds it to its unless it is there.
func appendType(its []*cloudprovider.InstanceType, it *cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	if slices.Contains(its, it) {
		return its
	}
	return append(its, it)
}

// compatibleTypes are the types whose labels the requirements allow, with
// an available offering in an allowed zone and capacity type, big enough
// for the requests.
func compatibleTypes(its []*cloudprovider.InstanceType, reqs scheduling.Requirements, requests corev1.ResourceList) []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for _, it := range its {
		if it.Requirements.Intersects(reqs) == nil && it.Offerings.HasCompatible(reqs) && scheduling.Fits(requests, it.Allocatable()) == nil {
			out = append(out, it)
		}
	}
	return out
}

// withoutExotic leaves out metal and accelerated types (GPUs, Neuron,
// Gaudi) when other types would do, as upstream does: a claim that allows
// them does not need them.
func withoutExotic(its []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for _, it := range its {
		if size, _ := it.Requirements.Get(awsv1.LabelInstanceSize).Any(); strings.Contains(size, "metal") {
			continue
		}
		accelerated := false
		for _, r := range []corev1.ResourceName{awsv1.ResourceNVIDIAGPU, awsv1.ResourceAMDGPU, awsv1.ResourceAWSNeuron, awsv1.ResourceAWSNeuronCore, awsv1.ResourceHabanaGaudi} {
			if q, ok := it.Capacity[r]; ok && !q.IsZero() {
				accelerated = true
			}
		}
		if !accelerated {
			out = append(out, it)
		}
	}
	if len(out) == 0 {
		return its
	}
	return out
}

// chooseCapacityType is spot when the requirements allow it and some type
// offers it available, else on-demand, as upstream chooses.
func chooseCapacityType(its []*cloudprovider.InstanceType, reqs scheduling.Requirements) string {
	if reqs.Get(v1.LabelCapacityType).Has(v1.CapacityTypeSpot) {
		spot := reqs.Copy()
		spot.Add(scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot))
		for _, it := range its {
			if it.Offerings.HasCompatible(spot) {
				return v1.CapacityTypeSpot
			}
		}
	}
	return v1.CapacityTypeOnDemand
}

// withoutDearSpot drops the types whose cheapest offering costs more than
// the cheapest on-demand one, as upstream does: the fallback would buy
// less for less.
func withoutDearSpot(its []*cloudprovider.InstanceType, reqs scheduling.Requirements) []*cloudprovider.InstanceType {
	onDemand := reqs.Copy()
	onDemand.Add(scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand))
	cheapest := math.Inf(1)
	for _, it := range its {
		cheapest = math.Min(cheapest, it.CheapestPrice(onDemand))
	}
	var out []*cloudprovider.InstanceType
	for _, it := range its {
		if it.CheapestPrice(reqs) <= cheapest {
			out = append(out, it)
		}
	}
	return out
}

// baseTags are the tags of everything launched for a NodePool.
func (p *Provider) baseTags(nc *awsv1.EC2NodeClass, nodePool string) map[string]string {
	tags := maps.Clone(nc.Spec.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	maps.Copy(tags, map[string]string{
		v1.LabelNodePool:     nodePool,
		awsv1.LabelNodeClass: nc.Name,
		"kubernetes.io/cluster/" + p.opts.ClusterName: "owned",
		tagManagedBy:      p.opts.ClusterName,
		tagEKSClusterName: p.opts.ClusterName,
	})
	return tags
}

func ec2Tags(m map[string]string) []ec2types.Tag {
	var out []ec2types.Tag
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

// fleetRequest is the CreateFleet of a launch: one launch template per
// (AMI, max pods) the types need — per reservation too, for a launch into
// reserved offerings, each template targeting its reservation — each with
// an override per type and subnet of an allowed zone. images maps each
// type to its AMI, byTemplate each reserved template's name to its
// reservation.
// Its complexity is the request's nested shape: templates per (AMI,
// max pods, reservation), overrides per type and subnet, each with its
// options.
func (p *Provider) fleetRequest(ctx context.Context, r *resolvedClass, claim *v1.NodeClaim, its []*cloudprovider.InstanceType,
	reqs scheduling.Requirements, capacityType string, prioritized bool, reserved []reservedOffering) (*ec2.CreateFleetInput, map[string]string, map[string]*cloudprovider.Reservation, error) {
	nc := r.nodeClass
	family := amiFamily(nc)
	devices, err := blockDevices(family, nc.Spec.BlockDeviceMappings)
	if err != nil {
		return nil, nil, nil, err
	}
	var groups []string
	for _, sg := range r.status.SecurityGroups {
		groups = append(groups, sg.ID)
	}
	nodePool := claim.Labels[v1.LabelNodePool]
	labels := maps.Clone(claim.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1.LabelCapacityType] = capacityType
	taints := append(append(append([]corev1.Taint(nil), claim.Spec.Taints...), claim.Spec.StartupTaints...), v1.UnregisteredTaint)
	ltTags := p.baseTags(nc, nodePool)
	ltTags[tagCluster] = p.opts.ClusterName

	type group struct {
		name      string
		overrides []ec2types.FleetLaunchTemplateOverridesRequest
	}
	byKey := map[string]*group{}
	var order []string
	images := map[string]string{}
	byTemplate := map[string]*cloudprovider.Reservation{}
	zone := reqs.Get(v1.LabelZone)
	// One subnet a zone, the one with the most free addresses (the status
	// lists them so), as upstream launches.
	subnetIn := map[string]awsv1.Subnet{}
	for _, s := range r.status.Subnets {
		if _, ok := subnetIn[s.Zone]; !ok {
			subnetIn[s.Zone] = s
		}
	}
	type slot struct {
		rank int
		it   *cloudprovider.InstanceType
		o    *cloudprovider.Offering
	}
	var slots []slot
	if reserved != nil {
		for i, c := range reserved {
			slots = append(slots, slot{i, c.it, c.o})
		}
	} else {
		for rank, it := range its {
			for _, o := range it.Offerings {
				slots = append(slots, slot{rank, it, o})
			}
		}
	}
	for _, sl := range slots {
		it, o := sl.it, sl.o
		ami := amiFor(r.status.AMIs, it)
		images[it.Name] = ami.ID
		pods := it.Capacity.Pods().Value() // spec.kubelet's, by withKubelet
		key := fmt.Sprintf("%s/%d/%s", ami.ID, pods, o.ReservationID())
		g := byKey[key]
		if g == nil {
			ud, err := userData(family, bootstrap{
				ClusterName: p.opts.ClusterName, Endpoint: p.opts.ClusterEndpoint, CABundle: p.opts.ClusterCABundle, CIDR: p.opts.ClusterCIDR,
				Kubelet: nc.Spec.Kubelet, MaxPods: pods, Labels: labels, Taints: taints, Custom: aws.ToString(nc.Spec.UserData),
			})
			if err != nil {
				return nil, nil, nil, err
			}
			lt := &launchTemplate{
				ImageID: ami.ID, UserData: ud, InstanceProfile: r.status.InstanceProfile, SecurityGroupIDs: groups,
				Metadata: metadataOptions(nc.Spec.MetadataOptions), BlockDevices: devices,
				AssociatePublicIP: nc.Spec.AssociatePublicIPAddress, Monitoring: aws.ToBool(nc.Spec.DetailedMonitoring), Tags: ltTags,
			}
			lt.reservation(p.opts.ReservedCapacity, o.Reservation)
			name, err := p.ensureLaunchTemplate(ctx, lt)
			if err != nil {
				return nil, nil, nil, err
			}
			g = &group{name: name}
			byKey[key] = g
			order = append(order, key)
			if o.Reservation != nil {
				byTemplate[name] = o.Reservation
			}
		}
		s, ok := subnetIn[o.Zone]
		if !o.Available || o.CapacityType != capacityType || !zone.Has(o.Zone) || !ok {
			continue
		}
		ov := ec2types.FleetLaunchTemplateOverridesRequest{
			InstanceType: ec2types.InstanceType(it.Name), SubnetId: aws.String(s.ID), AvailabilityZone: aws.String(s.Zone), ImageId: aws.String(ami.ID),
		}
		if prioritized {
			ov.Priority = aws.Float64(float64(sl.rank))
		}
		g.overrides = append(g.overrides, ov)
	}
	in := &ec2.CreateFleetInput{
		Type:    ec2types.FleetTypeInstant,
		Context: nc.Spec.Context,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType),
			TotalTargetCapacity:       aws.Int32(1),
		},
	}
	for _, key := range order {
		g := byKey[key]
		if len(g.overrides) == 0 {
			continue
		}
		in.LaunchTemplateConfigs = append(in.LaunchTemplateConfigs, ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(g.name), Version: aws.String("$Latest")},
			Overrides:                   g.overrides,
		})
	}
	switch {
	case len(reserved) > 0:
		reservedFleet(in, reserved[0].o.Reservation)
	case capacityType == v1.CapacityTypeSpot && prioritized:
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyCapacityOptimizedPrioritized}
	case capacityType == v1.CapacityTypeSpot:
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	case prioritized:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyPrioritized}
	default:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	tags := p.baseTags(nc, nodePool)
	tags[tagNodeClaim] = claim.Name
	// Instances, their volumes and the fleet, as upstream tags them (AWS
	// tags an instant fleet's instances and the fleet; network interfaces
	// are tagged by the launch template).
	for _, rt := range []ec2types.ResourceType{ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeFleet} {
		in.TagSpecifications = append(in.TagSpecifications, ec2types.TagSpecification{ResourceType: rt, Tags: ec2Tags(tags)})
	}
	return in, images, byTemplate, nil
}

// noteFleetError remembers an offering EC2 had no capacity for, and a
// launch template someone deleted.
func (p *Provider) noteFleetError(e ec2types.CreateFleetError, capacityType string, zoneOf map[string]string, byTemplate map[string]*cloudprovider.Reservation) {
	code := aws.ToString(e.ErrorCode)
	var lt *ec2types.FleetLaunchTemplateSpecification
	var ov *ec2types.FleetLaunchTemplateOverrides
	if e.LaunchTemplateAndOverrides != nil {
		lt, ov = e.LaunchTemplateAndOverrides.LaunchTemplateSpecification, e.LaunchTemplateAndOverrides.Overrides
	}
	if code == launchTemplateNotFound && lt != nil {
		p.forgetLaunchTemplate(aws.ToString(lt.LaunchTemplateName))
	}
	if lt != nil && byTemplate[aws.ToString(lt.LaunchTemplateName)] != nil {
		// A reserved launch EC2 refused: the reservation has no room
		// until DescribeCapacityReservations says otherwise (upstream
		// marks it so, and keeps it out of the regular ICE cache).
		if slices.Contains(insufficientCapacityCodes, code) {
			p.markFull(byTemplate[aws.ToString(lt.LaunchTemplateName)].ID)
		}
		return
	}
	if !slices.Contains(insufficientCapacityCodes, code) || ov == nil {
		return
	}
	zone := aws.ToString(ov.AvailabilityZone)
	if zone == "" {
		zone = zoneOf[aws.ToString(ov.SubnetId)]
	}
	ct := capacityType
	if e.Lifecycle != "" {
		ct = string(e.Lifecycle)
	}
	p.unavailable.MarkUnavailable(string(ov.InstanceType), zone, ct)
}

// fleetError is why nothing launched: an InsufficientCapacityError when
// every fleet error is one of capacity, as upstream decides.
func fleetError(errs []ec2types.CreateFleetError) error {
	seen := map[string]bool{}
	var msgs []string
	ice := 0
	for _, e := range errs {
		code := aws.ToString(e.ErrorCode)
		if slices.Contains(insufficientCapacityCodes, code) {
			ice++
		}
		msg := code + ": " + aws.ToString(e.ErrorMessage)
		if !seen[msg] {
			seen[msg] = true
			msgs = append(msgs, msg)
		}
	}
	sort.Strings(msgs)
	if len(errs) == 0 {
		return errors.New("CreateFleet launched nothing and said nothing")
	}
	err := fmt.Errorf("CreateFleet launched nothing: %s", strings.Join(msgs, "; "))
	if ice == len(errs) {
		return cloudprovider.NewInsufficientCapacityError(err)
	}
	return err
}

// launched is the claim of the instance the fleet launched.
func (p *Provider) launched(claim *v1.NodeClaim, r *resolvedClass, in ec2types.CreateFleetInstance, its []*cloudprovider.InstanceType,
	images map[string]string, capacityType string, zoneOf map[string]string, res *cloudprovider.Reservation) *v1.NodeClaim {
	typeName := string(in.InstanceType)
	var zone string
	if lo := in.LaunchTemplateAndOverrides; lo != nil && lo.Overrides != nil {
		zone = aws.ToString(lo.Overrides.AvailabilityZone)
		if zone == "" {
			zone = zoneOf[aws.ToString(lo.Overrides.SubnetId)]
		}
		if typeName == "" {
			typeName = string(lo.Overrides.InstanceType)
		}
	}
	if in.Lifecycle != "" {
		capacityType = string(in.Lifecycle)
	}
	var it *cloudprovider.InstanceType
	for _, t := range its {
		if t.Name == typeName {
			it = t
		}
	}
	out := claim.DeepCopy()
	out.Status.ProviderID = ProviderIDPrefix + zone + "/" + in.InstanceIds[0]
	out.Status.ImageID = images[typeName]
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if it != nil {
		maps.Copy(out.Labels, it.Requirements.Labels())
		out.Status.Capacity = it.Capacity.DeepCopy()
		out.Status.Allocatable = it.Allocatable()
	}
	out.Labels[v1.LabelInstanceType] = typeName
	out.Labels[v1.LabelZone] = zone
	out.Labels[v1.LabelCapacityType] = capacityType
	reservationLabels(out.Labels, res)
	if res != nil {
		p.markLaunched(res.ID)
	}
	for _, s := range r.status.Subnets {
		if s.Zone == zone && s.ZoneID != "" {
			out.Labels[awsv1.LabelTopologyZoneID] = s.ZoneID
		}
	}
	return out
}
