package fake

import (
	"context"
	"encoding/base64"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// createTemplate creates launch template name with an image, user data,
// a profile, a security group, IMDS options, a volume and tags.
func createTemplate(t *testing.T, c *ec2.Client, name string) *types.LaunchTemplate {
	t.Helper()
	out, err := c.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &types.RequestLaunchTemplateData{
			ImageId:            aws.String("ami-template"),
			UserData:           aws.String(base64.StdEncoding.EncodeToString([]byte("#!/bin/bash\necho hi\n"))),
			IamInstanceProfile: &types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("profile-1")},
			SecurityGroupIds:   []string{StandardSecurityGroupID},
			MetadataOptions: &types.LaunchTemplateInstanceMetadataOptionsRequest{
				HttpTokens: types.LaunchTemplateHttpTokensStateRequired, HttpPutResponseHopLimit: aws.Int32(1),
				HttpEndpoint: types.LaunchTemplateInstanceMetadataEndpointStateEnabled,
			},
			BlockDeviceMappings: []types.LaunchTemplateBlockDeviceMappingRequest{{
				DeviceName: aws.String("/dev/xvda"),
				Ebs: &types.LaunchTemplateEbsBlockDeviceRequest{VolumeSize: aws.Int32(20), VolumeType: types.VolumeTypeGp3,
					Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true)},
			}},
			TagSpecifications: []types.LaunchTemplateTagSpecificationRequest{{
				ResourceType: types.ResourceTypeInstance, Tags: []types.Tag{{Key: aws.String("from-template"), Value: aws.String("yes")}},
			}},
		},
		TagSpecifications: []types.TagSpecification{{
			ResourceType: types.ResourceTypeLaunchTemplate, Tags: []types.Tag{{Key: aws.String("karpenter.sh/cluster"), Value: aws.String("production")}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.LaunchTemplate
}

func TestLaunchTemplates(t *testing.T) {
	f := standard(t)
	c := ec2Client(f)
	ctx := context.Background()
	lt := createTemplate(t, c, "karpenter.k8s.aws/1")
	if aws.ToString(lt.LaunchTemplateName) != "karpenter.k8s.aws/1" || aws.ToString(lt.LaunchTemplateId) == "" ||
		aws.ToInt64(lt.DefaultVersionNumber) != 1 || tagMap(lt.Tags)["karpenter.sh/cluster"] != "production" {
		t.Errorf("created = %+v", lt)
	}
	createTemplate(t, c, "karpenter.k8s.aws/2")
	if _, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("karpenter.k8s.aws/1"),
		LaunchTemplateData: &types.RequestLaunchTemplateData{}}); apiCode(err) != "InvalidLaunchTemplateName.AlreadyExistsException" {
		t.Errorf("same name again: %v", err)
	}

	got := f.LaunchTemplates()
	if len(got) != 2 {
		t.Fatalf("%d templates, want 2", len(got))
	}
	want := LaunchTemplate{ImageID: "ami-template", UserData: "#!/bin/bash\necho hi\n", InstanceProfile: "profile-1",
		SecurityGroupIDs: []string{StandardSecurityGroupID}}
	if g := got[0]; g.ImageID != want.ImageID || g.UserData != want.UserData || g.InstanceProfile != want.InstanceProfile ||
		!slices.Equal(g.SecurityGroupIDs, want.SecurityGroupIDs) || g.InstanceTags["from-template"] != "yes" ||
		g.MetadataOptions != (MetadataOptions{HTTPTokens: "required", HTTPPutResponseHopLimit: 1, HTTPEndpoint: "enabled"}) ||
		len(g.BlockDeviceMappings) != 1 || g.BlockDeviceMappings[0].VolumeSize != 20 || g.BlockDeviceMappings[0].VolumeType != "gp3" ||
		!aws.ToBool(g.BlockDeviceMappings[0].Encrypted) {
		t.Errorf("template as received = %+v", g)
	}

	for _, tc := range []struct {
		name    string
		in      ec2.DescribeLaunchTemplatesInput
		want    int
		wantErr string
	}{
		{name: "all", want: 2},
		{name: "by name", in: ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"karpenter.k8s.aws/2"}}, want: 1},
		{name: "by tag", in: ec2.DescribeLaunchTemplatesInput{Filters: []types.Filter{ec2Filter("tag:karpenter.sh/cluster", "production")}}, want: 2},
		{name: "by tag, none", in: ec2.DescribeLaunchTemplatesInput{Filters: []types.Filter{ec2Filter("tag:karpenter.sh/cluster", "staging")}}},
		{name: "unknown name", in: ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"nope"}},
			wantErr: "InvalidLaunchTemplateName.NotFoundException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.DescribeLaunchTemplates(ctx, &tc.in)
			if apiCode(err) != tc.wantErr || tc.wantErr == "" && err != nil {
				t.Fatalf("error = %v, want %q", err, tc.wantErr)
			}
			if err == nil && len(out.LaunchTemplates) != tc.want {
				t.Errorf("%d templates, want %d", len(out.LaunchTemplates), tc.want)
			}
		})
	}

	if _, err := c.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("karpenter.k8s.aws/1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String("karpenter.k8s.aws/1")}); apiCode(err) != "InvalidLaunchTemplateName.NotFoundException" {
		t.Errorf("delete twice: %v", err)
	}
	if got := f.LaunchTemplates(); len(got) != 1 || got[0].Name != "karpenter.k8s.aws/2" {
		t.Errorf("after delete: %+v", got)
	}
}

