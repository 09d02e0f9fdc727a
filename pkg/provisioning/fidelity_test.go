package provisioning

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
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

// TestRetryWhileTheBatchProgresses: as upstream, a pod that fits nowhere
// is tried again after others are placed, in both decision modes.
func TestRetryWhileTheBatchProgresses(t *testing.T) {
	affineTo := func(app, key string) podOpt {
		return affinity(&corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
			{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: key}}}})
	}
	ignore := corev1.NodeInclusionPolicyIgnore
	alternating := func(zone string) func() *corev1.Pod {
		cpu := map[string]string{"zone-a": "2", "zone-b": "1"}[zone] // zone-a's pods come first
		return func() *corev1.Pod {
			return pod(cpu, "1Gi", label("app", "ab"), nodeSelector(v1.LabelZone, zone),
				spread(v1.LabelZone, 1, func(c *corev1.TopologySpreadConstraint) { c.NodeAffinityPolicy = &ignore }))
		}
	}
	ab := pool("p", requirement(v1.LabelZone, corev1.NodeSelectorOpIn, "zone-a", "zone-b"))
	tests := []struct {
		name      string
		pool      *v1.NodePool
		pods      func() []*corev1.Pod
		wantZones string
		claims    int
	}{
		{"required affinity on hostname to a smaller pod later in the batch", pool("p"), func() []*corev1.Pod {
			return []*corev1.Pod{pod("2", "1Gi", affineTo("b", v1.LabelHostname)), pod("500m", "1Gi", label("app", "b"))}
		}, "", 1},
		{"required affinity on zone to a pod pinned to zone-b", pool("p"), func() []*corev1.Pod {
			return []*corev1.Pod{pod("2", "1Gi", affineTo("b", v1.LabelZone)), pod("500m", "1Gi", label("app", "b"), nodeSelector(v1.LabelZone, "zone-b"))}
		}, "zone-b=2", 1},
		{"a zone spread whose pods must alternate between zones", ab, func() []*corev1.Pod {
			return append(times(4, alternating("zone-a")), times(4, alternating("zone-b"))...)
		}, "zone-a=4 zone-b=4", 2},
	}
	for _, tc := range tests {
		for _, d := range DecisionsValues {
			t.Run(tc.name+"/"+string(d), func(t *testing.T) {
				res := solve(t, []*v1.NodePool{tc.pool}, standardTypes(), tc.pods(), func(s *Snapshot) { s.Policy.Decisions = d })
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
	// A pod that fits nowhere still says why, once the queue stops moving.
	res := solve(t, []*v1.NodePool{pool("p")}, standardTypes(), []*corev1.Pod{pod("2", "1Gi", affineTo("nobody", v1.LabelHostname)), pod("1", "1Gi")})
	if len(res.Unschedulable) != 1 || !strings.Contains(res.Unschedulable[0].Reason, "pod affinity") {
		t.Errorf("want the affine pod unschedulable for its pod affinity, got %v", res.Unschedulable)
	}
}

// TestClaimChoice: Karpenter's decisions put a pod on the open claim with
// the fewest pods; Joiner's keep the cheaper of that and first fit.
func TestClaimChoice(t *testing.T) {
	apart := antiAffinityHostname("x")
	tests := []struct {
		name string
		pods func() []*corev1.Pod
		// claim sizes (pods per claim, in order) and price per decisions
		sizes map[Decisions]string
		price map[Decisions]float64
	}{
		{"first fit would stack onto a claim that then needs a larger type",
			func() []*corev1.Pod {
				return append(times(2, func() *corev1.Pod { return pod("3", "1Gi", label("app", "x"), apart) }), times(2, func() *corev1.Pod { return pod("1", "1Gi") })...)
			},
			map[Decisions]string{DecisionsJoiner: "2 2", DecisionsKarpenter: "2 2"},
			map[Decisions]float64{DecisionsJoiner: 0.4 * 0.3, DecisionsKarpenter: 0.4 * 0.3}},
		{"first fit is cheaper: two small pods share the claim with room",
			func() []*corev1.Pod {
				return append(times(2, func() *corev1.Pod { return pod("4", "1Gi", label("app", "x"), apart) }), times(2, func() *corev1.Pod { return pod("1", "1Gi") })...)
			},
			map[Decisions]string{DecisionsJoiner: "3 1", DecisionsKarpenter: "2 2"},
			map[Decisions]float64{DecisionsJoiner: 0.6 * 0.3, DecisionsKarpenter: 0.8 * 0.3}},
	}
	for _, tc := range tests {
		for _, d := range DecisionsValues {
			t.Run(tc.name+"/"+string(d), func(t *testing.T) {
				res := solve(t, []*v1.NodePool{pool("p")}, standardTypes(), tc.pods(), func(s *Snapshot) { s.Policy.Decisions = d })
				requireAllPlaced(t, res)
				var sizes []string
				for _, nc := range res.NewNodeClaims {
					sizes = append(sizes, strconv.Itoa(len(nc.Pods)))
				}
				if got := strings.Join(sizes, " "); got != tc.sizes[d] {
					t.Errorf("pods per claim %s, want %s", got, tc.sizes[d])
				}
				if got := res.Price(); math.Abs(got-tc.price[d]) > 1e-9 {
					t.Errorf("price %.4f, want %.4f", got, tc.price[d])
				}
			})
		}
	}
}

// TestKarpenterPodOrder: upstream takes equal pods oldest first.
func TestKarpenterPodOrder(t *testing.T) {
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var pods []*corev1.Pod
	for i := 3; i >= 1; i-- {
		p := pod("1", "1Gi")
		p.Name = fmt.Sprintf("made-%d", i)
		p.CreationTimestamp = metav1.NewTime(base.Add(time.Duration(i) * time.Minute))
		pods = append(pods, p)
	}
	want := map[Decisions]string{DecisionsJoiner: "made-3 made-2 made-1", DecisionsKarpenter: "made-1 made-2 made-3"}
	for _, d := range DecisionsValues {
		res := solve(t, []*v1.NodePool{pool("p")}, standardTypes(), pods, func(s *Snapshot) { s.Policy.Decisions = d })
		if len(res.NewNodeClaims) != 1 {
			t.Fatalf("%s: %d claims, want 1", d, len(res.NewNodeClaims))
		}
		var names []string
		for _, p := range res.NewNodeClaims[0].Pods {
			names = append(names, p.Name)
		}
		if got := strings.Join(names, " "); got != want[d] {
			t.Errorf("%s: pods placed %s, want %s", d, got, want[d])
		}
	}
}

func TestParseDecisions(t *testing.T) {
	for in, want := range map[string]Decisions{"": DecisionsJoiner, "joiner": DecisionsJoiner, "karpenter": DecisionsKarpenter, "Karpenter": ""} {
		got, err := ParseDecisions(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("ParseDecisions(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestMinValuesPolicy: Strict leaves a pod whose claim cannot keep a
// pool's minValues to the next pool; BestEffort keeps the pool, lowers the
// minimum to what the types that fit allow, and marks the claim.
func TestMinValuesPolicy(t *testing.T) {
	its := []*cloudprovider.InstanceType{it("m", 4), it("c", 4), it("r", 4), it("m", 8)}
	flex := pool("flex", weight(10), minValues("family", 3, "m", "c", "r"))
	tests := []struct {
		name        string
		pools       []*v1.NodePool
		policy      MinValuesPolicy
		cpu         string // 6: only m.8x holds it, one family
		wantPool    string // "" for unschedulable
		wantMin     int
		wantRelaxed bool
	}{
		{"strict, no other pool", []*v1.NodePool{flex}, MinValuesStrict, "6", "", 0, false},
		{"strict falls back to the next pool", []*v1.NodePool{flex, pool("plain")}, MinValuesStrict, "6", "plain", 0, false},
		{"best effort keeps the pool with one family", []*v1.NodePool{flex, pool("plain")}, MinValuesBestEffort, "6", "flex", 1, true},
		{"best effort with nothing to relax", []*v1.NodePool{flex}, MinValuesBestEffort, "2", "flex", 3, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := solve(t, tc.pools, its, []*corev1.Pod{pod(tc.cpu, "1Gi")}, func(s *Snapshot) { s.Policy.MinValues = tc.policy })
			if tc.wantPool == "" {
				if len(res.Unschedulable) != 1 || !strings.Contains(res.Unschedulable[0].Reason, "minValues: family needs 3") {
					t.Fatalf("want the pod pending for minValues, got %+v", res.Unschedulable)
				}
				return
			}
			requireAllPlaced(t, res)
			nc := res.NewNodeClaims[0]
			if nc.NodePool.Name != tc.wantPool || nc.MinValuesRelaxed != tc.wantRelaxed {
				t.Fatalf("claim of %s, relaxed %v; want %s, %v", nc.NodePool.Name, nc.MinValuesRelaxed, tc.wantPool, tc.wantRelaxed)
			}
			if r := nc.Requirements.Get("family"); tc.wantMin > 0 && (r.MinValues == nil || *r.MinValues != tc.wantMin) {
				t.Errorf("family minValues %v, want %d", r.MinValues, tc.wantMin)
			}
		})
	}
	// The pool's own requirement is untouched by a claim's relaxation.
	if r := scheduling.FromNodeSelectorRequirements(flex.Spec.Template.Spec.Requirements).Get("family"); *r.MinValues != 3 {
		t.Errorf("the NodePool's minValues changed to %d", *r.MinValues)
	}
	for in, want := range map[string]MinValuesPolicy{"": MinValuesStrict, "Strict": MinValuesStrict, "BestEffort": MinValuesBestEffort, "besteffort": ""} {
		if got, err := ParseMinValuesPolicy(in); got != want || (err != nil) != (want == "") {
			t.Errorf("ParseMinValuesPolicy(%q) = %q, %v", in, got, err)
		}
	}
}

// TestStaticNodePools: as upstream, a NodePool with replicas is never
// launched for pending pods (the next pool is), its nodes still take pods,
// and its offerings are no spread domains.
func TestStaticNodePools(t *testing.T) {
	static := pool("static", weight(50), requirement(v1.LabelZone, corev1.NodeSelectorOpIn, "zone-c"))
	static.Spec.Replicas = ptrTo[int64](2)
	dynamic := pool("dynamic", requirement(v1.LabelZone, corev1.NodeSelectorOpIn, "zone-a", "zone-b"))
	web := func() *corev1.Pod { return pod("1", "1Gi", label("app", "web"), spread(v1.LabelZone, 1)) }

	res := solve(t, []*v1.NodePool{static, dynamic}, standardTypes(), times(4, web))
	requireAllPlaced(t, res)
	for _, nc := range res.NewNodeClaims {
		if nc.NodePool.Name != "dynamic" {
			t.Errorf("a claim of NodePool %s", nc.NodePool.Name)
		}
	}
	if got := zoneCounts(res); got != "zone-a=2 zone-b=2" {
		t.Errorf("zones %s, want zone-a=2 zone-b=2 (the static pool's zone-c is no domain)", got)
	}

	res = solve(t, []*v1.NodePool{static}, standardTypes(), []*corev1.Pod{pod("1", "1Gi")})
	if len(res.Unschedulable) != 1 || res.Unschedulable[0].CodeByNodePool[static.Name] != ReasonStatic {
		t.Fatalf("only a static pool: want the pod pending for it, got %+v", res.Unschedulable)
	}

	node := readyNode("static-1", "zone-c", 4)
	node.NodePool = "static"
	res = solve(t, []*v1.NodePool{static}, standardTypes(), []*corev1.Pod{pod("1", "1Gi")}, func(s *Snapshot) { s.Nodes = []*Node{node} })
	requireAllPlaced(t, res)
	if len(res.ExistingNodes) != 1 || len(res.NewNodeClaims) != 0 {
		t.Errorf("the static pool's node takes the pod: %d existing, %d new", len(res.ExistingNodes), len(res.NewNodeClaims))
	}
}
