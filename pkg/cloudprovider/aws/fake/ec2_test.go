package fake

import (
	"context"
	"errors"
	"slices"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/smithy-go"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

// standard is the Standard account of cluster "production", closed with
// the test.
func standard(t *testing.T) *AWS {
	t.Helper()
	f := Standard(StandardOptions{Cluster: "production", KubernetesVersion: "1.37"})
	t.Cleanup(f.Close)
	return f
}

func ec2Client(f *AWS) *ec2.Client { return ec2.NewFromConfig(f.Config()) }

func ec2Filter(name string, values ...string) types.Filter {
	return types.Filter{Name: aws.String(name), Values: values}
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestDescribeSubnets(t *testing.T) {
	f := standard(t)
	c := ec2Client(f)
	for _, tc := range []struct {
		name    string
		in      ec2.DescribeSubnetsInput
		want    []string
		wantErr string
	}{
		{name: "all", want: []string{"subnet-0standarda", "subnet-0standardb", "subnet-0standardc", UntaggedSubnetID}},
		{name: "discovery tag", in: ec2.DescribeSubnetsInput{Filters: []types.Filter{ec2Filter("tag:karpenter.sh/discovery", "production")}},
			want: []string{"subnet-0standarda", "subnet-0standardb", "subnet-0standardc"}},
		{name: "tag of another cluster", in: ec2.DescribeSubnetsInput{Filters: []types.Filter{ec2Filter("tag:karpenter.sh/discovery", "staging")}}},
		{name: "tag-key and zone", in: ec2.DescribeSubnetsInput{Filters: []types.Filter{ec2Filter("tag-key", "Name"), ec2Filter("availability-zone", "us-east-1b")}},
			want: []string{"subnet-0standardb"}},
		{name: "name wildcard", in: ec2.DescribeSubnetsInput{Filters: []types.Filter{ec2Filter("tag:Name", "production-private-*")}},
			want: []string{"subnet-0standarda", "subnet-0standardb", "subnet-0standardc"}},
		{name: "by id", in: ec2.DescribeSubnetsInput{SubnetIds: []string{UntaggedSubnetID}}, want: []string{UntaggedSubnetID}},
		{name: "values are ORed", in: ec2.DescribeSubnetsInput{Filters: []types.Filter{ec2Filter("subnet-id", "subnet-0standarda", "subnet-0standardc")}},
			want: []string{"subnet-0standarda", "subnet-0standardc"}},
		{name: "vpc", in: ec2.DescribeSubnetsInput{Filters: []types.Filter{ec2Filter("vpc-id", "vpc-other")}}},
		{name: "unknown id", in: ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-nope"}}, wantErr: "InvalidSubnetID.NotFound"},
		{name: "unknown filter", in: ec2.DescribeSubnetsInput{Filters: []types.Filter{ec2Filter("colour", "red")}}, wantErr: "InvalidParameterValue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.DescribeSubnets(context.Background(), &tc.in)
			if tc.wantErr != "" {
				if apiCode(err) != tc.wantErr {
					t.Fatalf("error = %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range out.Subnets {
				got = append(got, aws.ToString(s.SubnetId))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("subnets = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDescribeSubnetsFields(t *testing.T) {
	f := standard(t)
	out, err := ec2Client(f).DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-0standardb"}})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Subnets[0]
	if aws.ToString(s.AvailabilityZone) != "us-east-1b" || aws.ToString(s.AvailabilityZoneId) != "use1-az2" ||
		aws.ToString(s.VpcId) != StandardVPCID || aws.ToString(s.CidrBlock) != "10.0.32.0/19" ||
		aws.ToInt32(s.AvailableIpAddressCount) != 8187 || s.State != types.SubnetStateAvailable {
		t.Errorf("subnet = %+v", s)
	}
	if tags := tagMap(s.Tags); tags["karpenter.sh/discovery"] != "production" || tags["Name"] != "production-private-us-east-1b" {
		t.Errorf("tags = %v", tags)
	}
}

func tagMap(tags []types.Tag) map[string]string {
	m := map[string]string{}
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

func TestDescribeSecurityGroups(t *testing.T) {
	f := standard(t)
	c := ec2Client(f)
	for _, tc := range []struct {
		name string
		in   ec2.DescribeSecurityGroupsInput
		want []string
	}{
		{name: "all", want: []string{StandardSecurityGroupID, UntaggedSecurityGroupID}},
		{name: "discovery tag", in: ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{ec2Filter("tag:karpenter.sh/discovery", "production")}},
			want: []string{StandardSecurityGroupID}},
		{name: "group-name", in: ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{ec2Filter("group-name", "eks-cluster-sg-*")}},
			want: []string{StandardSecurityGroupID}},
		{name: "group-id", in: ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{ec2Filter("group-id", UntaggedSecurityGroupID)}},
			want: []string{UntaggedSecurityGroupID}},
		{name: "GroupNames", in: ec2.DescribeSecurityGroupsInput{GroupNames: []string{"default"}}, want: []string{UntaggedSecurityGroupID}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.DescribeSecurityGroups(context.Background(), &tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, g := range out.SecurityGroups {
				got = append(got, aws.ToString(g.GroupId))
				if aws.ToString(g.GroupId) == StandardSecurityGroupID && aws.ToString(g.GroupName) != "eks-cluster-sg-production" {
					t.Errorf("group name = %q", aws.ToString(g.GroupName))
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("groups = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDescribeImages(t *testing.T) {
	f := standard(t)
	c := ec2Client(f)
	for _, tc := range []struct {
		name string
		in   ec2.DescribeImagesInput
		want []string // names
	}{
		{name: "name wildcard and arch", in: ec2.DescribeImagesInput{Owners: []string{"amazon"}, Filters: []types.Filter{
			ec2Filter("name", "amazon-eks-node-al2023-*-standard-1.37-*"), ec2Filter("architecture", "arm64")}},
			want: []string{"amazon-eks-node-al2023-arm64-standard-1.37-v20241011", "amazon-eks-node-al2023-arm64-standard-1.37-v20241120"}},
		{name: "exact name", in: ec2.DescribeImagesInput{Filters: []types.Filter{ec2Filter("name", "amazon-eks-node-al2023-x86_64-neuron-1.37-"+AL2023Newest)}},
			want: []string{"amazon-eks-node-al2023-x86_64-neuron-1.37-v20241120"}},
		{name: "owner by id", in: ec2.DescribeImagesInput{Owners: []string{AmazonOwnerID}, Filters: []types.Filter{ec2Filter("name", "*x86_64-standard*v20241011")}},
			want: []string{"amazon-eks-node-al2023-x86_64-standard-1.37-v20241011"}},
		{name: "owner self has none", in: ec2.DescribeImagesInput{Owners: []string{"self"}}},
		{name: "state", in: ec2.DescribeImagesInput{Filters: []types.Filter{ec2Filter("state", "pending")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.DescribeImages(context.Background(), &tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, img := range out.Images {
				got = append(got, aws.ToString(img.Name))
			}
			sort.Strings(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("images = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDescribeImagesFieldsAndDeprecation(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	created := releaseDate(AL2023Older)
	past := created.AddDate(0, 1, 0)
	f.AddImage(Image{ID: "ami-old", Name: "old", OwnerID: AmazonOwnerID, OwnerAlias: "amazon", Architecture: "x86_64",
		CreationDate: created, DeprecationTime: &past, Tags: map[string]string{"k": "v"}})
	f.AddImage(Image{ID: "ami-new", Name: "new", OwnerID: AccountID, Architecture: "arm64", CreationDate: created})
	c := ec2Client(f)
	out, err := c.DescribeImages(context.Background(), &ec2.DescribeImagesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Images) != 1 || aws.ToString(out.Images[0].ImageId) != "ami-new" {
		t.Fatalf("without IncludeDeprecated: %d images, want only ami-new", len(out.Images))
	}
	out, err = c.DescribeImages(context.Background(), &ec2.DescribeImagesInput{IncludeDeprecated: aws.Bool(true), Owners: []string{"amazon"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Images) != 1 {
		t.Fatalf("with IncludeDeprecated: %d images, want 1", len(out.Images))
	}
	img := out.Images[0]
	if aws.ToString(img.CreationDate) != "2024-10-11T00:00:00.000Z" || aws.ToString(img.DeprecationTime) != "2024-11-11T00:00:00.000Z" ||
		img.Architecture != types.ArchitectureValuesX8664 || img.State != types.ImageStateAvailable ||
		aws.ToString(img.OwnerId) != AmazonOwnerID || aws.ToString(img.ImageOwnerAlias) != "amazon" || tagMap(img.Tags)["k"] != "v" {
		t.Errorf("image = %+v", img)
	}
}

func TestDescribeAvailabilityZones(t *testing.T) {
	f := standard(t)
	out, err := ec2Client(f).DescribeAvailabilityZones(context.Background(), &ec2.DescribeAvailabilityZonesInput{
		Filters: []types.Filter{ec2Filter("zone-name", "us-east-1a", "us-east-1c")}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, z := range out.AvailabilityZones {
		got = append(got, aws.ToString(z.ZoneName)+"="+aws.ToString(z.ZoneId))
	}
	if want := []string{"us-east-1a=use1-az1", "us-east-1c=use1-az3"}; !slices.Equal(got, want) {
		t.Errorf("zones = %v, want %v", got, want)
	}
}

func TestZoneID(t *testing.T) {
	for zone, want := range map[string]string{
		"us-east-1a": "use1-az1", "us-west-2c": "usw2-az3", "eu-central-1b": "euc1-az2",
		"ap-southeast-2a": "apse2-az1", "us-gov-west-1a": "usgw1-az1",
	} {
		if got := zoneID(zone); got != want {
			t.Errorf("zoneID(%s) = %s, want %s", zone, got, want)
		}
	}
}

func TestDescribeInstanceTypes(t *testing.T) {
	f := standard(t)
	c := ec2Client(f)
	var pages, n int
	p := ec2.NewDescribeInstanceTypesPaginator(c, &ec2.DescribeInstanceTypesInput{})
	byName := map[string]types.InstanceTypeInfo{}
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(out.InstanceTypes) > 100 {
			t.Fatalf("page of %d, AWS pages by 100", len(out.InstanceTypes))
		}
		pages++
		n += len(out.InstanceTypes)
		for _, it := range out.InstanceTypes {
			byName[string(it.InstanceType)] = it
		}
	}
	cat := f.ec2.types
	if n != len(cat) || pages != (len(cat)+99)/100 {
		t.Fatalf("%d types in %d pages, want %d in %d", n, pages, len(cat), (len(cat)+99)/100)
	}

	m5 := byName["m5.large"]
	if aws.ToInt32(m5.VCpuInfo.DefaultVCpus) != 2 || aws.ToInt64(m5.MemoryInfo.SizeInMiB) != 8192 ||
		!slices.Equal(m5.ProcessorInfo.SupportedArchitectures, []types.ArchitectureType{types.ArchitectureTypeX8664}) ||
		aws.ToString(m5.ProcessorInfo.Manufacturer) != "Intel" || m5.Hypervisor != types.InstanceTypeHypervisorNitro ||
		aws.ToInt32(m5.NetworkInfo.MaximumNetworkInterfaces) != 3 || aws.ToInt32(m5.NetworkInfo.Ipv4AddressesPerInterface) != 10 ||
		aws.ToBool(m5.BareMetal) || aws.ToBool(m5.BurstablePerformanceSupported) || m5.GpuInfo != nil {
		t.Errorf("m5.large = %+v", m5)
	}
	g5 := byName["g5.xlarge"]
	if g5.GpuInfo == nil || len(g5.GpuInfo.Gpus) != 1 || aws.ToString(g5.GpuInfo.Gpus[0].Name) != "A10G" ||
		aws.ToString(g5.GpuInfo.Gpus[0].Manufacturer) != "NVIDIA" || aws.ToInt32(g5.GpuInfo.Gpus[0].Count) != 1 ||
		aws.ToInt32(g5.GpuInfo.Gpus[0].MemoryInfo.SizeInMiB) != 22888 || g5.InstanceStorageInfo == nil ||
		aws.ToInt64(g5.InstanceStorageInfo.TotalSizeInGB) != 250 {
		t.Errorf("g5.xlarge gpu = %+v storage = %+v", g5.GpuInfo, g5.InstanceStorageInfo)
	}
	inf2 := byName["inf2.xlarge"]
	if inf2.NeuronInfo == nil || aws.ToString(inf2.NeuronInfo.NeuronDevices[0].Name) != "Inferentia2" ||
		aws.ToInt32(inf2.NeuronInfo.NeuronDevices[0].Count) != 1 {
		t.Errorf("inf2.xlarge neuron = %+v", inf2.NeuronInfo)
	}
	if t3 := byName["t3.micro"]; !aws.ToBool(t3.BurstablePerformanceSupported) {
		t.Errorf("t3.micro not burstable")
	}
	if metal := byName["m5.metal"]; !aws.ToBool(metal.BareMetal) {
		t.Errorf("m5.metal not bare metal")
	}
	if p5 := byName["p5.48xlarge"]; !aws.ToBool(p5.NetworkInfo.EfaSupported) || aws.ToInt32(p5.NetworkInfo.EfaInfo.MaximumEfaInterfaces) != 32 ||
		aws.ToInt32(p5.NetworkInfo.MaximumNetworkCards) != 32 {
		t.Errorf("p5.48xlarge network = %+v", p5.NetworkInfo)
	}
	if a1 := byName["a1.medium"]; a1.ProcessorInfo.SupportedArchitectures[0] != types.ArchitectureTypeArm64 ||
		aws.ToFloat64(a1.ProcessorInfo.SustainedClockSpeedInGhz) != 2.3 {
		t.Errorf("a1.medium processor = %+v", a1.ProcessorInfo)
	}

	out, err := c.DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []types.InstanceType{"m5.large", "c6g.xlarge"}})
	if err != nil || len(out.InstanceTypes) != 2 {
		t.Fatalf("by name: %v, %d types", err, len(out.InstanceTypes))
	}
	out, err = c.DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{
		Filters: []types.Filter{ec2Filter("instance-type", "m5.*"), ec2Filter("bare-metal", "true")}})
	if err != nil || len(out.InstanceTypes) != 1 || out.InstanceTypes[0].InstanceType != "m5.metal" {
		t.Fatalf("by filter: %v, %+v", err, out)
	}
	if _, err := c.DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []types.InstanceType{"m5.huge"}}); apiCode(err) != "InvalidInstanceType" {
		t.Errorf("unknown type: %v", err)
	}
}

func TestDescribeInstanceTypeOfferings(t *testing.T) {
	f := standard(t)
	c := ec2Client(f)
	p := ec2.NewDescribeInstanceTypeOfferingsPaginator(c, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: types.LocationTypeAvailabilityZone})
	var pages int
	zones := map[string]map[string]bool{}
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, o := range out.InstanceTypeOfferings {
			if o.LocationType != types.LocationTypeAvailabilityZone {
				t.Fatalf("location type %s", o.LocationType)
			}
			if zones[string(o.InstanceType)] == nil {
				zones[string(o.InstanceType)] = map[string]bool{}
			}
			zones[string(o.InstanceType)][aws.ToString(o.Location)] = true
		}
	}
	if pages < 4 {
		t.Errorf("%d pages, want ≥ 4 (1000 a page)", pages)
	}
	if len(zones["m5.large"]) != 3 || !zones["m5.large"]["us-east-1c"] {
		t.Errorf("m5.large zones = %v", zones["m5.large"])
	}
	out, err := c.DescribeInstanceTypeOfferings(context.Background(), &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: types.LocationTypeAvailabilityZone,
		Filters:      []types.Filter{ec2Filter("location", "us-east-1b"), ec2Filter("instance-type", "m5.large", "c5.large")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.InstanceTypeOfferings) != 2 {
		t.Errorf("filtered = %+v, want m5.large and c5.large in us-east-1b", out.InstanceTypeOfferings)
	}
	out, err = c.DescribeInstanceTypeOfferings(context.Background(), &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: types.LocationTypeAvailabilityZoneId, Filters: []types.Filter{ec2Filter("instance-type", "m5.large")}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, o := range out.InstanceTypeOfferings {
		ids = append(ids, aws.ToString(o.Location))
	}
	if want := []string{"use1-az1", "use1-az2", "use1-az3"}; !slices.Equal(ids, want) {
		t.Errorf("zone IDs = %v, want %v", ids, want)
	}
}

func catalogFor(t *testing.T) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNeuronInfo(t *testing.T) {
	f := standard(t)
	out, err := ec2Client(f).DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{
		InstanceTypes: []types.InstanceType{"trn1.32xlarge", "inf1.xlarge"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.InstanceTypes {
		n := it.NeuronInfo
		if n == nil || len(n.NeuronDevices) != 1 || n.NeuronDevices[0].CoreInfo == nil || n.NeuronDevices[0].MemoryInfo == nil {
			t.Fatalf("%s: neuron info %+v", it.InstanceType, n)
		}
		d := n.NeuronDevices[0]
		want := map[types.InstanceType][3]int32{"trn1.32xlarge": {16, 2, 2}, "inf1.xlarge": {1, 4, 1}}[it.InstanceType]
		if got := [3]int32{aws.ToInt32(d.Count), aws.ToInt32(d.CoreInfo.Count), aws.ToInt32(d.CoreInfo.Version)}; got != want {
			t.Errorf("%s: devices, cores, version = %v, want %v", it.InstanceType, got, want)
		}
	}
}

func TestStandardInAnotherRegion(t *testing.T) {
	f := Standard(StandardOptions{Region: "us-west-2"})
	defer f.Close()
	out, err := ec2Client(f).DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{
		Filters: []types.Filter{ec2Filter("tag:karpenter.sh/discovery", "production")}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range out.Subnets {
		got = append(got, aws.ToString(s.AvailabilityZone)+"="+aws.ToString(s.AvailabilityZoneId))
	}
	if want := []string{"us-west-2a=usw2-az1", "us-west-2b=usw2-az2", "us-west-2c=usw2-az3"}; !slices.Equal(got, want) {
		t.Errorf("subnets = %v, want %v", got, want)
	}
	if len(f.ec2.offered["m5.large"]) != 3 || f.ec2.spot["m5.large"]["us-west-2a"] == 0 {
		t.Errorf("m5.large offered in %v, spot %v", f.ec2.offered["m5.large"], f.ec2.spot["m5.large"])
	}
	// The catalog has no us-west-2 prices: Pricing answers the ones the
	// fake's EC2 uses (us-east-1's).
	prices, err := pricing.NewFromConfig(f.Config()).GetProducts(context.Background(), &pricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"), Filters: []pricingtypes.Filter{
			{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String("regionCode"), Value: aws.String("us-west-2")},
			{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String("instanceType"), Value: aws.String("m5.large")}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(prices.PriceList) != 1 {
		t.Fatalf("%d us-west-2 products for m5.large, want 1", len(prices.PriceList))
	}
	if _, p := decodePriceListItem(t, prices.PriceList[0]); p != f.ec2.onDemand["m5.large"] {
		t.Errorf("us-west-2 m5.large = %v, want %v", p, f.ec2.onDemand["m5.large"])
	}
}

func TestPagination(t *testing.T) {
	f := standard(t)
	c := ec2Client(f)
	var got []string
	var pages int
	p := ec2.NewDescribeImagesPaginator(c, &ec2.DescribeImagesInput{MaxResults: aws.Int32(5), Owners: []string{"amazon"}})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, img := range out.Images {
			got = append(got, aws.ToString(img.ImageId))
		}
	}
	if want := len(f.Images()); len(got) != want || pages != (want+4)/5 || len(slices.Compact(slices.Sorted(slices.Values(got)))) != want {
		t.Errorf("%d images (%d distinct) in %d pages, want %d in %d", len(got), len(slices.Compact(slices.Sorted(slices.Values(got)))), pages, want, (want+4)/5)
	}
	if _, err := c.DescribeImages(context.Background(), &ec2.DescribeImagesInput{NextToken: aws.String("bogus")}); apiCode(err) != "InvalidNextToken" {
		t.Errorf("a bogus token: %v", err)
	}
}
