package provisioning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// withClaim makes the pod ask for a device through a ResourceClaim made
// from template tpl, as a pod of a Deployment does.
func withClaim(tpl string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tpl}}
		p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	}
}

// TestDRAIgnoredByDefault: under the default Policy (upstream's
// --ignore-dra-requests=true) a pod that asks for devices gets no
// NodeClaim and no place on a node with room, with the typed reason for
// every NodePool — while its twin without the claim, alike in every other
// way, is placed: the claim is part of what makes pods alike.
func TestDRAIgnoredByDefault(t *testing.T) {
	room := &Node{Name: "n1", NodePool: "p", Labels: map[string]string{v1.LabelZone: "zone-a", v1.LabelHostname: "n1"},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")}}
	plain, asking := pod("1", "1Gi"), pod("1", "1Gi", withClaim("one-gpu"))
	lone := pod("1", "1Gi", withClaim("one-gpu"))
	for _, tc := range []struct {
		name  string
		nodes []*Node
	}{{"new node", nil}, {"existing node with room", []*Node{room}}} {
		t.Run(tc.name, func(t *testing.T) {
			res := solve(t, []*v1.NodePool{pool("p"), pool("q")}, standardTypes(), []*corev1.Pod{plain, asking, lone}, func(s *Snapshot) { s.Nodes = tc.nodes })
			if len(res.Unschedulable) != 2 {
				t.Fatalf("%d pods unschedulable, want the two that ask for devices: %v", len(res.Unschedulable), res.Unschedulable)
			}
			for _, pe := range res.Unschedulable {
				if pe.Pod == plain {
					t.Fatal("the pod without a claim was not placed")
				}
				if len(pe.CodeByNodePool) != 2 || pe.CodeByNodePool["p"] != ReasonDRA || pe.CodeByNodePool["q"] != ReasonDRA || pe.Deferred() {
					t.Errorf("pod %s: codes %v, want %s for both NodePools, not deferred", pe.Pod.Name, pe.CodeByNodePool, ReasonDRA)
				}
			}
			placed := 0
			for _, nc := range res.NewNodeClaims {
				placed += len(nc.Pods)
			}
			for _, e := range res.ExistingNodes {
				placed += len(e.Pods)
			}
			if placed != 1 {
				t.Errorf("%d pods placed, want the one without a claim", placed)
			}
		})
	}
}
