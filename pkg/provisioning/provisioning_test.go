package provisioning

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

func TestWeightOrder(t *testing.T) {
	tests := []struct {
		name  string
		pools []*v1.NodePool
		want  string
	}{
		{"highest weight wins", []*v1.NodePool{pool("low", weight(10)), pool("high", weight(50))}, "high"},
		{"unset weight is 0", []*v1.NodePool{pool("unset"), pool("one", weight(1))}, "one"},
		{"equal weights: by name", []*v1.NodePool{pool("zeta", weight(5)), pool("alpha", weight(5))}, "alpha"},
		{"heavier pool that cannot run it is skipped", []*v1.NodePool{pool("arm", weight(90), requirement(v1.LabelArch, corev1.NodeSelectorOpIn, "arm64")), pool("any", weight(1))}, "any"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := solve(t, tc.pools, standardTypes(), []*corev1.Pod{pod("1", "1Gi")})
			requireAllPlaced(t, res)
			if len(res.NewNodeClaims) != 1 || res.NewNodeClaims[0].NodePool.Name != tc.want {
				t.Fatalf("want one claim from %s, got %+v", tc.want, res.NewNodeClaims)
			}
		})
	}
}

func TestTaintsArePermission(t *testing.T) {
	gpuPool := pool("gpu", weight(50), taint("nvidia.com/gpu", "", corev1.TaintEffectNoSchedule))
	general := pool("general", weight(10), requirement("family", corev1.NodeSelectorOpNotIn, "g"))
	its := append(standardTypes(), it("g", 4, withGPU(1)))
	res := solve(t, []*v1.NodePool{gpuPool, general}, its, []*corev1.Pod{
		pod("1", "1Gi"), pod("1", "1Gi", tolerate("nvidia.com/gpu"), gpu("1")),
	})
	requireAllPlaced(t, res)
	got := map[string]int{}
	for _, nc := range res.NewNodeClaims {
		got[nc.NodePool.Name] += len(nc.Pods)
		if nc.NodePool.Name == "gpu" && nc.InstanceTypes[0].Name != "g.4x" {
			t.Errorf("gpu pod on %s", nc.InstanceTypes[0].Name)
		}
	}
	if got["gpu"] != 1 || got["general"] != 1 {
		t.Fatalf("pods per pool = %v, want gpu:1 general:1", got)
	}

	// Startup taints need no toleration; PreferNoSchedule taints are
	// tolerated only as a last resort (relaxation).
	res = solve(t, []*v1.NodePool{pool("startup", startupTaint("node.cilium.io/agent-not-ready"))}, standardTypes(), []*corev1.Pod{pod("1", "1Gi")})
	requireAllPlaced(t, res)
	res = solve(t, []*v1.NodePool{pool("soft", taint("soft", "", corev1.TaintEffectPreferNoSchedule))}, standardTypes(), []*corev1.Pod{pod("1", "1Gi")})
	requireAllPlaced(t, res)
}

func TestExistingCapacityFirst(t *testing.T) {
	node := &Node{Name: "n1", NodePool: "general", Labels: map[string]string{v1.LabelZone: "zone-a", v1.LabelHostname: "n1"},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
		Pods:        []*corev1.Pod{pod("2", "2Gi")}}
	inflight := &Node{Name: "claim-1", NodePool: "general", InFlight: true, Labels: map[string]string{v1.LabelZone: "zone-b"},
		Taints:      []corev1.Taint{v1.UnregisteredTaint},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}}
	deleting := &Node{Name: "old", MarkedForDeletion: true, Labels: map[string]string{},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")}}
	pods := []*corev1.Pod{pod("1500m", "1Gi"), pod("1500m", "1Gi"), pod("1500m", "1Gi"), pod("1500m", "1Gi")}
	res := solve(t, []*v1.NodePool{pool("general")}, standardTypes(), pods, func(s *Snapshot) { s.Nodes = []*Node{deleting, node, inflight} })
	requireAllPlaced(t, res)
	got := map[string]int{}
	for _, e := range res.ExistingNodes {
		got[e.Node.Name] = len(e.Pods)
	}
	// n1 has 2 of 4 cores free: one 1.5-core pod; the in-flight claim one;
	// the node being deleted none; the remaining two go to one new claim.
	if got["n1"] != 1 || got["claim-1"] != 1 || got["old"] != 0 || len(res.NewNodeClaims) != 1 || len(res.NewNodeClaims[0].Pods) != 2 {
		t.Fatalf("existing %v, new claims %d", got, len(res.NewNodeClaims))
	}
}

func TestLimits(t *testing.T) {
	limited := pool("limited", weight(10), limits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}))
	// Two 3-core pods: the first claim may be as large as 4 cores (m.4x),
	// after which nothing is left under the limit.
	res := solve(t, []*v1.NodePool{limited}, []*cloudprovider.InstanceType{it("m", 4)}, []*corev1.Pod{pod("3", "1Gi"), pod("3", "1Gi")})
	if len(res.NewNodeClaims) != 1 || len(res.Unschedulable) != 1 {
		t.Fatalf("want 1 claim and 1 unschedulable, got %d and %d", len(res.NewNodeClaims), len(res.Unschedulable))
	}
	if r := res.Unschedulable[0].Reason; !strings.Contains(r, "would exceed the NodePool's limits (cpu 4 of 4 used)") {
		t.Errorf("reason = %q", r)
	}
	// Existing nodes count: a node of 4 cores already uses the limit up.
	existing := &Node{Name: "n", NodePool: "limited", Labels: map[string]string{}, Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}
	res = solve(t, []*v1.NodePool{limited, pool("fallback")}, standardTypes(), []*corev1.Pod{pod("1", "1Gi")}, func(s *Snapshot) { s.Nodes = []*Node{existing} })
	requireAllPlaced(t, res)
	if res.NewNodeClaims[0].NodePool.Name != "fallback" {
		t.Errorf("limited pool is full; want fallback, got %s", res.NewNodeClaims[0].NodePool.Name)
	}
	// A nodes limit counts nodes.
	res = solve(t, []*v1.NodePool{pool("two", limits(corev1.ResourceList{"nodes": resource.MustParse("2")}))}, standardTypes(),
		times(3, func() *corev1.Pod { return pod("100m", "100Mi", label("app", "x"), antiAffinityHostname("x")) }))
	if len(res.NewNodeClaims) != 2 || len(res.Unschedulable) != 1 {
		t.Fatalf("nodes limit 2: got %d claims, %d unschedulable", len(res.NewNodeClaims), len(res.Unschedulable))
	}
}

func antiAffinityHostname(app string) podOpt {
	return affinity(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
		{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: v1.LabelHostname}}}})
}

// TestSpotFallback: a plan keeps every capacity type its pool and pods
// allow (the cloud provider launches spot first and falls back), its
// instance types in order of their cheapest offering; offerings known to
// be unavailable do not count.
func TestSpotFallback(t *testing.T) {
	both := pool("both", requirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot, v1.CapacityTypeOnDemand))
	res := solve(t, []*v1.NodePool{both}, standardTypes(), []*corev1.Pod{pod("1", "1Gi")})
	plan := res.NewNodeClaims[0]
	if ct := plan.Requirements.Get(v1.LabelCapacityType); !ct.Has(v1.CapacityTypeSpot) || !ct.Has(v1.CapacityTypeOnDemand) {
		t.Fatalf("the plan keeps spot and on-demand for the provider to choose, got %v", ct.Values())
	}
	if plan.InstanceTypes[0].Name != "c.2x" && plan.InstanceTypes[0].Name != "m.2x" {
		t.Errorf("cheapest first: got %s", plan.InstanceTypes[0].Name)
	}
	// No spot capacity anywhere (insufficient capacity seen): the plan is
	// priced at on-demand.
	its := standardTypes()
	for _, t := range its {
		for _, o := range t.Offerings {
			if o.CapacityType == v1.CapacityTypeSpot {
				o.Available = false
			}
		}
	}
	res = solve(t, []*v1.NodePool{both}, its, []*corev1.Pod{pod("1", "1Gi")})
	requireAllPlaced(t, res)
	want := 0.0
	for _, o := range res.NewNodeClaims[0].InstanceTypes[0].Offerings {
		if o.Available && (want == 0 || o.Price < want) {
			want = o.Price
		}
	}
	if got := res.NewNodeClaims[0].Price(); got != want || want == 0 {
		t.Fatalf("spot unavailable: priced %v, want the cheapest available (on-demand) offering's %v", got, want)
	}
	// An unavailable offering is skipped for the types it belongs to.
	its = []*cloudprovider.InstanceType{it("m", 2), it("m", 4)}
	for _, o := range its[0].Offerings {
		o.Available = false
	}
	res = solve(t, []*v1.NodePool{both}, its, []*corev1.Pod{pod("1", "1Gi")})
	if got := res.NewNodeClaims[0].InstanceTypes; len(got) != 1 || got[0].Name != "m.4x" {
		t.Fatalf("m.2x has no capacity: want only m.4x, got %v", got)
	}
}