// fleetInput is an instant fleet of capacity of capacityType over
// overrides (type@subnet) of template lt.
func fleetInput(lt, capacityType string, capacity int32, overrides ...[2]string) *ec2.CreateFleetInput {
	var os []types.FleetLaunchTemplateOverridesRequest
	for _, o := range overrides {
		os = append(os, types.FleetLaunchTemplateOverridesRequest{InstanceType: types.InstanceType(o[0]), SubnetId: aws.String(o[1])})
	}
	in := &ec2.CreateFleetInput{
		Type: types.FleetTypeInstant,
		TargetCapacitySpecification: &types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(capacity), DefaultTargetCapacityType: types.DefaultTargetCapacityType(capacityType)},
		LaunchTemplateConfigs: []types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(lt), Version: aws.String("$Latest")},
			Overrides:                   os,
		}},
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance,
			Tags: []types.Tag{{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("general-abc")}}}},
	}
	if capacityType == "spot" {
		in.SpotOptions = &types.SpotOptionsRequest{AllocationStrategy: types.SpotAllocationStrategyPriceCapacityOptimized}
	} else {
		in.OnDemandOptions = &types.OnDemandOptionsRequest{AllocationStrategy: types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	return in
}

const (
	subnetA = StandardSubnetPrefix + "a"
	subnetB = StandardSubnetPrefix + "b"
	subnetC = StandardSubnetPrefix + "c"
)

func TestCreateFleet(t *testing.T) {
	for _, tc := range []struct {
		name      string
		capacity  string
		overrides [][2]string
		ice       [][3]string
		partial   int // -1: none
		total     int32
		// want: the pool launched in (type@zone) and how many; errs: error codes in errorSet.
		want     string
		launched int
		errs     []string
	}{
		{name: "on-demand lowest price", capacity: "on-demand", partial: -1, total: 1,
			overrides: [][2]string{{"m5.xlarge", subnetA}, {"m5.large", subnetB}, {"m5.2xlarge", subnetC}},
			want:      "m5.large@us-east-1b", launched: 1},
		{name: "on-demand ties go to the first", capacity: "on-demand", partial: -1, total: 1,
			overrides: [][2]string{{"m5.large", subnetC}, {"m5.large", subnetA}},
			want:      "m5.large@us-east-1c", launched: 1},
		{name: "spot cheapest spot price", capacity: "spot", partial: -1, total: 1,
			overrides: [][2]string{{"m5.large", subnetA}, {"m5.large", subnetB}, {"m5.large", subnetC}},
			want:      cheapestSpot(t, "m5.large"), launched: 1},
		{name: "insufficient capacity skips the pool", capacity: "on-demand", partial: -1, total: 1,
			overrides: [][2]string{{"m5.large", subnetA}, {"m5.xlarge", subnetA}},
			ice:       [][3]string{{"m5.large", "us-east-1a", "on-demand"}},
			want:      "m5.xlarge@us-east-1a", launched: 1, errs: []string{"InsufficientInstanceCapacity"}},
		{name: "insufficient capacity of the other capacity type does not matter", capacity: "on-demand", partial: -1, total: 1,
			overrides: [][2]string{{"m5.large", subnetA}},
			ice:       [][3]string{{"m5.large", "us-east-1a", "spot"}},
			want:      "m5.large@us-east-1a", launched: 1},
		{name: "no capacity anywhere", capacity: "spot", partial: -1, total: 1,
			overrides: [][2]string{{"m5.large", subnetA}, {"m5.large", subnetB}},
			ice:       [][3]string{{"m5.large", "us-east-1a", "spot"}, {"m5.large", "us-east-1b", "spot"}},
			errs:      []string{"InsufficientInstanceCapacity", "InsufficientInstanceCapacity"}},
		{name: "partial fleet", capacity: "on-demand", partial: 2, total: 5,
			overrides: [][2]string{{"c5.large", subnetA}},
			want:      "c5.large@us-east-1a", launched: 2, errs: []string{"InsufficientInstanceCapacity"}},
		{name: "several instances", capacity: "on-demand", partial: -1, total: 3,
			overrides: [][2]string{{"c5.large", subnetA}},
			want:      "c5.large@us-east-1a", launched: 3},
		{name: "unknown subnet and unoffered type", capacity: "on-demand", partial: -1, total: 1,
			overrides: [][2]string{{"m5.large", "subnet-nope"}, {"m9.large", subnetA}, {"t3.micro", subnetA}},
			want:      "t3.micro@us-east-1a", launched: 1, errs: []string{"InvalidSubnetID.NotFound", "Unsupported"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := standard(t)
			c := ec2Client(f)
			createTemplate(t, c, "lt")
			for _, o := range tc.ice {
				f.InsufficientCapacity(o[0], o[1], o[2])
			}
			if tc.partial >= 0 {
				f.PartialFleet(tc.partial)
			}
			out, err := c.CreateFleet(context.Background(), fleetInput("lt", tc.capacity, tc.total, tc.overrides...))
			if err != nil {
				t.Fatal(err)
			}
			var errs []string
			for _, e := range out.Errors {
				errs = append(errs, aws.ToString(e.ErrorCode))
				if e.LaunchTemplateAndOverrides == nil || e.LaunchTemplateAndOverrides.Overrides == nil ||
					e.LaunchTemplateAndOverrides.Overrides.InstanceType == "" || string(e.Lifecycle) != tc.capacity {
					t.Errorf("error entry without its override: %+v", e)
				}
			}
			for _, e := range out.Errors {
				o := e.LaunchTemplateAndOverrides.Overrides
				if aws.ToString(e.ErrorCode) == "InsufficientInstanceCapacity" &&
					(aws.ToString(o.SubnetId) == "" || aws.ToString(o.AvailabilityZone) == "" || o.InstanceType == "") {
					t.Errorf("ICE entry without type, subnet and zone: %+v", o)
				}
			}
			if !slices.Equal(errs, tc.errs) {
				t.Errorf("errors = %v, want %v", errs, tc.errs)
			}
			var ids []string
			var pool string
			for _, in := range out.Instances {
				ids = append(ids, in.InstanceIds...)
				pool = string(in.InstanceType) + "@" + aws.ToString(in.LaunchTemplateAndOverrides.Overrides.AvailabilityZone)
				if string(in.Lifecycle) != tc.capacity {
					t.Errorf("lifecycle %s, want %s", in.Lifecycle, tc.capacity)
				}
			}
			if len(ids) != tc.launched || pool != tc.want {
				t.Fatalf("launched %d in %q, want %d in %q", len(ids), pool, tc.launched, tc.want)
			}
			for _, in := range f.Instances() {
				if in.State != "pending" || in.CapacityType != tc.capacity || in.Tags["karpenter.sh/nodeclaim"] != "general-abc" ||
					in.Tags["from-template"] != "yes" || in.LaunchTemplateName != "lt" || in.ImageID != "ami-template" ||
					!slices.Equal(in.SecurityGroupIDs, []string{StandardSecurityGroupID}) || in.PrivateIP == "" {
					t.Errorf("instance = %+v", in)
				}
			}
			fleets := f.Fleets()
			if len(fleets) != 1 || fleets[0].Type != "instant" || fleets[0].TargetCapacityType != tc.capacity ||
				fleets[0].TotalCapacity != tc.total || len(fleets[0].Overrides) != len(tc.overrides) ||
				fleets[0].LaunchTemplateName != "lt" || fleets[0].Tags["karpenter.sh/nodeclaim"] != "general-abc" {
				t.Errorf("fleets = %+v", fleets)
			}
		})
	}
}

// cheapestSpot is the zone of the Standard account where instanceType's
// spot price is lowest, as type@zone.
func cheapestSpot(t *testing.T, instanceType string) string {
	f := standard(t)
	best, zone := 0.0, ""
	for _, z := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
		if p := f.ec2.spot[instanceType][z]; zone == "" || p < best {
			best, zone = p, z
		}
	}
	return instanceType + "@" + zone
}

