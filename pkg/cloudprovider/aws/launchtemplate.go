package aws

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// launchTemplatePrefix begins the names of the launch templates the
// provider makes (upstream's prefix), so its IAM policy can be scoped to them.
const launchTemplatePrefix = "karpenter.k8s.aws/"

// launchTemplate is everything a launch template holds. Its name is a hash
// of it: the same AMI, NodeClass and NodePool settings reuse a template,
// and any change makes a new one.
type launchTemplate struct {
	ImageID           string
	UserData          string
	InstanceProfile   string
	SecurityGroupIDs  []string
	Metadata          metadata
	BlockDevices      []blockDevice
	AssociatePublicIP *bool `json:",omitempty"`
	Monitoring        bool  `json:",omitempty"`
	Tags              map[string]string
	// ReservationPreference is the CapacityReservationSpecification's
	// preference (none: kept out of open reservations;
	// capacity-reservations-only with ReservationID, the reservation
	// targeted), "" without the ReservedCapacity gate; MarketType is
	// capacity-block or interruptible-capacity-reservation for those.
	ReservationPreference string `json:",omitempty"`
	ReservationID         string `json:",omitempty"`
	MarketType            string `json:",omitempty"`
}

// reservation targets the template at r, or (r nil) keeps its instances
// out of open reservations, as upstream's templates do under the
// ReservedCapacity gate; without the gate the template says nothing.
func (lt *launchTemplate) reservation(gate bool, r *cloudprovider.Reservation) {
	switch {
	case !gate:
	case r == nil:
		lt.ReservationPreference = string(ec2types.CapacityReservationPreferenceNone)
	default:
		lt.ReservationPreference = string(ec2types.CapacityReservationPreferenceCapacityReservationsOnly)
		lt.ReservationID = r.ID
		switch {
		case r.Type == cloudprovider.ReservationTypeCapacityBlock:
			lt.MarketType = string(ec2types.MarketTypeCapacityBlock)
		case r.Interruptible:
			lt.MarketType = string(ec2types.MarketTypeInterruptibleCapacityReservation)
		}
	}
}

type metadata struct {
	Endpoint, ProtocolIPv6, Tokens string
	HopLimit                       int32
}

type blockDevice struct {
	DeviceName                string
	VolumeGiB                 int32
	VolumeType                string
	Encrypted, DeleteOnTerm   bool
	IOPS, Throughput          int32  `json:",omitempty"`
	KMSKeyID, SnapshotID      string `json:",omitempty"`
	VolumeInitializationMiBps int32  `json:",omitempty"`
}

func (lt *launchTemplate) name() string {
	raw, _ := json.Marshal(lt)
	h := fnv.New64a()
	_, _ = h.Write(raw)
	return launchTemplatePrefix + strconv.FormatUint(h.Sum64(), 10)
}

// metadataOptions are spec.metadataOptions with upstream's defaults:
// IMDSv2 required, a hop limit of 1.
func metadataOptions(m *awsv1.MetadataOptions) metadata {
	out := metadata{Endpoint: "enabled", ProtocolIPv6: "disabled", Tokens: "required", HopLimit: 1}
	if m == nil {
		return out
	}
	if m.HTTPEndpoint != nil {
		out.Endpoint = *m.HTTPEndpoint
	}
	if m.HTTPProtocolIPv6 != nil {
		out.ProtocolIPv6 = *m.HTTPProtocolIPv6
	}
	if m.HTTPTokens != nil {
		out.Tokens = *m.HTTPTokens
	}
	if m.HTTPPutResponseHopLimit != nil {
		out.HopLimit = int32(*m.HTTPPutResponseHopLimit)
	}
	return out
}

// blockDevices are spec.blockDeviceMappings, or the AMI family's default
// volumes as upstream's: a 20 GiB encrypted gp3 root for AL2023, a 4 GiB
// OS and a 20 GiB data volume for Bottlerocket.
func blockDevices(family string, in []awsv1.BlockDeviceMapping) ([]blockDevice, error) {
	if len(in) == 0 {
		switch family {
		case awsv1.AMIFamilyAL2023:
			return []blockDevice{{DeviceName: "/dev/xvda", VolumeGiB: 20, VolumeType: "gp3", Encrypted: true, DeleteOnTerm: true}}, nil
		case awsv1.AMIFamilyBottlerocket:
			return []blockDevice{
				{DeviceName: "/dev/xvda", VolumeGiB: 4, VolumeType: "gp3", Encrypted: true, DeleteOnTerm: true},
				{DeviceName: "/dev/xvdb", VolumeGiB: 20, VolumeType: "gp3", Encrypted: true, DeleteOnTerm: true},
			}, nil
		}
		return nil, nil
	}
	var out []blockDevice
	for i, m := range in {
		bd := blockDevice{DeviceName: aws.ToString(m.DeviceName), DeleteOnTerm: true}
		if e := m.EBS; e != nil {
			if e.VolumeSize != nil {
				q, err := resource.ParseQuantity(*e.VolumeSize)
				if err != nil {
					return nil, fmt.Errorf("blockDeviceMappings[%d].ebs.volumeSize %q: %w", i, *e.VolumeSize, err)
				}
				bd.VolumeGiB = int32(math.Ceil(float64(q.Value()) / (1 << 30)))
			}
			bd.VolumeType = aws.ToString(e.VolumeType)
			bd.Encrypted = aws.ToBool(e.Encrypted)
			if e.DeleteOnTermination != nil {
				bd.DeleteOnTerm = *e.DeleteOnTermination
			}
			bd.IOPS = int32(aws.ToInt64(e.IOPS))
			bd.Throughput = int32(aws.ToInt64(e.Throughput))
			bd.KMSKeyID, bd.SnapshotID = aws.ToString(e.KMSKeyID), aws.ToString(e.SnapshotID)
			bd.VolumeInitializationMiBps = aws.ToInt32(e.VolumeInitializationRate)
		}
		out = append(out, bd)
	}
	return out, nil
}

