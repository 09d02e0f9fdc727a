package decide

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

func config(t *testing.T) ([]*v1.NodePool, map[string][]*cloudprovider.InstanceType) {
	t.Helper()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	its, _, err := c.InstanceTypes(catalog.Options{Region: "us-east-1", Zones: []string{"us-east-1a"}})
	if err != nil {
		t.Fatal(err)
	}
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m6i.large", "m6i.xlarge"}},
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}}}
	return []*v1.NodePool{np}, map[string][]*cloudprovider.InstanceType{"general": its}
}

// TestDecider: every decision is under the Decider's policy; the Planner
// is kept while the configuration version stays and built anew when it
// changes; disruption clusters share one Memo.
func TestDecider(t *testing.T) {
	pools, its := config(t)
	d := New(provisioning.Policy{Decisions: provisioning.DecisionsKarpenter, MinValues: provisioning.MinValuesBestEffort}, Options{})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	snap := &provisioning.Snapshot{NodePools: pools, InstanceTypes: its, Pods: []*corev1.Pod{pod}}
	res := d.Provision(context.Background(), snap, 1)
	if snap.Policy != d.Policy() || len(res.NewNodeClaims) != 1 {
		t.Fatalf("snapshot policy %+v, %d claims; want the Decider's policy and one claim", snap.Policy, len(res.NewNodeClaims))
	}
	first := d.Prepare(&disruption.Snapshot{NodePools: pools, InstanceTypes: its}, 1)
	again := d.Prepare(&disruption.Snapshot{NodePools: pools, InstanceTypes: its}, 1)
	changed := d.Prepare(&disruption.Snapshot{NodePools: pools, InstanceTypes: its}, 2)
	if first.Planner == nil || first.Planner != again.Planner {
		t.Error("the same configuration version got another Planner")
	}
	if changed.Planner == first.Planner {
		t.Error("a new configuration version kept the old Planner")
	}
	if first.Memo == nil || first.Memo != changed.Memo || first.Policy != d.Policy() || changed.Policy != d.Policy() {
		t.Errorf("prepared clusters: memo %p/%p, policy %+v/%+v; want one Memo and the Decider's policy", first.Memo, changed.Memo, first.Policy, changed.Policy)
	}
}

// TestProvisionPinned: a pass whose pins strand a pod (each claim's
// leftover too small for it) but whose repack fits every pod on the
// nodes there are makes no NodeClaim; one whose pins fit is not repacked;
// with no repacked snapshot the pinned plan stands.
func TestProvisionPinned(t *testing.T) {
	pools, its := config(t)
	d := New(provisioning.Policy{}, Options{})
	pod := func(name, cpu string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
	}
	node := func(name string, pods ...*corev1.Pod) *provisioning.Node {
		return &provisioning.Node{Name: name, NodePool: "general", Pods: pods,
			Labels: map[string]string{v1.LabelNodePool: "general", v1.LabelInstanceType: "m6i.xlarge", v1.LabelZone: "us-east-1a",
				v1.LabelCapacityType: v1.CapacityTypeOnDemand, v1.LabelHostname: name},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}}
	}
	a, b, c, dd, e := pod("a", "1"), pod("b", "2"), pod("c", "2"), pod("d", "2"), pod("e", "1")
	snapOf := func(pending []*corev1.Pod, nodes ...*provisioning.Node) *provisioning.Snapshot {
		return &provisioning.Snapshot{NodePools: pools, InstanceTypes: its, Pods: pending, Nodes: nodes}
	}
	// c is bound on n1; a is pinned there, d and e on n2: 1 cpu left on
	// each, and b needs 2.
	pinned := snapOf([]*corev1.Pod{b}, node("n1", c, a), node("n2", dd, e))
	repacked := snapOf([]*corev1.Pod{a, b, dd, e}, node("n1", c), node("n2"))
	if res := d.ProvisionPinned(context.Background(), pinned, nil, 1); len(res.NewNodeClaims) != 1 {
		t.Fatalf("pins alone: %d new NodeClaims, want 1 for b", len(res.NewNodeClaims))
	}
	res := d.ProvisionPinned(context.Background(), pinned, repacked, 1)
	if len(res.NewNodeClaims) != 0 || len(res.Unschedulable) != 0 {
		t.Fatalf("with the repack: %d new NodeClaims, %d unplaced; want the repack's none", len(res.NewNodeClaims), len(res.Unschedulable))
	}
	placed := 0
	for _, en := range res.ExistingNodes {
		placed += len(en.Pods)
	}
	if placed != 4 {
		t.Errorf("the repack placed %d pods on n1 and n2, want a, b, d and e", placed)
	}

	// Pins that fit: the pinned plan, no new claim, b on n2's room.
	fits := snapOf([]*corev1.Pod{b}, node("n1", c, a), node("n2", e))
	if res := d.ProvisionPinned(context.Background(), fits, repacked, 1); len(res.NewNodeClaims) != 0 || len(res.ExistingNodes) != 1 || res.ExistingNodes[0].Node.Name != "n2" {
		t.Errorf("pins that fit: %d new NodeClaims, placements %d; want b on n2", len(res.NewNodeClaims), len(res.ExistingNodes))
	}
}
