package fake

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// LaunchTemplate is a launch template as CreateLaunchTemplate received it.
type LaunchTemplate struct {
	ID, Name string
	ImageID  string
	// UserData, decoded from base64.
	UserData string
	// InstanceProfile is the IamInstanceProfile's name (or its ARN when the
	// request gave that).
	InstanceProfile string
	InstanceType    string
	// SecurityGroupIDs: the template's, or its first network interface's.
	SecurityGroupIDs []string
	// AssociatePublicIPAddress of the first network interface, if set.
	AssociatePublicIPAddress *bool
	// Tags are the template's own (TagSpecification launch-template);
	// InstanceTags its LaunchTemplateData's for instances, applied at launch.
	Tags, InstanceTags  map[string]string
	MetadataOptions     MetadataOptions
	BlockDeviceMappings []BlockDeviceMapping
	CreateTime          time.Time
	// CapacityReservationPreference (open, none or
	// capacity-reservations-only) and the reservation it targets;
	// MarketType of its InstanceMarketOptions (capacity-block,
	// interruptible-capacity-reservation, spot).
	CapacityReservationPreference, CapacityReservationID, MarketType string
}

// MetadataOptions are a template's instance metadata (IMDS) options.
type MetadataOptions struct {
	HTTPEndpoint, HTTPProtocolIPv6, HTTPTokens, InstanceMetadataTags string
	HTTPPutResponseHopLimit                                          int32
}

// BlockDeviceMapping is one of a template's EBS volumes.
type BlockDeviceMapping struct {
	DeviceName                     string
	VolumeSize, IOPS, Throughput   int32
	VolumeType, KMSKeyID, Snapshot string
	Encrypted, DeleteOnTermination *bool
}

func (lt *LaunchTemplate) clone() LaunchTemplate {
	c := *lt
	c.SecurityGroupIDs = append([]string(nil), lt.SecurityGroupIDs...)
	c.BlockDeviceMappings = append([]BlockDeviceMapping(nil), lt.BlockDeviceMappings...)
	c.Tags, c.InstanceTags = copyTags(lt.Tags), copyTags(lt.InstanceTags)
	return c
}

// LaunchTemplates are the launch templates that exist (copies).
func (f *AWS) LaunchTemplates() []LaunchTemplate {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]LaunchTemplate, len(f.ec2.launchTemplates))
	for i, lt := range f.ec2.launchTemplates {
		out[i] = lt.clone()
	}
	return out
}

func int32Param(q url.Values, key string) int32 {
	v, _ := strconv.ParseInt(q.Get(key), 10, 32)
	return int32(v)
}

func boolParam(q url.Values, key string) *bool {
	if _, ok := q[key]; !ok {
		return nil
	}
	b := q.Get(key) == "true"
	return &b
}

// parseLaunchTemplateData reads CreateLaunchTemplate's LaunchTemplateData.
func parseLaunchTemplateData(q url.Values, name string) (*LaunchTemplate, error) {
	const d = "LaunchTemplateData."
	lt := &LaunchTemplate{
		Name:         name,
		ImageID:      q.Get(d + "ImageId"),
		InstanceType: q.Get(d + "InstanceType"),
		Tags:         tagSpecifications(q, "TagSpecification")["launch-template"],
		InstanceTags: tagSpecifications(q, d+"TagSpecification")["instance"],
		MetadataOptions: MetadataOptions{
			HTTPEndpoint:            q.Get(d + "MetadataOptions.HttpEndpoint"),
			HTTPProtocolIPv6:        q.Get(d + "MetadataOptions.HttpProtocolIpv6"),
			HTTPTokens:              q.Get(d + "MetadataOptions.HttpTokens"),
			InstanceMetadataTags:    q.Get(d + "MetadataOptions.InstanceMetadataTags"),
			HTTPPutResponseHopLimit: int32Param(q, d+"MetadataOptions.HttpPutResponseHopLimit"),
		},
		SecurityGroupIDs:              list(q, d+"SecurityGroupId"),
		CapacityReservationPreference: q.Get(d + "CapacityReservationSpecification.CapacityReservationPreference"),
		CapacityReservationID:         q.Get(d + "CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId"),
		MarketType:                    q.Get(d + "InstanceMarketOptions.MarketType"),
	}
	if lt.Tags == nil {
		lt.Tags = map[string]string{}
	}
	if lt.InstanceTags == nil {
		lt.InstanceTags = map[string]string{}
	}
	if lt.InstanceProfile = q.Get(d + "IamInstanceProfile.Name"); lt.InstanceProfile == "" {
		lt.InstanceProfile = q.Get(d + "IamInstanceProfile.Arn")
	}
	if ud := q.Get(d + "UserData"); ud != "" {
		b, err := base64.StdEncoding.DecodeString(ud)
		if err != nil {
			return nil, badRequest("InvalidUserData.Malformed", "Invalid BASE64 encoding of user data.")
		}
		lt.UserData = string(b)
	}
	if nics := indexes(q, d+"NetworkInterface"); len(nics) > 0 {
		lt.AssociatePublicIPAddress = boolParam(q, nics[0]+".AssociatePublicIpAddress")
		if len(lt.SecurityGroupIDs) == 0 {
			lt.SecurityGroupIDs = list(q, nics[0]+".SecurityGroupId")
		}
	}
	for _, p := range indexes(q, d+"BlockDeviceMapping") {
		lt.BlockDeviceMappings = append(lt.BlockDeviceMappings, BlockDeviceMapping{
			DeviceName:          q.Get(p + ".DeviceName"),
			VolumeSize:          int32Param(q, p+".Ebs.VolumeSize"),
			IOPS:                int32Param(q, p+".Ebs.Iops"),
			Throughput:          int32Param(q, p+".Ebs.Throughput"),
			VolumeType:          q.Get(p + ".Ebs.VolumeType"),
			KMSKeyID:            q.Get(p + ".Ebs.KmsKeyId"),
			Snapshot:            q.Get(p + ".Ebs.SnapshotId"),
			Encrypted:           boolParam(q, p+".Ebs.Encrypted"),
			DeleteOnTermination: boolParam(q, p+".Ebs.DeleteOnTermination"),
		})
	}
	return lt, nil
}