func TestCreateFleetAllocationStrategyAndTemplateErrors(t *testing.T) {
	f := standard(t)
	c := ec2Client(f)
	createTemplate(t, c, "lt")
	in := fleetInput("lt", "on-demand", 1, [2]string{"m5.large", subnetA}, [2]string{"m5.xlarge", subnetA})
	in.OnDemandOptions.AllocationStrategy = types.FleetOnDemandAllocationStrategyPrioritized
	in.LaunchTemplateConfigs[0].Overrides[0].Priority = aws.Float64(2)
	in.LaunchTemplateConfigs[0].Overrides[1].Priority = aws.Float64(1)
	out, err := c.CreateFleet(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Instances) != 1 || out.Instances[0].InstanceType != "m5.xlarge" {
		t.Errorf("prioritized launched %+v, want m5.xlarge (priority 1)", out.Instances)
	}
	if p := f.Fleets()[0].Overrides[1].Priority; p == nil || *p != 1 || f.Fleets()[0].AllocationStrategy != "prioritized" {
		t.Errorf("fleet as received = %+v", f.Fleets()[0])
	}

	out, err = c.CreateFleet(context.Background(), fleetInput("missing", "on-demand", 1, [2]string{"m5.large", subnetA}))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InvalidLaunchTemplateName.NotFoundException" || len(out.Instances) != 0 {
		t.Errorf("missing template: %+v", out)
	}
	in = fleetInput("lt", "on-demand", 1, [2]string{"m5.large", subnetA})
	in.Type = types.FleetTypeMaintain
	if _, err := c.CreateFleet(context.Background(), in); apiCode(err) != "InvalidParameterValue" {
		t.Errorf("maintain fleet: %v", err)
	}
}

