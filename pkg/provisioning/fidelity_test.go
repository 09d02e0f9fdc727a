package provisioning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// TestSpreadDomainsComeFromOfferings: a value a NodePool lists that no
// instance-type offering provides is no topology domain, so a spread does
// not send pods there (where no node can take them) or count it as the
// empty domain that holds the others back.
func TestSpreadDomainsComeFromOfferings(t *testing.T) {
	web := func(key string) func() *corev1.Pod {
		return func() *corev1.Pod { return pod("1", "1Gi", label("app", "web"), spread(key, 1)) }
	}
	onDemandOnly := func(its []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
		for _, t := range its {
			var keep cloudprovider.Offerings
			for _, o := range t.Offerings {
				if o.CapacityType == v1.CapacityTypeOnDemand {
					keep = append(keep, o)
				}
			}
			t.Offerings = keep
		}
		return its
	}
	zoneCUnavailable := func(its []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
		for _, t := range its {
			for _, o := range t.Offerings {
				o.Available = o.Available && o.Zone != "zone-c"
			}
		}
		return its
	}
	tests := []struct {
		name      string
		pool      *v1.NodePool
		its       []*cloudprovider.InstanceType
		pods      []*corev1.Pod
		wantZones string
		claims    int
	}{
		{"a zone the pool lists that no offering has",
			pool("p", requirement(v1.LabelZone, corev1.NodeSelectorOpIn, "zone-a", "zone-b", "zone-d")),
			standardTypes(), times(4, web(v1.LabelZone)), "zone-a=2 zone-b=2", 2},
		{"zones the pool leaves out are no domains either",
			pool("p", requirement(v1.LabelZone, corev1.NodeSelectorOpIn, "zone-a")),
			standardTypes(), times(4, web(v1.LabelZone)), "zone-a=4", 1},
		{"a zone whose offerings are all unavailable",
			pool("p"), zoneCUnavailable(standardTypes()), times(4, web(v1.LabelZone)), "zone-a=2 zone-b=2", 2},
		{"capacity type reserved without a reservation",
			pool("p", requirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeReserved, v1.CapacityTypeOnDemand)),
			onDemandOnly(standardTypes()), times(3, web(v1.LabelCapacityType)), "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := solve(t, []*v1.NodePool{tc.pool}, tc.its, tc.pods)
			requireAllPlaced(t, res)
			if tc.wantZones != "" {
				if got := zoneCounts(res); got != tc.wantZones {
					t.Errorf("zones %s, want %s", got, tc.wantZones)
				}
			}
			if len(res.NewNodeClaims) != tc.claims {
				t.Errorf("%d claims, want %d", len(res.NewNodeClaims), tc.claims)
			}
		})
	}
}