func TestMinValues(t *testing.T) {
	its := []*cloudprovider.InstanceType{it("m", 4), it("c", 4), it("r", 4), it("m", 8)}
	ok := pool("flex", minValues("family", 3, "m", "c", "r"))
	res := solve(t, []*v1.NodePool{ok}, its, []*corev1.Pod{pod("2", "1Gi")})
	requireAllPlaced(t, res)
	if n := len(res.NewNodeClaims[0].InstanceTypes); n != 4 {
		t.Errorf("all 4 types span the 3 families: got %d", n)
	}
	// A pod large enough for m.8x only leaves one family: minValues 3 fails.
	res = solve(t, []*v1.NodePool{ok}, its, []*corev1.Pod{pod("6", "1Gi")})
	if len(res.Unschedulable) != 1 || !strings.Contains(res.Unschedulable[0].Reason, "minValues: family needs 3 distinct values, only 1 remain") {
		t.Fatalf("want minValues failure, got %+v", res.Unschedulable)
	}
}

func TestPreferencesRelaxed(t *testing.T) {
	prefer := func(zone string) podOpt {
		return affinity(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
			{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}}})
	}
	res := solve(t, []*v1.NodePool{pool("p")}, standardTypes(), []*corev1.Pod{pod("1", "1Gi", prefer("zone-b"))})
	requireAllPlaced(t, res)
	if z := zoneOf(res.NewNodeClaims[0]); z != "zone-b" {
		t.Errorf("preference honoured when possible: zone %q", z)
	}
	res = solve(t, []*v1.NodePool{pool("p", requirement(v1.LabelZone, corev1.NodeSelectorOpIn, "zone-a"))}, standardTypes(), []*corev1.Pod{pod("1", "1Gi", prefer("zone-b"))})
	requireAllPlaced(t, res)
	if z := zoneOf(res.NewNodeClaims[0]); z != "zone-a" {
		t.Errorf("preference relaxed when impossible: zone %q", z)
	}
	// Preferred anti-affinity by zone: 3 pods spread over 3 zones, the 4th
	// relaxes it (and then its hostname preference) and still runs.
	anti := affinity(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
		{Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "w"}}, TopologyKey: v1.LabelZone}}}}})
	res = solve(t, []*v1.NodePool{pool("p")}, standardTypes(), times(4, func() *corev1.Pod { return pod("1", "1Gi", label("app", "w"), anti) }))
	requireAllPlaced(t, res)
	if zc := zoneCounts(res); !strings.Contains(zc, "zone-a=") || !strings.Contains(zc, "zone-b=") || !strings.Contains(zc, "zone-c=") {
		t.Errorf("first three pods in three zones: %s", zc)
	}
}