func TestInstanceLifecycle(t *testing.T) {
	f := standard(t)
	c := ec2Client(f)
	ctx := context.Background()
	createTemplate(t, c, "lt")
	out, err := c.CreateFleet(ctx, fleetInput("lt", "spot", 2, [2]string{"m6g.large", subnetB}))
	if err != nil {
		t.Fatal(err)
	}
	ids := out.Instances[0].InstanceIds
	orphan := f.AddInstance(Instance{InstanceType: "m5.large", SubnetID: subnetA, Tags: map[string]string{"karpenter.sh/managed-by": "production"}})

	describe := func(in *ec2.DescribeInstancesInput) map[string]types.Instance {
		t.Helper()
		got := map[string]types.Instance{}
		p := ec2.NewDescribeInstancesPaginator(c, in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Reservations {
				for _, i := range r.Instances {
					got[aws.ToString(i.InstanceId)] = i
				}
			}
		}
		return got
	}
	all := describe(&ec2.DescribeInstancesInput{})
	if len(all) != 3 {
		t.Fatalf("%d instances, want 3", len(all))
	}
	i := all[ids[0]]
	if i.State.Name != types.InstanceStateNameRunning || aws.ToInt32(i.State.Code) != 16 || i.InstanceType != "m6g.large" ||
		aws.ToString(i.Placement.AvailabilityZone) != "us-east-1b" || aws.ToString(i.SubnetId) != subnetB ||
		aws.ToString(i.VpcId) != StandardVPCID || i.InstanceLifecycle != types.InstanceLifecycleTypeSpot ||
		i.Architecture != types.ArchitectureValuesArm64 || aws.ToString(i.ImageId) != "ami-template" ||
		aws.ToString(i.PrivateDnsName) == "" || i.LaunchTime == nil || tagMap(i.Tags)["karpenter.sh/nodeclaim"] != "general-abc" ||
		len(i.SecurityGroups) != 1 || aws.ToString(i.SecurityGroups[0].GroupId) != StandardSecurityGroupID ||
		i.IamInstanceProfile == nil || aws.ToString(i.IamInstanceProfile.Arn) != "arn:aws:iam::"+AccountID+":instance-profile/profile-1" {
		t.Errorf("launched instance = %+v", i)
	}
	if o := all[orphan]; o.InstanceLifecycle != "" || o.State.Name != types.InstanceStateNameRunning {
		t.Errorf("orphan = %+v", o)
	}

	for _, tc := range []struct {
		name string
		in   ec2.DescribeInstancesInput
		want int
	}{
		{name: "by tag", in: ec2.DescribeInstancesInput{Filters: []types.Filter{ec2Filter("tag:karpenter.sh/managed-by", "production")}}, want: 1},
		{name: "tag-key", in: ec2.DescribeInstancesInput{Filters: []types.Filter{ec2Filter("tag-key", "karpenter.sh/nodeclaim")}}, want: 2},
		{name: "state", in: ec2.DescribeInstancesInput{Filters: []types.Filter{ec2Filter("instance-state-name", "pending", "running")}}, want: 3},
		{name: "type", in: ec2.DescribeInstancesInput{Filters: []types.Filter{ec2Filter("instance-type", "m5.large")}}, want: 1},
		{name: "zone", in: ec2.DescribeInstancesInput{Filters: []types.Filter{ec2Filter("availability-zone", "us-east-1b")}}, want: 2},
		{name: "by id", in: ec2.DescribeInstancesInput{InstanceIds: []string{ids[1]}}, want: 1},
		{name: "paged", in: ec2.DescribeInstancesInput{MaxResults: aws.Int32(5)}, want: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(&tc.in); len(got) != tc.want {
				t.Errorf("%d instances, want %d", len(got), tc.want)
			}
		})
	}
	if _, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0000000000000dead"}}); apiCode(err) != "InvalidInstanceID.NotFound" {
		t.Errorf("unknown id: %v", err)
	}

	if _, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{ids[0]},
		Tags: []types.Tag{{Key: aws.String("Name"), Value: aws.String("node-1")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{"i-0000000000000dead"},
		Tags: []types.Tag{{Key: aws.String("Name"), Value: aws.String("x")}}}); apiCode(err) != "InvalidInstanceID.NotFound" {
		t.Errorf("tagging an unknown instance: %v", err)
	}

	term, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{ids[0]}})
	if err != nil {
		t.Fatal(err)
	}
	if s := term.TerminatingInstances[0]; s.CurrentState.Name != types.InstanceStateNameShuttingDown || s.PreviousState.Name != types.InstanceStateNameRunning {
		t.Errorf("terminate = %+v → %+v", s.PreviousState, s.CurrentState)
	}
	got := describe(&ec2.DescribeInstancesInput{InstanceIds: []string{ids[0]}})[ids[0]]
	if got.State.Name != types.InstanceStateNameTerminated || tagMap(got.Tags)["Name"] != "node-1" {
		t.Errorf("after terminate and a describe: %s, tags %v", got.State.Name, tagMap(got.Tags))
	}
	if n := len(describe(&ec2.DescribeInstancesInput{Filters: []types.Filter{ec2Filter("instance-state-name", "terminated")}})); n != 1 {
		t.Errorf("%d terminated described, want 1 (terminated instances stay visible)", n)
	}
	if _, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{"i-0000000000000dead"}}); apiCode(err) != "InvalidInstanceID.NotFound" {
		t.Errorf("terminate unknown: %v", err)
	}
}

