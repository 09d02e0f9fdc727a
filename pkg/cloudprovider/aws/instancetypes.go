package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

// instanceTypeSource is what the provider needs of the instance types:
// instancetype.Provider's methods.
type instanceTypeSource interface {
	Refresh(ctx context.Context) error
	// List returns fresh copies offered in zones.
	List(ctx context.Context, zones []string) ([]*cloudprovider.InstanceType, error)
}

// newInstanceTypes is the source of instance types and prices.
// TODO(aws-types): instancetype.New(ec2c, pricing.NewFromConfig(pricingCfg), …) once it lands.
func newInstanceTypes(_ *ec2.Client, _ aws.Config, opts Options) instanceTypeSource {
	return &catalogTypes{region: opts.Config.Region}
}

// catalogTypes are the embedded catalog's instance types (a stand-in).
type catalogTypes struct{ region string }

func (c *catalogTypes) Refresh(context.Context) error { return nil }

func (c *catalogTypes) List(_ context.Context, zones []string) ([]*cloudprovider.InstanceType, error) {
	cat, err := catalog.Default()
	if err != nil {
		return nil, err
	}
	its, _, err := cat.InstanceTypes(catalog.Options{Region: c.region, Zones: zones})
	return its, err
}

// fixedMaxPods is spec.kubelet.maxPods when it is a number.
func fixedMaxPods(k *awsv1.KubeletConfiguration) *int64 {
	if k == nil || k.MaxPods == nil || k.MaxPods.Type != intstr.Int {
		return nil
	}
	n := int64(k.MaxPods.IntVal)
	return &n
}

func resourcePods(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }
