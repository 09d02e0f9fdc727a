package disruption

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
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

// emptyNodes are n launched, initialized, empty nodes of the pool, named
// n00, n01, …: the removal order takes them by name.
func emptyNodes(np *v1.NodePool, n int) []*Candidate {
	out := make([]*Candidate, n)
	for i := range out {
		out[i] = launched(node(fmt.Sprintf("n%02d", i), np, types()[1], v1.CapacityTypeOnDemand))
	}
	return out
}

func withBudgets(bs ...v1.Budget) func(*v1.NodePool) {
	return func(np *v1.NodePool) { np.Spec.Disruption.Budgets = bs }
}

// TestStaticScaleBudgets: by default a scale-down removes no more
// initialized nodes at once than the budgets that name no reasons allow
// now; the rest are held. With decisions karpenter the budgets are
// bypassed, as upstream's. Launches are never held.
func TestStaticScaleBudgets(t *testing.T) {
	inWindow := budget("0", "0 9 * * mon-fri", 8*time.Hour) // t0 is Mon 12:00: open
	outOfWindow := budget("0", "0 18 * * *", 2*time.Hour)   // closed at 12:00
	tests := []struct {
		name      string
		pool      *v1.NodePool
		nodes     func(np *v1.NodePool) []*Candidate
		decisions provisioning.Decisions
		// wantRemove and wantHeld are node names in removal order.
		wantRemove, wantHeld string
		wantLaunch           int
	}{
		{"nodes 2 of a surplus of 4: 2 now, 2 held", staticPool(1, withBudgets(budget("2", "", 0))), func(np *v1.NodePool) []*Candidate {
			return emptyNodes(np, 5)
		}, "", "n00,n01", "n02,n03", 0},
		{"20% of 10 nodes, 10 → 2: 2 now, 6 held", staticPool(2, withBudgets(budget("20%", "", 0))), func(np *v1.NodePool) []*Candidate {
			return emptyNodes(np, 10)
		}, provisioning.DecisionsJoiner, "n00,n01", "n02,n03,n04,n05,n06,n07", 0},
		{"a percentage rounds up: 10% of 3 nodes allows 1", staticPool(1, withBudgets(budget("10%", "", 0))), func(np *v1.NodePool) []*Candidate {
			return emptyNodes(np, 3)
		}, "", "n00", "n01", 0},
		{"the most restrictive reason-less budget binds", staticPool(0, withBudgets(budget("3", "", 0), budget("50%", "", 0), budget("1", "", 0))), func(np *v1.NodePool) []*Candidate {
			return emptyNodes(np, 3)
		}, "", "n00", "n01,n02", 0},
		{"a budget window that is open holds", staticPool(1, withBudgets(inWindow)), func(np *v1.NodePool) []*Candidate {
			return emptyNodes(np, 3)
		}, "", "", "n00,n01", 0},
		{"a budget window that is closed does not", staticPool(1, withBudgets(outOfWindow)), func(np *v1.NodePool) []*Candidate {
			return emptyNodes(np, 3)
		}, "", "n00,n01", "", 0},
		{"budgets that name reasons do not limit a scale-down", staticPool(1, withBudgets(
			budget("0", "", 0, v1.DisruptionReasonUnderutilized),
			budget("0", "", 0, v1.DisruptionReasonEmpty, v1.DisruptionReasonDrifted, v1.DisruptionReasonUnderutilized),
			budget("1", "", 0))), func(np *v1.NodePool) []*Candidate {
			return emptyNodes(np, 3)
		}, "", "n00", "n01", 0},
		{"nodes already disrupting take from the allowance", staticPool(1, withBudgets(budget("2", "", 0))), func(np *v1.NodePool) []*Candidate {
			ns := emptyNodes(np, 4)
			ns[3].Disrupting = true // drift replacing it: not removable, but it counts
			return ns
		}, "", "n00", "n01", 0},
		{"nodes being deleted and NotReady ones too", staticPool(1, withBudgets(budget("3", "", 0))), func(np *v1.NodePool) []*Candidate {
			ns := emptyNodes(np, 6)
			ns[4].Node.MarkedForDeletion, ns[4].Disrupting = true, true
			ns[3].NotReady = true
			return ns
		}, "", "n00", "n01,n02,n03", 0},
		{"nodes not initialized go regardless, and are not counted", staticPool(0, withBudgets(budget("50%", "", 0))), func(np *v1.NodePool) []*Candidate {
			ns := emptyNodes(np, 2)
			unlaunched := node("unlaunched", np, types()[1], v1.CapacityTypeOnDemand)
			unlaunched.Initialized = false
			booting := launched(node("n00-booting", np, types()[1], v1.CapacityTypeOnDemand))
			booting.Initialized = false
			return append(ns, unlaunched, booting) // 50% of 2 initialized: 1
		}, "", "unlaunched,n00,n00-booting", "n01", 0}, // by name: n00 < n00-booting < n01
		{"a budget that cannot be read holds everything", staticPool(1, withBudgets(budget("many", "", 0))), func(np *v1.NodePool) []*Candidate {
			return emptyNodes(np, 3)
		}, "", "", "n00,n01", 0},
		{"karpenter decisions bypass the budgets, as upstream", staticPool(1, withBudgets(budget("0", "", 0))), func(np *v1.NodePool) []*Candidate {
			return emptyNodes(np, 3)
		}, provisioning.DecisionsKarpenter, "n00,n01", "", 0},
		{"a scale-up is never held", staticPool(3, withBudgets(budget("0", "", 0))), func(np *v1.NodePool) []*Candidate {
			return emptyNodes(np, 1)
		}, "", "", "", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(tc.pool, tc.nodes(tc.pool)...)
			c.Policy.Decisions = tc.decisions
			got := StaticScale(c)
			if len(got) != 1 {
				t.Fatalf("want one scaling, got %+v", got)
			}
			s := got[0]
			if s.Launch != tc.wantLaunch || names(s.Remove) != tc.wantRemove || names(s.Held) != tc.wantHeld {
				t.Errorf("launch %d, remove %q, held %q; want %d, %q, %q", s.Launch, names(s.Remove), names(s.Held), tc.wantLaunch, tc.wantRemove, tc.wantHeld)
			}
			if (s.String() != "") != (tc.wantHeld != "") {
				t.Errorf("String() %q: want a reason exactly when nodes are held", s.String())
			}
		})
	}
}