func TestInstancesStartPending(t *testing.T) {
	f := standard(t)
	c := ec2Client(f)
	createTemplate(t, c, "lt")
	if _, err := c.CreateFleet(context.Background(), fleetInput("lt", "on-demand", 1, [2]string{"m5.large", subnetA})); err != nil {
		t.Fatal(err)
	}
	if s := f.Instances()[0].State; s != "pending" {
		t.Errorf("state after CreateFleet = %s, want pending", s)
	}
	if _, err := c.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{}); err != nil {
		t.Fatal(err)
	}
	if s := f.Instances()[0].State; s != "running" {
		t.Errorf("state after a describe = %s, want running", s)
	}
}

func TestSubnetAddresses(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	c := catalogFor(t)
	f.SeedCatalog(c, []string{"us-east-1a"})
	f.AddSubnet(Subnet{ID: "subnet-small", VPCID: "vpc-1", Zone: "us-east-1a", CIDR: "10.1.0.0/28"})
	f.AddSubnet(Subnet{ID: "subnet-full", VPCID: "vpc-1", Zone: "us-east-1a", CIDR: "10.1.1.0/24", AvailableIPs: -1})
	ec := ec2Client(f)
	createTemplate(t, ec, "lt")
	ips := func() int32 {
		out, err := ec.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-small"}})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToInt32(out.Subnets[0].AvailableIpAddressCount)
	}
	if n := ips(); n != 11 {
		t.Fatalf("a /28 has %d free addresses, want 11", n)
	}
	out, err := ec.CreateFleet(context.Background(), fleetInput("lt", "on-demand", 2,
		[2]string{"m5.large", "subnet-full"}, [2]string{"m5.xlarge", "subnet-small"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InsufficientFreeAddressesInSubnet" ||
		len(out.Instances) != 1 || out.Instances[0].InstanceType != "m5.xlarge" {
		t.Fatalf("fleet = errors %+v, instances %+v", out.Errors, out.Instances)
	}
	if n := ips(); n != 9 {
		t.Errorf("%d free after two launches, want 9", n)
	}
	if ip := f.Instances()[0].PrivateIP; ip == "" || ip[:7] != "10.1.0." {
		t.Errorf("private IP %q, want one in 10.1.0.0/28", ip)
	}
	if _, err := ec.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: out.Instances[0].InstanceIds}); err != nil {
		t.Fatal(err)
	}
	if _, err := ec.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{}); err != nil {
		t.Fatal(err)
	}
	if n := ips(); n != 11 {
		t.Errorf("%d free once both are terminated, want 11", n)
	}
}

