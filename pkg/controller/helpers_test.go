package controller

import (
	"context"
	"errors"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// stubCloud is a CloudProvider with none of the optional capabilities:
// its instance types are types, or err for the pools in errs; it counts
// GetInstanceTypes calls.
type stubCloud struct {
	mu    sync.Mutex
	types []*cloudprovider.InstanceType
	errs  map[string]error
	asked int
}

func (s *stubCloud) Create(context.Context, *v1.NodeClaim) (*v1.NodeClaim, error) {
	return nil, errors.New("stub")
}
func (s *stubCloud) Delete(context.Context, *v1.NodeClaim) error { return errors.New("stub") }
func (s *stubCloud) Get(context.Context, string) (*v1.NodeClaim, error) {
	return nil, errors.New("stub")
}
func (s *stubCloud) List(context.Context) ([]*v1.NodeClaim, error) { return nil, nil }
func (s *stubCloud) GetInstanceTypes(_ context.Context, np *v1.NodePool) ([]*cloudprovider.InstanceType, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked++
	if err := s.errs[np.Name]; err != nil {
		return nil, err
	}
	return s.types, nil
}
func (s *stubCloud) IsDrifted(context.Context, *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	return "", nil
}
func (s *stubCloud) RepairPolicies() []cloudprovider.RepairPolicy { return nil }
func (s *stubCloud) Name() string                                 { return "stub" }

func (s *stubCloud) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked
}

// scheme knows the kinds a fake client here holds.
func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme, v1alpha1.AddToScheme, awsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// instanceType is a 4-core on-demand type in zone-a at price.
func instanceType(name string, price float64) *cloudprovider.InstanceType {
	return &cloudprovider.InstanceType{Name: name,
		Requirements: scheduling.NewRequirements(
			scheduling.NewRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, name),
			scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, "zone-a"),
			scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand)),
		Offerings: cloudprovider.Offerings{{Zone: "zone-a", CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true}},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
			corev1.ResourcePods: resource.MustParse("110")}}
}
