package decide

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
