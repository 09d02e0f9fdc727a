package aws

import (
	"maps"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws/fake"
)

func TestUnavailableOfferingsExpire(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC))
	u := newUnavailableOfferings(clk)
	u.MarkUnavailable("m5.large", "us-east-1a", "spot")
	for _, tt := range []struct {
		after       time.Duration
		it, z, ct   string
		unavailable bool
	}{
		{0, "m5.large", "us-east-1a", "spot", true},
		{0, "m5.large", "us-east-1a", "on-demand", false},
		{0, "m5.large", "us-east-1b", "spot", false},
		{UnavailableFor - time.Nanosecond, "m5.large", "us-east-1a", "spot", true},
		{UnavailableFor, "m5.large", "us-east-1a", "spot", false},
	} {
		c := clocktesting.NewFakePassiveClock(clk.Now())
		c.SetTime(clk.Now().Add(tt.after))
		u.clock = c
		if got := u.IsUnavailable(tt.it, tt.z, tt.ct); got != tt.unavailable {
			t.Errorf("after %v: %s %s %s unavailable = %v, want %v", tt.after, tt.it, tt.z, tt.ct, got, tt.unavailable)
		}
	}
}

// TestUnavailableOfferingsVersion: the version moves when an offering is
// marked and when its mark expires (seen without anyone asking about that
// offering), and stays while nothing changes — what the controller asks
// the instance types again by.
func TestUnavailableOfferingsVersion(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC))
	u := newUnavailableOfferings(clk)
	v0 := u.Version()
	if u.Version() != v0 {
		t.Fatal("the version moved with nothing changed")
	}
	u.MarkUnavailable("m5.large", "us-east-1a", "spot")
	v1 := u.Version()
	if v1 == v0 {
		t.Error("marking an offering left the version as it was")
	}
	clk.SetTime(clk.Now().Add(UnavailableFor - time.Second))
	if u.Version() != v1 {
		t.Error("the version moved before the mark expired")
	}
	clk.SetTime(clk.Now().Add(time.Second))
	if u.Version() == v1 {
		t.Error("the mark expired and the version did not move")
	}
}

// TestGetInstanceTypes: the NodePool's NodeClass decides the zones (its
// subnets') and the architectures (its AMIs'); spec.kubelet.maxPods the
// pods.
func TestGetInstanceTypes(t *testing.T) {
	fifty := intstr.FromInt32(50)
	tests := []struct {
		name      string
		change    func(*awsv1.EC2NodeClass)
		wantZones []string
		wantArchs []string
		wantPods  int64 // of m5.large; 0: the type's own
	}{
		{"the seed's", func(*awsv1.EC2NodeClass) {}, []string{"us-east-1a", "us-east-1b", "us-east-1c"}, []string{"amd64", "arm64"}, 0},
		{"one subnet", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: fake.StandardSubnetPrefix + "b"}}
		}, []string{"us-east-1b"}, []string{"amd64", "arm64"}, 0},
		{"arm64 images only", func(nc *awsv1.EC2NodeClass) {
			family := awsv1.AMIFamilyAL2023
			nc.Spec.AMIFamily = &family
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Name: "amazon-eks-node-al2023-arm64-standard-1.37-*"}}
		}, []string{"us-east-1a", "us-east-1b", "us-east-1c"}, []string{"arm64"}, 0},
		{"maxPods 50", func(nc *awsv1.EC2NodeClass) {
			nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: &fifty}
		}, []string{"us-east-1a", "us-east-1b", "us-east-1c"}, []string{"amd64", "arm64"}, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nodeClassWith(t, tt.change))
			its, err := e.p.GetInstanceTypes(e.ctx, nodePool("default"))
			if err != nil {
				t.Fatal(err)
			}
			zones, archs := map[string]bool{}, map[string]bool{}
			for _, it := range its {
				archs[it.Requirements.Get(v1.LabelArch).Values()[0]] = true
				for _, o := range it.Offerings {
					zones[o.Zone] = true
				}
				if it.Name == "m5.large" && tt.wantPods != 0 && it.Capacity.Pods().Value() != tt.wantPods {
					t.Errorf("m5.large pods %v, want %d", it.Capacity.Pods(), tt.wantPods)
				}
			}
			if got := slices.Sorted(maps.Keys(zones)); !slices.Equal(got, tt.wantZones) {
				t.Errorf("zones %v, want %v", got, tt.wantZones)
			}
			if got := slices.Sorted(maps.Keys(archs)); !slices.Equal(got, tt.wantArchs) {
				t.Errorf("architectures %v, want %v", got, tt.wantArchs)
			}
		})
	}
	t.Run("a NodeClass that does not exist", func(t *testing.T) {
		e := newEnv(t)
		if _, err := e.p.GetInstanceTypes(e.ctx, nodePool("missing")); err == nil {
			t.Error("no error for a missing NodeClass")
		}
	})
}