func TestDaemonSetOverhead(t *testing.T) {
	ds := pod("1", "1Gi")
	tainted := pool("tainted", taint("dedicated", "x", corev1.TaintEffectNoSchedule))
	its := []*cloudprovider.InstanceType{it("m", 2), it("m", 4)}
	// 1.5 cores + 1 core of DaemonSet does not fit m.2x.
	res := solve(t, []*v1.NodePool{pool("p")}, its, []*corev1.Pod{pod("1500m", "1Gi")}, func(s *Snapshot) { s.DaemonSets = []*corev1.Pod{ds} })
	requireAllPlaced(t, res)
	plan := res.NewNodeClaims[0]
	if plan.InstanceTypes[0].Name != "m.4x" {
		t.Errorf("with DaemonSet overhead want m.4x first, got %s", plan.InstanceTypes[0].Name)
	}
	if q := plan.Requests[corev1.ResourceCPU]; q.String() != "2500m" {
		t.Errorf("plan requests cpu = %s, want 2500m (pod + DaemonSet)", q.String())
	}
	// A DaemonSet that does not tolerate the pool's taint adds nothing there.
	res = solve(t, []*v1.NodePool{tainted}, its, []*corev1.Pod{pod("1500m", "1Gi", tolerate("dedicated"))}, func(s *Snapshot) { s.DaemonSets = []*corev1.Pod{ds} })
	requireAllPlaced(t, res)
	if res.NewNodeClaims[0].InstanceTypes[0].Name != "m.2x" {
		t.Errorf("untolerating DaemonSet must not count: got %s", res.NewNodeClaims[0].InstanceTypes[0].Name)
	}
	// Overhead is per instance type: a DaemonSet that selects GPU types
	// (the NVIDIA device plugin) does not enlarge a CPU-only pod's claim,
	// and does count on the GPU types.
	gpuTypes := []*cloudprovider.InstanceType{it("m", 2), it("m", 4), it("g", 4, withGPU(1), withGPULabel), it("g", 8, withGPU(1), withGPULabel)}
	plugin := pod("1", "1Gi", nodeSelector("gpu-manufacturer", "nvidia"))
	res = solve(t, []*v1.NodePool{pool("p")}, gpuTypes, []*corev1.Pod{pod("1500m", "1Gi")}, func(s *Snapshot) { s.DaemonSets = []*corev1.Pod{plugin} })
	requireAllPlaced(t, res)
	if got := res.NewNodeClaims[0].InstanceTypes[0].Name; got != "m.2x" {
		t.Errorf("a GPU-only DaemonSet enlarged a CPU pod's claim: got %s, want m.2x", got)
	}
	res = solve(t, []*v1.NodePool{pool("p")}, gpuTypes, []*corev1.Pod{pod("3500m", "1Gi", gpu("1"))}, func(s *Snapshot) { s.DaemonSets = []*corev1.Pod{plugin} })
	requireAllPlaced(t, res)
	if got := res.NewNodeClaims[0].InstanceTypes[0].Name; got != "g.8x" {
		t.Errorf("the GPU DaemonSet must count on GPU types: got %s, want g.8x (3.5 + 1 cores do not fit g.4x)", got)
	}
	if q := res.NewNodeClaims[0].Requests[corev1.ResourceCPU]; q.String() != "4500m" {
		t.Errorf("plan requests cpu = %s, want 4500m (pod + device plugin)", q.String())
	}
}

func withGPULabel(t *cloudprovider.InstanceType) {
	t.Requirements.Add(scheduling.NewRequirement("gpu-manufacturer", corev1.NodeSelectorOpIn, "nvidia"))
}

