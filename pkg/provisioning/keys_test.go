package provisioning

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// TestPlannerCachesByContent: a host that changes a node in place (an
// informer's cache does not, but nothing stops a host) is seen as it is
// now whenever the node's Version says it changed, or the node has none;
// the planner's caches are not keyed by pointer. The same holds for pods:
// a pod changed in place with a new resourceVersion is asked anew.
func TestPlannerCachesByContent(t *testing.T) {
	pl := NewPlanner([]*v1.NodePool{pool("p")}, map[string][]*cloudprovider.InstanceType{"p": standardTypes()}, nil)
	for _, version := range []string{"", "v1"} {
		full := pod("3500m", "1Gi")
		full.ResourceVersion = "1"
		node := readyNode("n", "zone-a", 4, full)
		node.Version = version
		node.NodePool = "p"
		pending := pod("1", "1Gi")
		res := pl.Solve(context.Background(), &Snapshot{Nodes: []*Node{node}, Pods: []*corev1.Pod{pending}})
		if len(res.NewNodeClaims) != 1 {
			t.Fatalf("version %q: the full node cannot take 1 core: %d claims", version, len(res.NewNodeClaims))
		}
		// The pod on the node shrinks in place, with a new resourceVersion,
		// and the node says it changed (or has no Version at all).
		full.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("500m")
		full.ResourceVersion = "2"
		if version != "" {
			node.Version = "v2"
		}
		res = pl.Solve(context.Background(), &Snapshot{Nodes: []*Node{node}, Pods: []*corev1.Pod{pending}})
		if len(res.NewNodeClaims) != 0 || len(res.ExistingNodes) != 1 {
			t.Errorf("version %q: after the change the node has room: %d claims, %d existing", version, len(res.NewNodeClaims), len(res.ExistingNodes))
		}
	}
}

// TestIgnorePreferences: a pod that prefers a zone gets a claim pinned to
// it when preferences are respected, and one free to take any zone under
// PreferencePolicy Ignore; either way the plan holds the pod itself.
func TestIgnorePreferences(t *testing.T) {
	want := zones[1]
	prefers := pod("1", "1Gi", affinity(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
		Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{want}}}}}}}}))
	for _, ignore := range []bool{false, true} {
		res := solve(t, []*v1.NodePool{pool("p")}, standardTypes(), []*corev1.Pod{prefers}, func(s *Snapshot) { s.IgnorePreferences = ignore })
		requireAllPlaced(t, res)
		if got := res.NewNodeClaims[0].Pods[0]; got != prefers {
			t.Errorf("ignore %v: the plan holds a copy of the pod", ignore)
		}
		zone := res.NewNodeClaims[0].Requirements.Get(v1.LabelZone)
		if pinned := zone.Len() == 1 && zone.Has(want); pinned == ignore {
			t.Errorf("ignore %v: claim zones %v", ignore, zone.Values())
		}
	}
	if p := pod("1", "1Gi"); WithoutPreferences(p) != p {
		t.Error("a pod without preferences is itself")
	}
}
