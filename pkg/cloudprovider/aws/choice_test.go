package aws

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// typ is an instance type offered in us-east-1a at the prices given.
func typ(name, size string, onDemand, spot float64, extra corev1.ResourceList) *cloudprovider.InstanceType {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	for k, v := range extra {
		capacity[k] = v
	}
	var offerings cloudprovider.Offerings
	if onDemand > 0 {
		offerings = append(offerings, &cloudprovider.Offering{Zone: "us-east-1a", CapacityType: v1.CapacityTypeOnDemand, Price: onDemand, Available: true})
	}
	if spot > 0 {
		offerings = append(offerings, &cloudprovider.Offering{Zone: "us-east-1a", CapacityType: v1.CapacityTypeSpot, Price: spot, Available: true})
	}
	return &cloudprovider.InstanceType{Name: name, Capacity: capacity, Offerings: offerings,
		Requirements: scheduling.FromLabels(map[string]string{v1.LabelInstanceType: name, awsv1.LabelInstanceSize: size})}
}

func names(its []*cloudprovider.InstanceType) []string {
	var out []string
	for _, it := range its {
		out = append(out, it.Name)
	}
	return out
}

func capacityReqs(cts ...string) scheduling.Requirements {
	return scheduling.NewRequirements(scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, cts...))
}

func TestChooseCapacityType(t *testing.T) {
	noSpot := typ("a", "large", 0.1, 0, nil)
	withSpot := typ("b", "large", 0.1, 0.03, nil)
	for _, tt := range []struct {
		name string
		its  []*cloudprovider.InstanceType
		reqs scheduling.Requirements
		want string
	}{
		{"spot allowed and offered", []*cloudprovider.InstanceType{noSpot, withSpot}, capacityReqs("spot", "on-demand"), "spot"},
		{"spot allowed, not offered", []*cloudprovider.InstanceType{noSpot}, capacityReqs("spot", "on-demand"), "on-demand"},
		{"spot not allowed", []*cloudprovider.InstanceType{withSpot}, capacityReqs("on-demand"), "on-demand"},
	} {
		if got := chooseCapacityType(tt.its, tt.reqs); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

// TestWithoutDearSpot: spot types dearer than the cheapest on-demand one
// are left out of a launch that could fall back to on-demand.
func TestWithoutDearSpot(t *testing.T) {
	its := []*cloudprovider.InstanceType{typ("small", "large", 0.10, 0.04, nil), typ("big", "4xlarge", 0.40, 0.12, nil), typ("mid", "xlarge", 0.20, 0.09, nil)}
	if got := names(withoutDearSpot(its, capacityReqs("spot"))); !slices.Equal(got, []string{"small", "big", "mid"}) {
		t.Errorf("spot only (no on-demand to fall back to): %v, want all", got)
	}
	// On-demand's cheapest is 0.10: big's spot 0.12 is dearer.
	if got := names(withoutDearSpot(its, capacityReqs("spot", "on-demand"))); !slices.Equal(got, []string{"small", "mid"}) {
		t.Errorf("spot or on-demand: %v, want small and mid", got)
	}
}

func TestWithoutExotic(t *testing.T) {
	gpu := corev1.ResourceList{awsv1.ResourceNVIDIAGPU: resource.MustParse("1")}
	plain, metal, accelerated := typ("m5.large", "large", 0.1, 0, nil), typ("m5.metal", "metal", 4, 0, nil), typ("g5.xlarge", "xlarge", 1, 0, gpu)
	if got := names(withoutExotic([]*cloudprovider.InstanceType{accelerated, plain, metal})); !slices.Equal(got, []string{"m5.large"}) {
		t.Errorf("with a plain type: %v, want only it", got)
	}
	if got := names(withoutExotic([]*cloudprovider.InstanceType{accelerated, metal})); !slices.Equal(got, []string{"g5.xlarge", "m5.metal"}) {
		t.Errorf("only exotic types: %v, want them all", got)
	}
}

func TestFleetError(t *testing.T) {
	fe := func(code string) ec2types.CreateFleetError {
		return ec2types.CreateFleetError{ErrorCode: aws.String(code), ErrorMessage: aws.String("no")}
	}
	for _, tt := range []struct {
		name string
		errs []ec2types.CreateFleetError
		ice  bool
	}{
		{"all capacity", []ec2types.CreateFleetError{fe("InsufficientInstanceCapacity"), fe("MaxSpotInstanceCountExceeded"), fe("VcpuLimitExceeded")}, true},
		{"one of another kind", []ec2types.CreateFleetError{fe("InsufficientInstanceCapacity"), fe("InvalidParameterValue")}, false},
		{"none", nil, false},
	} {
		err := fleetError(tt.errs)
		if err == nil || cloudprovider.IsInsufficientCapacityError(err) != tt.ice {
			t.Errorf("%s: %v, want insufficient capacity %v", tt.name, err, tt.ice)
		}
	}
}