func TestTopologySpread(t *testing.T) {
	p := []*v1.NodePool{pool("p")}
	web := func(opts ...podOpt) func() *corev1.Pod {
		return func() *corev1.Pod { return pod("1", "1Gi", append([]podOpt{label("app", "web")}, opts...)...) }
	}
	honor, ignore := corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore
	onlyAB := affinity(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a", "zone-b"}}}}}}}})
	tests := []struct {
		name          string
		pods          []*corev1.Pod
		wantZones     string
		unschedulable int
		minClaims     int
	}{
		{"zone maxSkew 1", times(6, web(spread(v1.LabelZone, 1))), "zone-a=2 zone-b=2 zone-c=2", 0, 3},
		{"hostname maxSkew 1: one per node", times(4, web(spread(v1.LabelHostname, 1))), "", 0, 4},
		{"hostname maxSkew 2: two per node", times(4, web(spread(v1.LabelHostname, 2))), "", 0, 2},
		{"capacity-type spread", times(2, web(spread(v1.LabelCapacityType, 1))), "", 0, 2},
		{"minDomains above the domain count keeps the minimum at 0", times(4, web(spread(v1.LabelZone, 1, func(c *corev1.TopologySpreadConstraint) { c.MinDomains = ptrTo[int32](5) }))), "", 1, 3},
		{"nodeAffinityPolicy Honor: only allowed zones count", times(4, web(onlyAB, spread(v1.LabelZone, 1, func(c *corev1.TopologySpreadConstraint) { c.NodeAffinityPolicy = &honor }))), "zone-a=2 zone-b=2", 0, 2},
		{"nodeAffinityPolicy Ignore: zone-c counts and stays empty", times(3, web(onlyAB, spread(v1.LabelZone, 1, func(c *corev1.TopologySpreadConstraint) { c.NodeAffinityPolicy = &ignore }))), "zone-a=1 zone-b=1", 1, 2},
		{"ScheduleAnyway is relaxed when it cannot hold", times(4, web(onlyAB, spread(v1.LabelZone, 1, func(c *corev1.TopologySpreadConstraint) {
			c.NodeAffinityPolicy = &ignore
			c.WhenUnsatisfiable = corev1.ScheduleAnyway
		}))), "", 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := solve(t, p, standardTypes(), tc.pods)
			if len(res.Unschedulable) != tc.unschedulable {
				t.Fatalf("unschedulable = %d, want %d (%v)", len(res.Unschedulable), tc.unschedulable, res.Unschedulable)
			}
			if tc.wantZones != "" {
				if got := zoneCounts(res); got != tc.wantZones {
					t.Errorf("zones %s, want %s", got, tc.wantZones)
				}
			}
			if len(res.NewNodeClaims) < tc.minClaims {
				t.Errorf("%d claims, want at least %d", len(res.NewNodeClaims), tc.minClaims)
			}
		})
	}
	// nodeTaintsPolicy: zone-c is offered only by a pool the pods do not
	// tolerate. Ignore (default) counts it, so a second pod cannot go
	// anywhere; Honor leaves it out.
	split := []*v1.NodePool{
		pool("ab", requirement(v1.LabelZone, corev1.NodeSelectorOpIn, "zone-a", "zone-b")),
		pool("c", requirement(v1.LabelZone, corev1.NodeSelectorOpIn, "zone-c"), taint("dedicated", "x", corev1.TaintEffectNoSchedule)),
	}
	for policy, want := range map[corev1.NodeInclusionPolicy]int{corev1.NodeInclusionPolicyIgnore: 2, corev1.NodeInclusionPolicyHonor: 0} {
		res := solve(t, split, standardTypes(), times(4, web(spread(v1.LabelZone, 1, func(c *corev1.TopologySpreadConstraint) { c.NodeTaintsPolicy = &policy }))))
		if len(res.Unschedulable) != want {
			t.Errorf("nodeTaintsPolicy %s: %d unschedulable, want %d", policy, len(res.Unschedulable), want)
		}
	}
	// matchLabelKeys: each version spreads on its own.
	var pods []*corev1.Pod
	for _, v := range []string{"v1", "v1", "v1", "v2", "v2", "v2"} {
		pods = append(pods, pod("1", "1Gi", label("app", "web"), label("version", v), spread(v1.LabelZone, 1, func(c *corev1.TopologySpreadConstraint) { c.MatchLabelKeys = []string{"version"} })))
	}
	res := solve(t, p, standardTypes(), pods)
	requireAllPlaced(t, res)
	perVersionZone := map[string]int{}
	for _, nc := range res.NewNodeClaims {
		for _, pp := range nc.Pods {
			perVersionZone[pp.Labels["version"]+"/"+zoneOf(nc)]++
		}
	}
	for k, n := range perVersionZone {
		if n != 1 {
			t.Errorf("matchLabelKeys: %s has %d pods, want each version once per zone (%v)", k, n, perVersionZone)
		}
	}
	// Any label can be a topology key: a custom label the pool pins.
	rack := []*v1.NodePool{pool("r1", requirement("rack", corev1.NodeSelectorOpIn, "r1")), pool("r2", requirement("rack", corev1.NodeSelectorOpIn, "r2"))}
	res = solve(t, rack, standardTypes(), times(2, web(spread("rack", 1))))
	requireAllPlaced(t, res)
	if len(res.NewNodeClaims) != 2 || res.NewNodeClaims[0].NodePool.Name == res.NewNodeClaims[1].NodePool.Name {
		t.Errorf("rack spread: want one claim per rack pool, got %d", len(res.NewNodeClaims))
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestPodAffinityAndAntiAffinity(t *testing.T) {
	p := []*v1.NodePool{pool("p")}
	res := solve(t, p, standardTypes(), times(3, func() *corev1.Pod { return pod("100m", "100Mi", label("app", "db"), antiAffinityHostname("db")) }))
	requireAllPlaced(t, res)
	if len(res.NewNodeClaims) != 3 {
		t.Errorf("required anti-affinity on hostname: %d claims, want 3", len(res.NewNodeClaims))
	}
	// Affinity to a pod already running in zone-b: a new node in zone-b.
	existing := &Node{Name: "n", Labels: map[string]string{v1.LabelZone: "zone-b", v1.LabelHostname: "n"},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		Pods:        []*corev1.Pod{pod("500m", "100Mi", label("app", "cache"))}}
	withCache := affinity(&corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
		{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cache"}}, TopologyKey: v1.LabelZone}}}})
	res = solve(t, p, standardTypes(), []*corev1.Pod{pod("2", "1Gi", withCache)}, func(s *Snapshot) { s.Nodes = []*Node{existing} })
	requireAllPlaced(t, res)
	if len(res.NewNodeClaims) != 1 || zoneOf(res.NewNodeClaims[0]) != "zone-b" {
		t.Fatalf("affinity to zone-b: got %+v", res.NewNodeClaims)
	}
	// Anti-affinity of a running pod keeps matching pods off its node.
	guard := pod("100m", "100Mi", label("app", "guard"), antiAffinityHostname("noisy"))
	existing = &Node{Name: "n", Labels: map[string]string{v1.LabelHostname: "n"},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("10")},
		Pods:        []*corev1.Pod{guard}}
	res = solve(t, p, standardTypes(), []*corev1.Pod{pod("1", "1Gi", label("app", "noisy")), pod("1", "1Gi", label("app", "quiet"))}, func(s *Snapshot) { s.Nodes = []*Node{existing} })
	requireAllPlaced(t, res)
	if len(res.ExistingNodes) != 1 || len(res.ExistingNodes[0].Pods) != 1 || res.ExistingNodes[0].Pods[0].Labels["app"] != "quiet" {
		t.Errorf("only the quiet pod may join the guarded node: %+v", res.ExistingNodes)
	}
}

func TestHostPortsVolumesAndGPUs(t *testing.T) {
	p := []*v1.NodePool{pool("p")}
	res := solve(t, p, standardTypes(), []*corev1.Pod{pod("100m", "100Mi", hostPortOpt(8080)), pod("100m", "100Mi", hostPortOpt(8080)), pod("100m", "100Mi", hostPortOpt(9090))})
	requireAllPlaced(t, res)
	if len(res.NewNodeClaims) != 2 {
		t.Errorf("two pods on host port 8080 need two nodes; got %d claims", len(res.NewNodeClaims))
	}
	withPVC := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-0"}}}}
	}
	res = solve(t, p, standardTypes(), []*corev1.Pod{pod("1", "1Gi", withPVC)}, func(s *Snapshot) {
		s.Volumes.Requirements = map[string]scheduling.Requirements{"default/data-0": scheduling.NewRequirements(scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, "zone-c"))}
	})
	requireAllPlaced(t, res)
	if z := zoneOf(res.NewNodeClaims[0]); z != "zone-c" {
		t.Errorf("bound volume in zone-c: claim zone %q", z)
	}
	its := append(standardTypes(), it("g", 8, withGPU(4)), it("g", 4, withGPU(1)))
	res = solve(t, p, its, []*corev1.Pod{pod("1", "1Gi", gpu("2"))})
	requireAllPlaced(t, res)
	if got := res.NewNodeClaims[0].InstanceTypes; len(got) != 1 || got[0].Name != "g.8x" {
		t.Errorf("2 GPUs fit only g.8x: %v", got)
	}
}

func TestUnschedulableReasons(t *testing.T) {
	gpuPool := pool("gpu", taint("nvidia.com/gpu", "", corev1.TaintEffectNoSchedule))
	arm := pool("arm", requirement(v1.LabelArch, corev1.NodeSelectorOpIn, "arm64"))
	tests := []struct {
		name  string
		pools []*v1.NodePool
		pod   *corev1.Pod
		want  map[string]string
	}{
		{"taint", []*v1.NodePool{gpuPool}, pod("1", "1Gi"), map[string]string{"gpu": "does not tolerate taint nvidia.com/gpu:NoSchedule"}},
		{"requirement conflict", []*v1.NodePool{arm}, pod("1", "1Gi", nodeSelector(v1.LabelArch, "amd64")),
			map[string]string{"arm": "requires kubernetes.io/arch In [amd64], but only kubernetes.io/arch In [arm64] is allowed"}},
		{"undefined label", []*v1.NodePool{pool("p")}, pod("1", "1Gi", nodeSelector("team", "a")),
			map[string]string{"p": `requires team In [a], which nothing here sets (label "team" is not defined)`}},
		{"too large", []*v1.NodePool{pool("p")}, pod("100", "1Gi"),
			map[string]string{"p": "no instance type is large enough: the pod needs 100 cpu, the largest compatible type, r.16x, has 16 allocatable"}},
		{"limit", []*v1.NodePool{pool("p", limits(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}))}, pod("1", "1Gi"),
			map[string]string{"p": "would exceed the NodePool's limits (memory 0 of 1Gi used)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := solve(t, tc.pools, standardTypes(), []*corev1.Pod{tc.pod})
			if len(res.Unschedulable) != 1 {
				t.Fatalf("want the pod unschedulable, got %+v", res)
			}
			for poolName, want := range tc.want {
				if got := res.Unschedulable[0].ByNodePool[poolName]; got != want {
					t.Errorf("NodePool %s:\n got %q\nwant %q", poolName, got, want)
				}
			}
		})
	}
	res := solve(t, []*v1.NodePool{gpuPool, arm}, standardTypes(), []*corev1.Pod{pod("1", "1Gi", nodeSelector(v1.LabelArch, "amd64"))})
	if r := res.Unschedulable[0].Reason; !strings.Contains(r, `NodePool "gpu": does not tolerate`) || !strings.Contains(r, `NodePool "arm": requires`) {
		t.Errorf("summary names every pool: %q", r)
	}
}

