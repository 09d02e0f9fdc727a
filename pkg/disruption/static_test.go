package disruption

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

func staticPool(replicas int64, mutate ...func(*v1.NodePool)) *v1.NodePool {
	return nodePool("static", append([]func(*v1.NodePool){func(np *v1.NodePool) { np.Spec.Replicas = &replicas }}, mutate...)...)
}

// launched is a node whose claim has an instance.
func launched(cand *Candidate) *Candidate {
	cand.NodeClaim.Status.ProviderID = "sim://" + cand.Node.Name
	return cand
}

// TestStaticScale: a static NodePool is kept at its replicas — launches
// up to limits.nodes, removals in upstream's order.
func TestStaticScale(t *testing.T) {
	medium := types()[1]
	tests := []struct {
		name       string
		pool       *v1.NodePool
		nodes      func(np *v1.NodePool) []*Candidate
		wantLaunch int
		wantRemove string
	}{
		{"one of three: two more", staticPool(3), func(np *v1.NodePool) []*Candidate {
			return []*Candidate{launched(node("a", np, medium, v1.CapacityTypeOnDemand))}
		}, 2, ""},
		{"limits.nodes caps the launches", staticPool(3, func(np *v1.NodePool) { np.Spec.Limits = v1.Limits{"nodes": resource.MustParse("2")} }), func(np *v1.NodePool) []*Candidate {
			return []*Candidate{launched(node("a", np, medium, v1.CapacityTypeOnDemand))}
		}, 1, ""},
		{"a node being deleted does not count, but still counts for limits", staticPool(2, func(np *v1.NodePool) { np.Spec.Limits = v1.Limits{"nodes": resource.MustParse("3")} }), func(np *v1.NodePool) []*Candidate {
			gone := launched(node("gone", np, medium, v1.CapacityTypeOnDemand))
			gone.Node.MarkedForDeletion = true
			return []*Candidate{launched(node("a", np, medium, v1.CapacityTypeOnDemand)), gone}
		}, 1, ""},
		{"drift in flight, the old node disrupted and its replacement: nothing", staticPool(1), func(np *v1.NodePool) []*Candidate {
			old := launched(node("old", np, medium, v1.CapacityTypeOnDemand, podOn("1")))
			old.Disrupting = true
			return []*Candidate{old, node("replacement", np, medium, v1.CapacityTypeOnDemand)}
		}, 0, ""},
		{"at its replicas: nothing", staticPool(1), func(np *v1.NodePool) []*Candidate {
			return []*Candidate{launched(node("a", np, medium, v1.CapacityTypeOnDemand, podOn("1")))}
		}, 0, ""},
		{"scale down: unlaunched, then empty, then the least busy", staticPool(1), func(np *v1.NodePool) []*Candidate {
			return []*Candidate{
				launched(node("busy", np, medium, v1.CapacityTypeOnDemand, podOn("1"), podOn("1"))),
				launched(node("one-pod", np, medium, v1.CapacityTypeOnDemand, podOn("1"))),
				launched(node("daemons-only", np, medium, v1.CapacityTypeOnDemand, daemonPod())),
				node("unlaunched", np, medium, v1.CapacityTypeOnDemand),
			}
		}, 0, "unlaunched,daemons-only,one-pod"},
		{"scale down: a do-not-disrupt pod's node goes last", staticPool(1), func(np *v1.NodePool) []*Candidate {
			return []*Candidate{
				launched(node("protected", np, medium, v1.CapacityTypeOnDemand, podOn("1", func(p *corev1.Pod) {
					p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
				}))),
				launched(node("busy", np, medium, v1.CapacityTypeOnDemand, podOn("1"), podOn("1"), podOn("1"))),
			}
		}, 0, "busy"},
		{"scale down: a higher deprovisioning priority first, then the cheapest to disrupt", staticPool(1), func(np *v1.NodePool) []*Candidate {
			prio := launched(node("prioritized", np, medium, v1.CapacityTypeOnDemand, podOn("1"), podOn("1"), podOn("1")))
			prio.NodeClaim.Annotations[v1.AnnotationDeprovisioningPriority] = "10"
			bad := launched(node("not-a-number", np, medium, v1.CapacityTypeOnDemand, podOn("1"), podOn("1")))
			bad.NodeClaim.Annotations[v1.AnnotationDeprovisioningPriority] = "high"
			return []*Candidate{launched(node("cheap", np, medium, v1.CapacityTypeOnDemand, podOn("1"))), bad, prio}
		}, 0, "prioritized,cheap"},
		{"scale down bypasses the node budgets, as upstream's", staticPool(1, func(np *v1.NodePool) {
			np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}}
		}), func(np *v1.NodePool) []*Candidate {
			return []*Candidate{launched(node("a", np, medium, v1.CapacityTypeOnDemand, podOn("1"))), launched(node("b", np, medium, v1.CapacityTypeOnDemand))}
		}, 0, "b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := StaticScale(cluster(tc.pool, tc.nodes(tc.pool)...))
			if tc.wantLaunch == 0 && tc.wantRemove == "" {
				if len(got) != 0 {
					t.Fatalf("want nothing, got %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one scaling, got %+v", got)
			}
			s := got[0]
			if s.Launch != tc.wantLaunch || names(s.Remove) != tc.wantRemove {
				t.Errorf("launch %d, remove %q; want %d, %q", s.Launch, names(s.Remove), tc.wantLaunch, tc.wantRemove)
			}
			if s.Launch > 0 && (s.Plan == nil || s.Plan.NodePool != tc.pool || len(s.Plan.Pods) != 0 || s.Plan.InstanceTypes[0].Name != "small") {
				t.Errorf("plan %+v: the pool's, no pods, the cheapest type first", s.Plan)
			}
		})
	}
	if got := StaticScale(cluster(nodePool("dynamic"))); len(got) != 0 {
		t.Errorf("a NodePool without replicas is not scaled: %+v", got)
	}
}

// TestStaticPoolNotConsolidated: emptiness and consolidation leave a
// static NodePool's nodes alone; drift still replaces them.
func TestStaticPoolNotConsolidated(t *testing.T) {
	np := staticPool(2)
	medium, large := types()[1], types()[2]
	c := cluster(np, launched(node("empty", np, medium, v1.CapacityTypeOnDemand)), launched(node("idle-large", np, large, v1.CapacityTypeOnDemand, podOn("500m"))))
	if d := Compute(context.Background(), c, Options{}); len(d.Commands) != 0 {
		t.Fatalf("a static pool's empty and underused nodes: want nothing, got %s", d.Commands[0])
	}
	drifted := launched(node("drifted", np, medium, v1.CapacityTypeOnDemand, podOn("1")))
	drifted.NodeClaim.Annotations[v1.AnnotationNodePoolHash] = "old"
	cmd := only(t, Compute(context.Background(), cluster(np, drifted), Options{}))
	if cmd.Method != MethodDrift || len(cmd.Replacements) != 1 {
		t.Fatalf("drift replaces a static pool's node: got %s", cmd)
	}
}