// ensureLaunchTemplate makes the template unless it exists, and returns
// its name.
func (p *Provider) ensureLaunchTemplate(ctx context.Context, lt *launchTemplate) (string, error) {
	name := lt.name()
	p.mu.Lock()
	known := p.templates[name]
	p.mu.Unlock()
	if known {
		return name, nil
	}
	out, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	switch {
	case err == nil && len(out.LaunchTemplates) > 0:
	case err == nil || isCode(err, "InvalidLaunchTemplateName.NotFoundException"):
		if _, err := p.ec2.CreateLaunchTemplate(ctx, lt.request(name)); err != nil && !isCode(err, "InvalidLaunchTemplateName.AlreadyExistsException") {
			return "", fmt.Errorf("creating launch template %s: %w", name, err)
		}
	default:
		return "", fmt.Errorf("describing launch template %s: %w", name, err)
	}
	p.mu.Lock()
	p.templates[name] = true
	p.mu.Unlock()
	return name, nil
}

// forgetLaunchTemplate drops a template someone deleted, so the next
// launch makes it again.
func (p *Provider) forgetLaunchTemplate(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.templates, name)
}

func (lt *launchTemplate) request(name string) *ec2.CreateLaunchTemplateInput {
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:            aws.String(lt.ImageID),
		UserData:           aws.String(base64.StdEncoding.EncodeToString([]byte(lt.UserData))),
		IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(lt.InstanceProfile)},
		MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointState(lt.Metadata.Endpoint),
			HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(lt.Metadata.ProtocolIPv6),
			HttpTokens:              ec2types.LaunchTemplateHttpTokensState(lt.Metadata.Tokens),
			HttpPutResponseHopLimit: aws.Int32(lt.Metadata.HopLimit),
		},
		Monitoring: &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(lt.Monitoring)},
		TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{
			{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: ec2Tags(lt.Tags)},
		},
	}
	if lt.ReservationPreference != "" {
		data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: ec2types.CapacityReservationPreference(lt.ReservationPreference)}
		if lt.ReservationID != "" {
			data.CapacityReservationSpecification.CapacityReservationTarget = &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(lt.ReservationID)}
		}
	}
	if lt.MarketType != "" {
		data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketType(lt.MarketType)}
	}
	if lt.AssociatePublicIP != nil {
		data.NetworkInterfaces = []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex: aws.Int32(0), AssociatePublicIpAddress: lt.AssociatePublicIP, Groups: lt.SecurityGroupIDs,
		}}
	} else {
		data.SecurityGroupIds = lt.SecurityGroupIDs
	}
	for _, bd := range lt.BlockDevices {
		ebs := &ec2types.LaunchTemplateEbsBlockDeviceRequest{
			Encrypted:           aws.Bool(bd.Encrypted),
			DeleteOnTermination: aws.Bool(bd.DeleteOnTerm),
		}
		if bd.VolumeGiB > 0 {
			ebs.VolumeSize = aws.Int32(bd.VolumeGiB)
		}
		if bd.VolumeType != "" {
			ebs.VolumeType = ec2types.VolumeType(bd.VolumeType)
		}
		if bd.IOPS > 0 {
			ebs.Iops = aws.Int32(bd.IOPS)
		}
		if bd.Throughput > 0 {
			ebs.Throughput = aws.Int32(bd.Throughput)
		}
		if bd.KMSKeyID != "" {
			ebs.KmsKeyId = aws.String(bd.KMSKeyID)
		}
		if bd.SnapshotID != "" {
			ebs.SnapshotId = aws.String(bd.SnapshotID)
		}
		if bd.VolumeInitializationMiBps > 0 {
			ebs.VolumeInitializationRate = aws.Int32(bd.VolumeInitializationMiBps)
		}
		data.BlockDeviceMappings = append(data.BlockDeviceMappings, ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: aws.String(bd.DeviceName), Ebs: ebs})
	}
	return &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: data,
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: ec2Tags(lt.Tags)}},
	}
}