// TestDeterministic: the same snapshot gives the same plans.
func TestDeterministic(t *testing.T) {
	run := func() string {
		res := solve(t, []*v1.NodePool{pool("p")}, standardTypes(), diversePods(300))
		var b strings.Builder
		for _, nc := range res.NewNodeClaims {
			b.WriteString(nc.Hostname + " " + nc.Requirements.String() + " " + nc.InstanceTypes[0].Name)
			for _, p := range nc.Pods {
				b.WriteString(" " + p.Name)
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	if a, b := run(), run(); a != b {
		t.Error("two runs over the same snapshot differ")
	}
}

// TestLongValueListsDoNotShareCaches: two pods whose instance-type lists
// agree on their first eight values (all a person's String shows) must not
// share the compatibility cache: each claim keeps only types its pods allow.
func TestLongValueListsDoNotShareCaches(t *testing.T) {
	var its []*cloudprovider.InstanceType
	var common []string
	for _, f := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		its = append(its, it(f, 1)) // too small for the pods
		common = append(common, f+".1x")
	}
	its = append(its, it("i", 4), it("j", 4))
	allow := func(extra string) podOpt {
		return affinity(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: append(append([]string(nil), common...), extra)}}}}}}})
	}
	pods := []*corev1.Pod{pod("2", "1Gi", allow("i.4x")), pod("2", "1Gi", allow("j.4x"))}
	res := solve(t, []*v1.NodePool{pool("p")}, its, pods)
	requireAllPlaced(t, res)
	for _, plan := range res.NewNodeClaims {
		for _, p := range plan.Pods {
			a := scheduling.NewNodeAffinity(p)
			for _, typ := range plan.InstanceTypes {
				if !a.MatchesNode(map[string]string{v1.LabelInstanceType: typ.Name}) {
					t.Errorf("claim for %s offers %s, which the pod does not allow", p.Name, typ.Name)
				}
			}
		}
	}
	if len(res.NewNodeClaims) != 2 {
		t.Errorf("%d claims, want 2 (i.4x and j.4x)", len(res.NewNodeClaims))
	}
}

