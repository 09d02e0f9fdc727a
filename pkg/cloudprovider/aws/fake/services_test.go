package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestStandardParameters(t *testing.T) {
	f := standard(t)
	c := ssm.NewFromConfig(f.Config())
	images := map[string]string{}
	for _, img := range f.Images() {
		images[img.ID] = img.Name
	}
	for _, tc := range []struct{ parameter, image string }{
		{"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id",
			"amazon-eks-node-al2023-x86_64-standard-1.37-" + AL2023Newest},
		{"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-1.37-v20241011/image_id",
			"amazon-eks-node-al2023-arm64-standard-1.37-" + AL2023Older},
		{"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/arm64/nvidia/recommended/image_id",
			"amazon-eks-node-al2023-arm64-nvidia-1.37-" + AL2023Newest},
		{"/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/neuron/recommended/image_id",
			"amazon-eks-node-al2023-x86_64-neuron-1.37-" + AL2023Newest},
		{"/aws/service/bottlerocket/aws-k8s-1.37/arm64/latest/image_id", ""},
		{"/aws/service/bottlerocket/aws-k8s-1.37/x86_64/1.26.0/image_id", ""},
		{"/aws/service/bottlerocket/aws-k8s-1.37-nvidia/x86_64/latest/image_id", ""},
	} {
		t.Run(tc.parameter, func(t *testing.T) {
			out, err := c.GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String(tc.parameter)})
			if err != nil {
				t.Fatal(err)
			}
			p := out.Parameter
			name, ok := images[aws.ToString(p.Value)]
			if !ok || tc.image != "" && name != tc.image {
				t.Errorf("%s = %s (%s), want the image %s", tc.parameter, aws.ToString(p.Value), name, tc.image)
			}
			if aws.ToString(p.Name) != tc.parameter || p.Type != ssmtypes.ParameterTypeString ||
				aws.ToString(p.DataType) != "aws:ec2:image" || p.Version != 1 || p.LastModifiedDate == nil {
				t.Errorf("parameter = %+v", p)
			}
		})
	}
	br, err := c.GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String("/aws/service/bottlerocket/aws-k8s-1.37-nvidia/x86_64/latest/image_id")})
	if err != nil {
		t.Fatal(err)
	}
	if want := "bottlerocket-aws-k8s-1.37-nvidia-x86_64-" + BottlerocketNewest + "-"; images[aws.ToString(br.Parameter.Value)][:len(want)] != want {
		t.Errorf("bottlerocket nvidia latest = %s", images[aws.ToString(br.Parameter.Value)])
	}
}

func TestGetParameters(t *testing.T) {
	f := New(Options{})
	defer f.Close()
	f.SetParameter("/a", "ami-1")
	f.SetParameter("/b", "text")
	c := ssm.NewFromConfig(f.Config())
	out, err := c.GetParameters(context.Background(), &ssm.GetParametersInput{Names: []string{"/a", "/missing", "/b"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Parameters) != 2 || aws.ToString(out.Parameters[0].Value) != "ami-1" || aws.ToString(out.Parameters[1].DataType) != "text" ||
		!slices.Equal(out.InvalidParameters, []string{"/missing"}) {
		t.Errorf("GetParameters = %+v", out)
	}
	_, err = c.GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String("/missing")})
	var notFound *ssmtypes.ParameterNotFound
	if !errors.As(err, &notFound) {
		t.Errorf("missing parameter: %v, want ParameterNotFound", err)
	}
}