type xmlLaunchTemplate struct {
	ID             string   `xml:"launchTemplateId"`
	Name           string   `xml:"launchTemplateName"`
	CreateTime     string   `xml:"createTime"`
	CreatedBy      string   `xml:"createdBy"`
	DefaultVersion int64    `xml:"defaultVersionNumber"`
	LatestVersion  int64    `xml:"latestVersionNumber"`
	Tags           []xmlTag `xml:"tagSet>item"`
}

func (lt *LaunchTemplate) xml() xmlLaunchTemplate {
	return xmlLaunchTemplate{
		ID: lt.ID, Name: lt.Name, CreateTime: lt.CreateTime.UTC().Format(awsTime),
		CreatedBy:      fmt.Sprintf("arn:aws:iam::%s:role/fake", AccountID),
		DefaultVersion: 1, LatestVersion: 1, Tags: xmlTags(lt.Tags),
	}
}

type launchTemplateOutput struct {
	LaunchTemplate xmlLaunchTemplate `xml:"launchTemplate"`
}

func (f *AWS) createLaunchTemplate(q url.Values) (any, error) {
	name := q.Get("LaunchTemplateName")
	if name == "" {
		return nil, badRequest("MissingParameter", "The request must contain the parameter LaunchTemplateName")
	}
	if f.launchTemplate(name, "") != nil {
		return nil, badRequest("InvalidLaunchTemplateName.AlreadyExistsException",
			"Launch template name already in use.")
	}
	lt, err := parseLaunchTemplateData(q, name)
	if err != nil {
		return nil, err
	}
	lt.ID = fmt.Sprintf("lt-%017x", f.nextID())
	lt.CreateTime = f.clock.Now()
	f.ec2.launchTemplates = append(f.ec2.launchTemplates, lt)
	return launchTemplateOutput{LaunchTemplate: lt.xml()}, nil
}

// launchTemplate finds a template by name or ID; nil when none.
func (f *AWS) launchTemplate(name, id string) *LaunchTemplate {
	for _, lt := range f.ec2.launchTemplates {
		if name != "" && lt.Name == name || id != "" && lt.ID == id {
			return lt
		}
	}
	return nil
}

type describeLaunchTemplatesOutput struct {
	LaunchTemplates []xmlLaunchTemplate `xml:"launchTemplates>item"`
	NextToken       string              `xml:"nextToken,omitempty"`
}

func (f *AWS) describeLaunchTemplates(q url.Values) (any, error) {
	names, ids := list(q, "LaunchTemplateName"), list(q, "LaunchTemplateId")
	for _, n := range names {
		if f.launchTemplate(n, "") == nil {
			return nil, badRequest("InvalidLaunchTemplateName.NotFoundException",
				"At least one of the launch templates specified in the request does not exist.")
		}
	}
	for _, id := range ids {
		if f.launchTemplate("", id) == nil {
			return nil, badRequest("InvalidLaunchTemplateId.NotFound",
				"The specified launch template, with template ID %s, does not exist.", id)
		}
	}
	fs := filters(q)
	var found []xmlLaunchTemplate
	for _, lt := range f.ec2.launchTemplates {
		if len(names) > 0 && !contains(names, lt.Name) || len(ids) > 0 && !contains(ids, lt.ID) {
			continue
		}
		ok, err := matches(fs, lt.Tags, func(name string) ([]string, bool) {
			switch name {
			case "launch-template-name":
				return values(lt.Name), true
			case "launch-template-id":
				return values(lt.ID), true
			}
			return nil, false
		})
		if err != nil {
			return nil, err
		}
		if ok {
			found = append(found, lt.xml())
		}
	}
	from, to, next, err := page(q, len(found), 200)
	if err != nil {
		return nil, err
	}
	return describeLaunchTemplatesOutput{LaunchTemplates: found[from:to], NextToken: next}, nil
}

func (f *AWS) deleteLaunchTemplate(q url.Values) (any, error) {
	name, id := q.Get("LaunchTemplateName"), q.Get("LaunchTemplateId")
	lt := f.launchTemplate(name, id)
	switch {
	case lt == nil && id != "":
		return nil, badRequest("InvalidLaunchTemplateId.NotFound",
			"The specified launch template, with template ID %s, does not exist.", id)
	case lt == nil:
		return nil, badRequest("InvalidLaunchTemplateName.NotFoundException",
			"The specified launch template, with template name %s, does not exist.", name)
	}
	for i, x := range f.ec2.launchTemplates {
		if x == lt {
			f.ec2.launchTemplates = append(f.ec2.launchTemplates[:i], f.ec2.launchTemplates[i+1:]...)
			break
		}
	}
	return launchTemplateOutput{LaunchTemplate: lt.xml()}, nil
}
