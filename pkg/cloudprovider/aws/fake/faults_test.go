package fake

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
)

// calls are one call of each service, as the SDK makes it.
func calls(f *AWS) map[string]func() error {
	cfg := f.Config()
	ctx := context.Background()
	queue := f.CreateQueue("production")
	return map[string]func() error{
		"ec2:DescribeSubnets": func() error {
			_, err := ec2.NewFromConfig(cfg).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
			return err
		},
		"iam:GetRole": func() error {
			_, err := iam.NewFromConfig(cfg).GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("KarpenterNodeRole-production")})
			return err
		},
		"ssm:GetParameter": func() error {
			_, err := ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{
				Name: aws.String("/aws/service/bottlerocket/aws-k8s-1.37/x86_64/latest/image_id")})
			return err
		},
		"sqs:ReceiveMessage": func() error {
			_, err := sqs.NewFromConfig(cfg).ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue)})
			return err
		},
		"pricing:GetProducts": func() error {
			_, err := pricing.NewFromConfig(cfg).GetProducts(ctx, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(1)})
			return err
		},
	}
}

// count is how many requests of action (service:Action) f answered with
// the error code ("" for an answer). Not every request: a transport that
// drops a kept-alive connection under load makes the SDK send an answered
// request again, and the fake cannot tell.
func count(f *AWS, action, code string) int {
	var n int
	for _, c := range f.Calls() {
		if c.IAMAction() == action && c.Error == code {
			n++
		}
	}
	return n
}

func TestThrottle(t *testing.T) {
	wantCode := map[string]string{"ec2": "RequestLimitExceeded", "iam": "Throttling", "ssm": "ThrottlingException",
		"sqs": "ThrottlingException", "pricing": "ThrottlingException"}
	f := standard(t)
	for action, call := range calls(f) {
		service, name, _ := strings.Cut(action, ":")
		t.Run(action, func(t *testing.T) {
			// Throttled twice: the standard retryer's third attempt succeeds.
			f.Throttle(name, 2)
			before := count(f, action, wantCode[service])
			if err := call(); err != nil {
				t.Fatalf("throttled twice: %v", err)
			}
			if n := count(f, action, wantCode[service]) - before; n != 2 {
				t.Errorf("%d throttled requests, want 2", n)
			}
			if last := f.Invocations()[len(f.Invocations())-1]; last.IAMAction() != action || last.Error != "" || last.Attempt < 3 {
				t.Errorf("last invocation %+v, want %s answered on its third attempt or later", last, action)
			}
			// Throttled three times: the SDK gives up, with a throttling error.
			f.Throttle(action, 3)
			err := call()
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != wantCode[service] {
				t.Fatalf("throttled three times: %v, want %s", err, wantCode[service])
			}
			if retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) != aws.TrueTernary {
				t.Errorf("the SDK does not take %v for throttling", err)
			}
			if err := call(); err != nil {
				t.Errorf("after the throttling: %v", err)
			}
		})
	}
}

func TestFail(t *testing.T) {
	f := standard(t)
	cs := calls(f)
	for _, tc := range []struct {
		action, code string
		// requests: how many the SDK makes (a 5xx is retried).
		requests int
	}{
		{"ec2:DescribeSubnets", "UnauthorizedOperation", 1},
		{"ec2:DescribeSubnets", "InternalError", 3},
		{"iam:GetRole", "AccessDenied", 1},
		{"ssm:GetParameter", "AccessDeniedException", 1},
		{"sqs:ReceiveMessage", "AccessDenied", 1},
		{"pricing:GetProducts", "InternalErrorException", 3},
	} {
		t.Run(tc.action+"/"+tc.code, func(t *testing.T) {
			f.Fail(tc.action, tc.code, 5)
			before := count(f, tc.action, tc.code)
			err := cs[tc.action]()
			if apiCode(err) != tc.code {
				t.Errorf("error = %v, want %s", err, tc.code)
			}
			if n := count(f, tc.action, tc.code) - before; n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			f.Fail(tc.action, tc.code, 0)
			if err := cs[tc.action](); err != nil {
				t.Errorf("after: %v", err)
			}
		})
	}
}