func TestInstanceProfiles(t *testing.T) {
	f := standard(t)
	c := iam.NewFromConfig(f.Config())
	ctx := context.Background()
	const name = "production_123"
	_, err := c.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	var noSuch *iamtypes.NoSuchEntityException
	if !errors.As(err, &noSuch) {
		t.Fatalf("missing profile: %v, want NoSuchEntity", err)
	}
	created, err := c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name), Path: aws.String("/karpenter/"),
		Tags: []iamtypes.Tag{{Key: aws.String("karpenter.k8s.aws/ec2nodeclass"), Value: aws.String("default")}}})
	if err != nil {
		t.Fatal(err)
	}
	if arn := aws.ToString(created.InstanceProfile.Arn); arn != "arn:aws:iam::"+AccountID+":instance-profile/karpenter/"+name {
		t.Errorf("arn = %s", arn)
	}
	if _, err := c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name)}); !errors.As(err, new(*iamtypes.EntityAlreadyExistsException)) {
		t.Errorf("create twice: %v", err)
	}
	if _, err := c.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String("NoSuchRole")}); !errors.As(err, &noSuch) {
		t.Errorf("adding a missing role: %v", err)
	}
	if _, err := c.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String("KarpenterNodeRole-production")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String("KarpenterNodeRole-production")}); !errors.As(err, new(*iamtypes.LimitExceededException)) {
		t.Errorf("a second role: %v", err)
	}
	if _, err := c.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String(name),
		Tags: []iamtypes.Tag{{Key: aws.String("karpenter.sh/managed-by"), Value: aws.String("production")}}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	p := got.InstanceProfile
	tags := map[string]string{}
	for _, tag := range p.Tags {
		tags[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	if aws.ToString(p.Path) != "/karpenter/" || len(p.Roles) != 1 || aws.ToString(p.Roles[0].RoleName) != "KarpenterNodeRole-production" ||
		tags["karpenter.k8s.aws/ec2nodeclass"] != "default" || tags["karpenter.sh/managed-by"] != "production" || p.CreateDate == nil {
		t.Errorf("profile = %+v, tags %v", p, tags)
	}
	if ps := f.InstanceProfiles(); len(ps) != 1 || ps[0].Role != "KarpenterNodeRole-production" || ps[0].Path != "/karpenter/" || len(ps[0].Tags) != 2 {
		t.Errorf("InstanceProfiles = %+v", ps)
	}
	list, err := c.ListInstanceProfiles(ctx, &iam.ListInstanceProfilesInput{PathPrefix: aws.String("/karpenter/")})
	if err != nil || len(list.InstanceProfiles) != 1 || list.IsTruncated {
		t.Errorf("ListInstanceProfiles = %+v, %v", list, err)
	}
	if _, err := c.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)}); !errors.As(err, new(*iamtypes.DeleteConflictException)) {
		t.Errorf("deleting a profile with a role: %v", err)
	}
	if _, err := c.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name),
		RoleName: aws.String("KarpenterNodeRole-production")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	if ps := f.InstanceProfiles(); len(ps) != 0 {
		t.Errorf("after delete: %+v", ps)
	}
	role, err := c.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("KarpenterNodeRole-production")})
	if err != nil || aws.ToString(role.Role.Arn) != "arn:aws:iam::"+AccountID+":role/KarpenterNodeRole-production" {
		t.Errorf("GetRole = %+v, %v", role, err)
	}
}

func TestSQS(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	f := New(Options{Clock: clock})
	defer f.Close()
	url := f.CreateQueue("production")
	c := sqs.NewFromConfig(f.Config())
	ctx := context.Background()

	got, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("production")})
	if err != nil || aws.ToString(got.QueueUrl) != url {
		t.Fatalf("GetQueueUrl = %v, %v; want %s", got, err, url)
	}
	_, err = c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("staging")})
	if !errors.As(err, new(*sqstypes.QueueDoesNotExist)) || apiCode(err) != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("missing queue: %v (code %s)", err, apiCode(err))
	}

	for i := range 12 {
		f.SendMessage(url, fmt.Sprintf(`{"n":%d}`, i))
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(`{"n":12}`)}); err != nil {
		t.Fatal(err) // the SDK checks the answer's MD5 of the body
	}
	receive := func(visibility int32) []sqstypes.Message {
		t.Helper()
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			WaitTimeSeconds: 20, VisibilityTimeout: visibility,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}
	first := receive(60)
	if len(first) != 10 || aws.ToString(first[0].Body) != `{"n":0}` || first[0].Attributes["ApproximateReceiveCount"] != "1" {
		t.Fatalf("first receive: %d messages, first %+v", len(first), first[0])
	}
	second := receive(60)
	if len(second) != 3 || aws.ToString(second[0].Body) != `{"n":10}` {
		t.Fatalf("second receive: %d messages, want the 3 still visible", len(second))
	}
	if third := receive(60); len(third) != 0 {
		t.Fatalf("third receive: %d messages, want none (all invisible), at once", len(third))
	}
	for _, m := range first[:5] {
		if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.QueueMessages(url)); n != 8 {
		t.Errorf("%d messages in the queue, want 8 (13 sent, 5 deleted; received ones still count)", n)
	}
	clock.SetTime(clock.Now().Add(61 * time.Second))
	again := receive(60)
	if len(again) != 8 || aws.ToString(again[0].Body) != `{"n":5}` || again[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Errorf("after the visibility timeout: %d messages, first %+v", len(again), again)
	}
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String("bogus")}); !errors.As(err, new(*sqstypes.ReceiptHandleIsInvalid)) {
		t.Errorf("bogus receipt handle: %v", err)
	}
	// A stale handle (the message was received again since) deletes nothing.
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: first[5].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.QueueMessages(url)); n != 8 {
		t.Errorf("%d messages after deleting by a stale handle, want 8", n)
	}
}

