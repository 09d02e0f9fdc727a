package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws/instancetype"
)

// instanceTypeSource is what the provider needs of the instance types:
// instancetype.Provider's methods.
type instanceTypeSource interface {
	Refresh(ctx context.Context) error
	// List returns fresh copies offered in zones.
	List(ctx context.Context, zones []string) ([]*cloudprovider.InstanceType, error)
}

// newInstanceTypes is the source of instance types and prices: the EC2
// and Pricing APIs, the embedded catalog where they fail.
func newInstanceTypes(ec2c *ec2.Client, pricingCfg aws.Config, opts Options) instanceTypeSource {
	return instancetype.New(ec2c, pricing.NewFromConfig(pricingCfg), instancetype.Options{Region: opts.Config.Region, Clock: opts.Clock})
}