// TestUnreadableSelectorIsAnError: a pod whose spread or affinity selector
// cannot be read is unschedulable with that reason — never scheduled as if
// it had no constraints (kubescheduler's Binder has the same test for
// existing nodes).
func TestUnreadableSelectorIsAnError(t *testing.T) {
	bad := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus", Values: []string{"web"}}}}
	for name, opt := range map[string]podOpt{
		"spread": spread(v1.LabelZone, 1, func(tsc *corev1.TopologySpreadConstraint) { tsc.LabelSelector = bad }),
		"anti-affinity": affinity(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: v1.LabelHostname, LabelSelector: bad}}}}),
		"preferred affinity": affinity(&corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1,
				PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: v1.LabelZone, LabelSelector: bad}}}}}),
	} {
		p := pod("1", "1Gi", label("app", "web"), opt)
		res := solve(t, []*v1.NodePool{pool("p")}, standardTypes(), []*corev1.Pod{p})
		if len(res.NewNodeClaims) != 0 || len(res.Unschedulable) != 1 || !strings.Contains(res.Unschedulable[0].Reason, "cannot be read") ||
			!strings.Contains(res.Unschedulable[0].Reason, "Bogus") {
			t.Errorf("%s: %d claims, unschedulable %v; want the pod unschedulable for its selector", name, len(res.NewNodeClaims), res.Unschedulable)
		}
	}
}

