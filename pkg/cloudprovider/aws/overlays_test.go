package aws

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/overlay"
)

// TestNodeOverlayPrioritizesTheFleet: with m5.large priced below the
// others by an overlay, the claim's fleet is prioritized in the overlaid
// order (m5.large first) and launches m5.large, where EC2's lowest price
// would launch m6g.large; without a price overlay it stays lowest-price.
func TestNodeOverlayPrioritizesTheFleet(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity string
		strategy string
	}{
		{"on-demand", v1.CapacityTypeOnDemand, "prioritized"},
		{"spot", v1.CapacityTypeSpot, "capacity-optimized-prioritized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvWith(t, envOptions{liveTypes: true}, seedNodeClass(t))
			np := nodePool("default")
			its, err := e.p.GetInstanceTypes(e.ctx, np)
			if err != nil {
				t.Fatal(err)
			}
			cheap := "0.0001"
			o := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "m5-deal"}, Spec: v1alpha1.NodeOverlaySpec{Price: &cheap,
				Requirements: []v1alpha1.Requirement{{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}}}}
			e.p.SetNodeOverlays(overlay.Apply([]*v1.NodePool{np}, map[string][]*cloudprovider.InstanceType{"general": its}, []*v1alpha1.NodeOverlay{o}, overlay.HighestWeight))
			ct := req(v1.LabelCapacityType, corev1.NodeSelectorOpIn, tc.capacity)
			if _, err := e.p.Create(e.ctx, claim("general-ovl", "default", threeTypes, ct)); err != nil {
				t.Fatal(err)
			}
			fl := e.aws.Fleets()[0]
			if fl.AllocationStrategy != tc.strategy {
				t.Errorf("allocation strategy %s, want %s", fl.AllocationStrategy, tc.strategy)
			}
			for _, ov := range fl.Overrides {
				if ov.Priority == nil {
					t.Fatalf("override %s without a priority", ov.InstanceType)
				}
				if (ov.InstanceType == "m5.large") != (*ov.Priority == 0) {
					t.Errorf("override %s priority %v: m5.large, the overlay's cheapest, goes first", ov.InstanceType, *ov.Priority)
				}
			}
			if in := e.aws.Instances()[0]; in.InstanceType != "m5.large" {
				t.Errorf("launched %s, want m5.large", in.InstanceType)
			}
		})
	}
	// A capacity-only overlay leaves EC2's lowest price in charge.
	e := newEnvWith(t, envOptions{liveTypes: true}, seedNodeClass(t))
	np := nodePool("default")
	its, err := e.p.GetInstanceTypes(e.ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	o := &v1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "fuse"}, Spec: v1alpha1.NodeOverlaySpec{
		Capacity: corev1.ResourceList{"smarter-devices/fuse": *resourceQuantity("4")}}}
	e.p.SetNodeOverlays(overlay.Apply([]*v1.NodePool{np}, map[string][]*cloudprovider.InstanceType{"general": its}, []*v1alpha1.NodeOverlay{o}, overlay.HighestWeight))
	if _, err := e.p.Create(e.ctx, claim("general-cap", "default", threeTypes, onDemand)); err != nil {
		t.Fatal(err)
	}
	if fl := e.aws.Fleets()[0]; fl.AllocationStrategy != "lowest-price" || e.aws.Instances()[0].InstanceType != "m6g.large" {
		t.Errorf("capacity overlay only: %s launching %s, want lowest-price m6g.large", fl.AllocationStrategy, e.aws.Instances()[0].InstanceType)
	}
}

func resourceQuantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}
