package provisioning

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// tailTypes: one best-priced family up to 48 cores; its 64-core size is
// 3 % dearer a core, so claims are capped at 48 (as EC2's c6g.12xlarge
// caps the scale benchmark's); a dearer family above.
func tailTypes() []*cloudprovider.InstanceType {
	return []*cloudprovider.InstanceType{priced("g", 2, 0.034), priced("g", 4, 0.034), priced("g", 8, 0.034), priced("g", 16, 0.034),
		priced("g", 32, 0.034), priced("g", 48, 0.034), priced("g", 64, 0.0351), priced("x", 96, 0.047), priced("x", 192, 0.047)}
}

// tailBatch is the scale benchmark's mix at n pods a Deployment: four
// sizes, two of them spread over zones.
func tailBatch(n int, extra ...podOpt) []*corev1.Pod {
	var pods []*corev1.Pod
	for i, size := range []struct{ cpu, mem string }{{"100m", "128Mi"}, {"500m", "512Mi"}, {"1", "2Gi"}, {"2", "4Gi"}} {
		opts := append([]podOpt{label("app", fmt.Sprint("app", i))}, extra...)
		if i%2 == 1 {
			opts = append(opts, spread(v1.LabelZone, 1))
		}
		pods = append(pods, times(n, func() *corev1.Pod { return pod(size.cpu, size.mem, opts...) })...)
	}
	return pods
}

// joinersPlan is Joiner's way's plan of the batch as Solve makes it, up to
// but not including the tail's absorption.
func joinersPlan(t *testing.T, pods []*corev1.Pod) *prepared {
	t.Helper()
	pools := []*v1.NodePool{pool("general", requirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand))}
	snap := &Snapshot{NodePools: pools, InstanceTypes: map[string][]*cloudprovider.InstanceType{"general": tailTypes()}, Pods: pods}
	pl := NewPlanner(pools, snap.InstanceTypes, nil)
	j := pl.refined(context.Background(), snap, pl.planAs(context.Background(), snap, DecisionsJoiner), memosOwned)
	if j.pending() != 0 {
		t.Fatalf("the plan leaves %d pods pending", j.pending())
	}
	return j
}

// A 280-pod batch's plan ends with a g.16x whose room the other claims'
// slack holds: kube-scheduler's spread would leave it for consolidation to
// take back. Its pods join a g.48x of the same zone as a g.64x, for less
// than the g.16x costs, and the claims still hold every pod.
func TestTailJoinsANeighbour(t *testing.T) {
	pods := tailBatch(70)
	j := joinersPlan(t, pods)
	ti := j.s.spreadableTail()
	if ti < 0 {
		t.Fatalf("the plan's tail is not spreadable: %s", claimsOf(j))
	}
	tail := j.s.claims[ti]
	before, claims, tailPrice := j.price(), len(j.s.claims), tail.price()
	if !j.s.absorbTail() {
		t.Fatalf("the tail %s was not absorbed: %s", tail.cheapest().it.Name, claimsOf(j))
	}
	t.Logf("$%.3f/h → $%.3f/h: %s", before, j.price(), claimsOf(j))
	if len(j.s.claims) != claims-1 {
		t.Errorf("%d claims after absorbing the tail, want %d", len(j.s.claims), claims-1)
	}
	if after := j.price(); after > before+tailPrice+1e-9 || after < before-1e-9 {
		t.Errorf("the plan costs $%.3f/h after absorbing a $%.3f/h tail, $%.3f/h before: want no cheaper, and at most the tail's price dearer", after, tailPrice, before)
	}
	seen := 0
	for _, cl := range j.s.claims {
		seen += len(cl.pods)
		if it := cl.cheapest(); it == nil || !cl.requests.fitsIn(it.alloc) {
			t.Errorf("claim %s: its pods do not fit its cheapest type", cl.name)
		}
	}
	if seen != len(pods) {
		t.Errorf("the claims hold %d pods, want %d", seen, len(pods))
	}

	// Solve makes the same plan, and it is no dearer than upstream's.
	pools := []*v1.NodePool{pool("general", requirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand))}
	res := solve(t, pools, tailTypes(), pods)
	requireAllPlaced(t, res)
	up := solve(t, pools, tailTypes(), pods, func(s *Snapshot) { s.Policy.Decisions = DecisionsKarpenter })
	if len(res.NewNodeClaims) != claims-1 || res.Price() > up.Price()+1e-9 {
		t.Errorf("Solve: %d claims, $%.3f/h; want %d, and no dearer than upstream's $%.3f/h", len(res.NewNodeClaims), res.Price(), claims-1, up.Price())
	}

	// A Concurrent Planner, which plans upstream's way beside, makes the
	// same plan (and, under -race, shares nothing unsafely doing it).
	snap := &Snapshot{NodePools: pools, InstanceTypes: map[string][]*cloudprovider.InstanceType{"general": tailTypes()}, Pods: pods}
	con := NewPlanner(pools, snap.InstanceTypes, nil)
	con.Concurrent = true
	if got := con.Solve(context.Background(), snap); len(got.NewNodeClaims) != len(res.NewNodeClaims) || got.Price() != res.Price() {
		t.Errorf("a Concurrent Planner plans %d claims for $%.3f/h, Solve %d for $%.3f/h", len(got.NewNodeClaims), got.Price(), len(res.NewNodeClaims), res.Price())
	}
}

// Where a merge could break what placed the pods — topology on hostname,
// host ports — or no larger type holds them for at most the tail's price,
// the tail stays.
func TestTailStays(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pods  []*corev1.Pod
		cause string
	}{
		{"hostname spread", tailBatch(70, spread(v1.LabelHostname, 5)), "hostname topology"},
		{"host ports", tailBatch(70, hostPortOpt(8080)), "host ports"},
		// 48 + 8 cores fit only a g.64x, $0.342/h more than the two: more
		// than the g.8x's $0.272/h.
		{"no type for the price", tailBatch(55), "price"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := joinersPlan(t, tc.pods)
			claims := claimsOf(j)
			if j.s.absorbTail() {
				t.Errorf("the tail was absorbed despite its %s: %s became %s", tc.cause, claims, claimsOf(j))
			}
		})
	}
}

// A batch of large alike pods leaves fragments smaller than any of them:
// spread over the nodes, none frees a node, so the tail is not
// spreadable however much slack the fragments add up to.
func TestTailOfLargePodsIsNotSpreadable(t *testing.T) {
	j := joinersPlan(t, times(95, func() *corev1.Pod { return pod("5", "5Gi") }))
	if ti := j.s.spreadableTail(); ti >= 0 {
		t.Errorf("the tail %s of %s is spreadable; want not: each claim's 3 cores left hold no 5-core pod", j.s.claims[ti].cheapest().it.Name, claimsOf(j))
	}
}

func claimsOf(j *prepared) string {
	if len(j.s.claims) > 20 {
		return fmt.Sprintf(" %d claims", len(j.s.claims))
	}
	out := ""
	for _, cl := range j.s.claims {
		out += fmt.Sprintf(" %s/%d", cl.cheapest().it.Name, len(cl.pods))
	}
	return out
}