// TestStaticScalingString: a held scale-down says how many nodes go now,
// how many wait, and which budget holds them, until when.
func TestStaticScalingString(t *testing.T) {
	tests := []struct {
		name string
		pool *v1.NodePool
		mark func(ns []*Candidate)
		want string
	}{
		{"a percentage", staticPool(2, withBudgets(budget("20%", "", 0))), nil,
			"static NodePool static: 8 surplus node(s), 2 removed now, 6 wait for the budget: budgets[0] (nodes 20%) allows 2 disruption(s) now"},
		{"nodes already disrupting", staticPool(2, withBudgets(budget("20%", "", 0))), func(ns []*Candidate) { ns[9].Disrupting = true },
			"static NodePool static: 7 surplus node(s), 1 removed now, 6 wait for the budget: budgets[0] (nodes 20%) allows 1 disruption(s) now, 1 of the pool's 10 initialized node(s) being disrupted already"},
		{"an open window", staticPool(2, withBudgets(budget("1", "0 9 * * mon-fri", 8*time.Hour))), nil,
			`static NodePool static: 8 surplus node(s), 1 removed now, 7 wait for the budget: budgets[0] (nodes 1, from "0 9 * * mon-fri" for 8h0m0s) allows 1 disruption(s) now, until Mon 17:00 UTC`},
		{"an unreadable budget", staticPool(2, withBudgets(budget("many", "", 0))), nil,
			`static NodePool static: 8 surplus node(s), 0 removed now, 8 wait for the budget: a budget that cannot be read allows none: nodes "many" is neither a count nor a percentage`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := emptyNodes(tc.pool, 10)
			if tc.mark != nil {
				tc.mark(ns)
			}
			got := StaticScale(cluster(tc.pool, ns...))
			if len(got) != 1 || got[0].String() != tc.want {
				t.Fatalf("got %v\nwant %q", got, tc.want)
			}
		})
	}
}

// TestStaticScaleDownStepsThroughPasses: 10 → 2 replicas under a 20%
// budget steps down pass by pass, each once the previous removals are
// gone (while they are being deleted they take the whole allowance); the
// percentage is of the nodes there are then. Karpenter's decisions remove
// the whole surplus in the first pass.
func TestStaticScaleDownStepsThroughPasses(t *testing.T) {
	for _, tc := range []struct {
		decisions provisioning.Decisions
		want      []int // nodes removed by each pass that removes some
	}{
		{provisioning.DecisionsJoiner, []int{2, 2, 2, 1, 1}},
		{provisioning.DecisionsKarpenter, []int{8}},
	} {
		t.Run(string(tc.decisions), func(t *testing.T) {
			np := staticPool(2, withBudgets(budget("20%", "", 0)))
			nodes := emptyNodes(np, 10)
			var got []int
			for pass := 0; pass < 20 && len(nodes) > 2; pass++ {
				c := cluster(np, nodes...)
				c.Policy.Decisions = tc.decisions
				ss := StaticScale(c)
				if len(ss) != 1 {
					t.Fatalf("pass %d over %d nodes: want one scaling, got %+v", pass, len(nodes), ss)
				}
				if len(ss[0].Remove) == 0 {
					t.Fatalf("pass %d over %d nodes: nothing removed, nothing being deleted (%s)", pass, len(nodes), ss[0])
				}
				got = append(got, len(ss[0].Remove))
				for _, cand := range ss[0].Remove { // the host deletes them
					cand.Node.MarkedForDeletion, cand.Disrupting = true, true
				}
				// While they are being deleted they take the allowance:
				// the rest of the surplus is held by default.
				surplus := len(nodes) - len(ss[0].Remove) - 2
				again := StaticScale(c)
				held := 0
				for _, s := range again {
					if len(s.Remove) > 0 {
						t.Fatalf("pass %d, the removals still being deleted: %s removed too", pass, names(s.Remove))
					}
					held += len(s.Held)
				}
				if tc.decisions == provisioning.DecisionsJoiner && held != surplus {
					t.Fatalf("pass %d, the removals still being deleted: %d held, want the other %d surplus", pass, held, surplus)
				}
				var left []*Candidate
				for _, cand := range nodes {
					if !cand.Node.MarkedForDeletion {
						left = append(left, cand)
					}
				}
				nodes = left
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || len(nodes) != 2 {
				t.Errorf("removed %v per pass, %d nodes left; want %v, 2 left", got, len(nodes), tc.want)
			}
		})
	}
}