func TestAddInstance(t *testing.T) {
	f := standard(t)
	launched := releaseDate(AL2023Newest)
	for _, tc := range []struct {
		name string
		in   Instance
		want func(i types.Instance) bool
	}{
		{"defaults", Instance{InstanceType: "m5.large", SubnetID: subnetC}, func(i types.Instance) bool {
			return i.State.Name == types.InstanceStateNameRunning && aws.ToString(i.Placement.AvailabilityZone) == "us-east-1c" &&
				aws.ToString(i.VpcId) == StandardVPCID && aws.ToString(i.PrivateIpAddress) != "" && i.InstanceLifecycle == ""
		}},
		{"as given", Instance{ID: "i-1", InstanceType: "c6g.large", Zone: "us-east-1a", CapacityType: "spot", State: "stopped",
			LaunchTime: launched, InstanceProfile: "profile-1"}, func(i types.Instance) bool {
			return aws.ToString(i.InstanceId) == "i-1" && i.State.Name == types.InstanceStateNameStopped &&
				i.InstanceLifecycle == types.InstanceLifecycleTypeSpot && aws.ToString(i.SpotInstanceRequestId) != "" &&
				i.LaunchTime.Equal(launched) && i.Architecture == types.ArchitectureValuesArm64 && i.IamInstanceProfile != nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := f.AddInstance(tc.in)
			out, err := ec2Client(f).DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
			if err != nil {
				t.Fatal(err)
			}
			if i := out.Reservations[0].Instances[0]; !tc.want(i) {
				t.Errorf("instance = %+v", i)
			}
		})
	}
}

// TestCreateFleetIsIdempotent: a CreateFleet repeated with its ClientToken
// (as the SDK repeats it on a retry) gets the first answer and launches
// nothing more; another token launches again.
func TestCreateFleetIsIdempotent(t *testing.T) {
	f := standard(t)
	c := ec2Client(f)
	createTemplate(t, c, "lt")
	in := fleetInput("lt", "on-demand", 1, [2]string{"m5.large", subnetA})
	in.ClientToken = aws.String("token-1")
	first, err := c.CreateFleet(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.CreateFleet(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if *first.FleetId != *again.FleetId || first.Instances[0].InstanceIds[0] != again.Instances[0].InstanceIds[0] {
		t.Errorf("the repeated request got fleet %s/%v, the first %s/%v", *again.FleetId, again.Instances[0].InstanceIds, *first.FleetId, first.Instances[0].InstanceIds)
	}
	if n := len(f.Instances()); n != 1 || len(f.Fleets()) != 1 {
		t.Errorf("%d instances and %d fleets after a repeated token, want 1 and 1", n, len(f.Fleets()))
	}
	in.ClientToken = aws.String("token-2")
	if _, err := c.CreateFleet(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Instances()); n != 2 {
		t.Errorf("%d instances after a second token, want 2", n)
	}
}
