package provisioning

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// TestConcurrentSolveIsSequential: a Planner that plans a batch's two
// ways at once returns the plan one that plans them one after the other
// does, to the last reason, on a fresh planner and on one whose caches the
// batches before filled.
func TestConcurrentSolveIsSequential(t *testing.T) {
	var snaps []*Snapshot
	for seed := int64(1); seed <= int64(*differentialBatches); seed++ {
		snaps = append(snaps, generateBatch(rand.New(rand.NewSource(seed))).snap)
	}
	bench := func(pods []*corev1.Pod, opts ...func(*Snapshot)) *Snapshot {
		s := &Snapshot{NodePools: []*v1.NodePool{benchNodePool()},
			InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": fakeInstanceTypes(400)}, Pods: pods}
		for _, o := range opts {
			o(s)
		}
		return s
	}
	snaps = append(snaps, bench(diversePods(500)), bench(preferencePods(300)),
		bench(preferencePods(300), func(s *Snapshot) { s.IgnorePreferences = true }))
	for i, snap := range snaps {
		t.Run(fmt.Sprint(i+1), func(t *testing.T) {
			seq := NewPlanner(snap.NodePools, snap.InstanceTypes, snap.DaemonSets)
			con := NewPlanner(snap.NodePools, snap.InstanceTypes, snap.DaemonSets)
			con.Concurrent, con.minConcurrent = true, 1 // however few the pods
			for _, d := range []Decisions{DecisionsJoiner, DecisionsKarpenter, DecisionsJoiner} {
				s := *snap
				s.Policy.Decisions = d
				want, got := renderResults(seq.Solve(context.Background(), &s)), renderResults(con.Solve(context.Background(), &s))
				if got != want {
					t.Fatalf("decisions %s: concurrently\n%s\none way after the other\n%s", d, got, want)
				}
			}
		})
	}
}

// TestConcurrentSolveIsSequentialOverCalls: the same over a run of
// batches through one planner, with pods and nodes that have content keys
// (so their memos carry over), bound pods, and resource names no instance
// type has, met first on nodes that the two ways take in different
// orders: the dimensions must come out as one way after the other makes
// them, or reasons would name another resource first.
func TestConcurrentSolveIsSequentialOverCalls(t *testing.T) {
	pools := []*v1.NodePool{pool("general"), pool("spot", weight(5), requirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot))}
	its := map[string][]*cloudprovider.InstanceType{"general": standardTypes(), "spot": standardTypes()}
	seq, con := NewPlanner(pools, its, nil), NewPlanner(pools, its, nil)
	con.Concurrent, con.minConcurrent = true, 1 // however few the pods
	custom := func(n *Node, name string) *Node {
		n.Allocatable[corev1.ResourceName(name)] = resource.MustParse("4")
		return n
	}
	bound := pod("500m", "1Gi", label("app", "bound"))
	bound.Spec.Containers[0].Resources.Requests["example.com/bound"] = resource.MustParse("1")
	nodes := []*Node{
		custom(readyNode("zz-node", "zone-a", 4), "example.com/zz"),
		custom(readyNode("aa-node", "zone-b", 8, bound), "example.com/aa"),
		readyNode("mm-node", "zone-c", 2),
	}
	nodes[2].InFlight = true
	for i, n := range nodes {
		n.Version = fmt.Sprint("v", i)
	}
	for step := 0; step < 6; step++ {
		r := rand.New(rand.NewSource(int64(step)))
		pods := generateDeployments(r)
		for _, p := range pods {
			p.ResourceVersion = fmt.Sprint(step + 1)
		}
		wants := pod("1", "1Gi", label("app", "custom"))
		wants.Name = fmt.Sprint("custom-", step)
		for _, name := range []string{"example.com/zz", "example.com/aa", "example.com/none"}[:1+step%3] {
			wants.Spec.Containers[0].Resources.Requests[corev1.ResourceName(name)] = resource.MustParse("1")
		}
		pods = append(pods, wants)
		if step%2 == 1 {
			nodes[1].Requested = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}
			nodes[1].Version = fmt.Sprint("v1-", step)
		}
		snap := &Snapshot{NodePools: pools, InstanceTypes: its, Nodes: nodes, Pods: pods}
		want, got := renderResults(seq.Solve(context.Background(), snap)), renderResults(con.Solve(context.Background(), snap))
		if got != want {
			t.Fatalf("step %d: concurrently\n%s\none way after the other\n%s", step, got, want)
		}
	}
}

// TestConcurrentSolveStops: when ctx has ended, neither way places a pod.
func TestConcurrentSolveStops(t *testing.T) {
	snap := &Snapshot{NodePools: []*v1.NodePool{benchNodePool()},
		InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": fakeInstanceTypes(40)}, Pods: diversePods(200)}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := Solve(ctx, snap)
	if len(res.Unschedulable) != len(snap.Pods) {
		t.Fatalf("%d of %d pods unschedulable after ctx ended", len(res.Unschedulable), len(snap.Pods))
	}
	for _, e := range res.Unschedulable {
		if !strings.Contains(e.Reason, context.Canceled.Error()) {
			t.Fatalf("%s: %s", e.Pod.Name, e.Reason)
		}
	}
}

// renderResults writes out everything a plan says, in its order.
func renderResults(r *Results) string {
	var b strings.Builder
	for _, nc := range r.NewNodeClaims {
		var its []string
		for _, it := range nc.InstanceTypes {
			its = append(its, it.Name)
		}
		fmt.Fprintf(&b, "claim %s pool %s relaxed %v reqs %s types %v requests %v pods %s\n", nc.Hostname, nc.NodePool.Name,
			nc.MinValuesRelaxed, nc.Requirements, its, renderList(nc.Requests), podNames(nc.Pods))
	}
	for _, e := range r.ExistingNodes {
		fmt.Fprintf(&b, "node %s pods %s\n", e.Node.Name, podNames(e.Pods))
	}
	for _, e := range r.Unschedulable {
		fmt.Fprintf(&b, "pending %s: %s %v\n", e.Pod.Name, e.Reason, e.ByNodePool)
	}
	return b.String()
}

func renderList(l corev1.ResourceList) string {
	var out []string
	for k, q := range l {
		out = append(out, fmt.Sprintf("%s=%s", k, q.String()))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func podNames(pods []*corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return strings.Join(out, ",")
}

// TestPlansCompareAsTheirResults: Solve compares two ways' plans by
// pending and price before making either's Results; those must be the
// Results' count of unschedulable pods and Price, to the bit.
func TestPlansCompareAsTheirResults(t *testing.T) {
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	for seed := int64(1); seed <= int64(*differentialBatches); seed++ {
		snap := generateBatch(rand.New(rand.NewSource(seed))).snap
		for _, way := range DecisionsValues {
			for _, ctx := range []context.Context{context.Background(), stopped} {
				pl := NewPlanner(snap.NodePools, snap.InstanceTypes, snap.DaemonSets)
				w := pl.planAs(ctx, snap, way)
				pending, price := w.pending(), w.price()
				res := w.results()
				if pending != len(res.Unschedulable) || price != res.Price() {
					t.Errorf("seed %d, %s's way: pending %d, price %v; the results have %d and %v",
						seed, way, pending, price, len(res.Unschedulable), res.Price())
				}
			}
		}
	}
}