func TestPricingUnavailable(t *testing.T) {
	f := standard(t)
	call := calls(f)["pricing:GetProducts"]
	f.PricingUnavailable(true)
	err := call()
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusServiceUnavailable {
		t.Fatalf("Pricing down: %v, want a 503", err)
	}
	if n := count(f, "pricing:GetProducts", "ServiceUnavailableException"); n != 3 {
		t.Errorf("%d requests, want 3 (retried)", n)
	}
	if err := calls(f)["ec2:DescribeSubnets"](); err != nil {
		t.Errorf("EC2 while Pricing is down: %v", err)
	}
	f.PricingUnavailable(false)
	if err := call(); err != nil {
		t.Errorf("Pricing back: %v", err)
	}
}

func TestCalls(t *testing.T) {
	f := standard(t)
	for _, action := range []string{"ec2:DescribeSubnets", "iam:GetRole", "ssm:GetParameter", "sqs:ReceiveMessage", "pricing:GetProducts"} {
		if err := calls(f)[action](); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, c := range f.Invocations() {
		got = append(got, c.IAMAction())
	}
	want := "ec2:DescribeSubnets iam:GetRole ssm:GetParameter sqs:ReceiveMessage pricing:GetProducts"
	if strings.Join(got, " ") != want {
		t.Errorf("calls = %v, want %s", got, want)
	}
}

// TestConcurrentUse launches, describes, terminates and seeds from many
// goroutines at once; run with -race. One DescribeSubnets is throttled
// (the SDK retries it); the goroutines set throttles on an action none
// calls, for the map's sake: were they to throttle DescribeSubnets, one
// goroutine's three attempts could each meet another's new throttle, and
// fail — it did, on a loaded CI machine.
func TestConcurrentUse(t *testing.T) {
	f := standard(t)
	c := ec2Client(f)
	createTemplate(t, c, "lt")
	f.Throttle("DescribeSubnets", 1)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 8 {
		wg.Go(func() {
			out, err := c.CreateFleet(context.Background(), fleetInput("lt", "on-demand", 1, [2]string{"m5.large", subnetA}))
			if err != nil {
				errs <- err
				return
			}
			if _, err := c.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{}); err != nil {
				errs <- err
			}
			if _, err := c.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: out.Instances[0].InstanceIds}); err != nil {
				errs <- err
			}
			f.SetParameter("/p", "v")
			f.AddSubnet(Subnet{ID: "subnet-x", VPCID: StandardVPCID, Zone: "us-east-1a", CIDR: "10.0.200.0/24"})
			_ = f.Instances()
			_ = f.Calls()
			if i%2 == 0 {
				f.Throttle("DescribeImages", 1)
			}
			if _, err := c.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(f.Instances()); n != 8 {
		t.Errorf("%d instances, want 8", n)
	}
}

// TestInvocationsFoldRetries: a request retried by the SDK is one
// invocation, its last attempt, while Calls has every request.
func TestInvocationsFoldRetries(t *testing.T) {
	f := standard(t)
	f.Throttle("DescribeSubnets", 1)
	if err := calls(f)["ec2:DescribeSubnets"](); err != nil {
		t.Fatal(err)
	}
	if err := calls(f)["ec2:DescribeSubnets"](); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Calls()); n != 3 {
		t.Errorf("%d requests, want 3 (one throttled)", n)
	}
	inv := f.Invocations()
	if len(inv) != 2 {
		t.Fatalf("invocations %+v, want 2", inv)
	}
	if inv[0].Attempt != 2 || inv[0].Error != "" || inv[1].Attempt != 1 || inv[0].Invocation == inv[1].Invocation || inv[0].Invocation == "" {
		t.Errorf("invocations %+v, want the first answered on attempt 2, the second on attempt 1, with distinct IDs", inv)
	}
	if c := f.Calls()[0]; c.Error != "RequestLimitExceeded" || c.Attempt != 1 {
		t.Errorf("first request %+v, want attempt 1 throttled", c)
	}
}