// TestSolveStopsWithItsContext: pods not placed when the context ends are
// unschedulable with that reason, and no claim is made for them.
func TestSolveStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	snap := &Snapshot{NodePools: []*v1.NodePool{pool("p")}, InstanceTypes: map[string][]*cloudprovider.InstanceType{"p": standardTypes()},
		Pods: []*corev1.Pod{pod("1", "1Gi"), pod("1", "1Gi")}}
	res := Solve(ctx, snap)
	if len(res.NewNodeClaims) != 0 || len(res.Unschedulable) != 2 || !strings.Contains(res.Unschedulable[0].Reason, "context canceled") {
		t.Fatalf("claims %d, unschedulable %v", len(res.NewNodeClaims), res.Unschedulable)
	}
}

// TestDaemonSetHostPorts: a DaemonSet's host ports are part of a new
// node's overhead — a pod needing one stays pending with that reason, on
// the types the DaemonSet runs on, and takes a type it does not run on.
func TestDaemonSetHostPorts(t *testing.T) {
	exporter := pod("100m", "100Mi", hostPortOpt(9100))
	res := solve(t, []*v1.NodePool{pool("p")}, standardTypes(), []*corev1.Pod{pod("1", "1Gi", hostPortOpt(9100))},
		func(s *Snapshot) { s.DaemonSets = []*corev1.Pod{exporter} })
	if len(res.NewNodeClaims) != 0 || len(res.Unschedulable) != 1 || !strings.Contains(res.Unschedulable[0].Reason, "host port 9100/TCP, which it needs, is taken by a DaemonSet") {
		t.Fatalf("claims %d, unschedulable %v", len(res.NewNodeClaims), res.Unschedulable)
	}
	// Another port: no conflict.
	res = solve(t, []*v1.NodePool{pool("p")}, standardTypes(), []*corev1.Pod{pod("1", "1Gi", hostPortOpt(8080))},
		func(s *Snapshot) { s.DaemonSets = []*corev1.Pod{exporter} })
	requireAllPlaced(t, res)
	// A DaemonSet that only runs on the c family leaves the m types free.
	onC := pod("100m", "100Mi", hostPortOpt(9100), nodeSelector("family", "c"))
	res = solve(t, []*v1.NodePool{pool("p")}, standardTypes(), []*corev1.Pod{pod("1", "1Gi", hostPortOpt(9100))},
		func(s *Snapshot) { s.DaemonSets = []*corev1.Pod{onC} })
	requireAllPlaced(t, res)
	for _, it := range res.NewNodeClaims[0].InstanceTypes {
		if strings.HasPrefix(it.Name, "c.") {
			t.Errorf("claim offers %s, where the DaemonSet takes the port", it.Name)
		}
	}
}