func TestPricing(t *testing.T) {
	f := standard(t)
	c := pricing.NewFromConfig(f.Config())
	term := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
	}
	linux := []pricingtypes.Filter{term("regionCode", "us-east-1"), term("operatingSystem", "Linux"), term("tenancy", "Shared"),
		term("preInstalledSw", "NA"), term("capacitystatus", "Used")}

	prices := map[string]float64{}
	var pages int
	p := pricing.NewGetProductsPaginator(c, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: linux})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(out.PriceList) > 100 {
			t.Fatalf("page of %d", len(out.PriceList))
		}
		for _, item := range out.PriceList {
			typ, price := decodePriceListItem(t, item)
			prices[typ] = price
		}
	}
	if len(prices) != len(f.ec2.onDemand) || pages != (len(prices)+99)/100 {
		t.Errorf("%d prices in %d pages, want %d", len(prices), pages, len(f.ec2.onDemand))
	}
	if prices["m5.large"] != 0.096 {
		t.Errorf("m5.large = %v, want 0.096", prices["m5.large"])
	}

	for _, tc := range []struct {
		name    string
		filters []pricingtypes.Filter
		want    int
	}{
		{name: "one type", filters: append(slices.Clone(linux), term("instanceType", "m5.large")), want: 1},
		{name: "Windows", filters: []pricingtypes.Filter{term("regionCode", "us-east-1"), term("operatingSystem", "Windows")}},
		{name: "GovCloud", filters: []pricingtypes.Filter{term("regionCode", "us-gov-west-1"), term("instanceType", "m5.large")}, want: 1},
		{name: "another region", filters: []pricingtypes.Filter{term("regionCode", "eu-west-1")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.GetProducts(context.Background(), &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: tc.filters})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.PriceList) != tc.want {
				t.Errorf("%d products, want %d", len(out.PriceList), tc.want)
			}
		})
	}
}

// decodePriceListItem reads a PriceList entry as upstream Karpenter does.
func decodePriceListItem(t *testing.T, item string) (string, float64) {
	t.Helper()
	var doc struct {
		Product struct {
			Attributes struct {
				InstanceType string `json:"instanceType"`
			} `json:"attributes"`
		} `json:"product"`
		Terms struct {
			OnDemand map[string]struct {
				PriceDimensions map[string]struct {
					PricePerUnit map[string]string `json:"pricePerUnit"`
				} `json:"priceDimensions"`
			} `json:"OnDemand"`
		} `json:"terms"`
	}
	if err := json.Unmarshal([]byte(item), &doc); err != nil {
		t.Fatal(err)
	}
	for _, term := range doc.Terms.OnDemand {
		for _, dim := range term.PriceDimensions {
			p, err := strconv.ParseFloat(dim.PricePerUnit["USD"], 64)
			if err != nil {
				t.Fatal(err)
			}
			return doc.Product.Attributes.InstanceType, p
		}
	}
	t.Fatalf("no on-demand price in %s", item)
	return "", 0
}

func TestDescribeSpotPriceHistory(t *testing.T) {
	f := standard(t)
	c := ec2Client(f)
	out, err := c.DescribeSpotPriceHistory(context.Background(), &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"},
		InstanceTypes:       []ec2types.InstanceType{"m5.large"},
		StartTime:           aws.Time(time.Now()),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.SpotPriceHistory) != 3 {
		t.Fatalf("%d prices, want one per zone", len(out.SpotPriceHistory))
	}
	for _, sp := range out.SpotPriceHistory {
		zone := aws.ToString(sp.AvailabilityZone)
		if got, want := aws.ToString(sp.SpotPrice), strconv.FormatFloat(f.ec2.spot["m5.large"][zone], 'f', 6, 64); got != want || sp.Timestamp == nil {
			t.Errorf("%s: %s, want %s", zone, got, want)
		}
	}
	var n int
	p := ec2.NewDescribeSpotPriceHistoryPaginator(c, &ec2.DescribeSpotPriceHistoryInput{
		Filters: []ec2types.Filter{ec2Filter("product-description", "Linux/UNIX"), ec2Filter("availability-zone", "us-east-1a")}})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.SpotPriceHistory)
	}
	if n != len(f.ec2.onDemand) {
		t.Errorf("%d prices in us-east-1a, want %d", n, len(f.ec2.onDemand))
	}
}
