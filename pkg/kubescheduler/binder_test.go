package kubescheduler

import (
	"math/rand"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// readyNode is an existing node with cpu cores and 4 GiB per core.
func readyNode(name, zone string, cpu int64, pods ...*corev1.Pod) *provisioning.Node {
	for _, p := range pods {
		p.Spec.NodeName = name
	}
	return &provisioning.Node{Name: name, Labels: map[string]string{v1.LabelHostname: name, v1.LabelZone: zone},
		Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(4*cpu<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
		}, Pods: pods}
}

// boundTo returns where Bind put each pod, by pod name.
func boundTo(res *Results) map[string]string {
	out := map[string]string{}
	for _, plan := range res.ExistingNodes {
		for _, p := range plan.Pods {
			out[p.Name] = plan.Node.Name
		}
	}
	return out
}

func appSelector(p *corev1.Pod) k8slabels.Selector {
	if app, ok := p.Labels["app"]; ok {
		return k8slabels.SelectorFromSet(k8slabels.Set{"app": app})
	}
	return nil
}

func TestBinderScoring(t *testing.T) {
	pnsTaint := func(n *provisioning.Node) *provisioning.Node {
		n.Taints = []corev1.Taint{{Key: "spare", Effect: corev1.TaintEffectPreferNoSchedule}}
		return n
	}
	preferZone := func(z string) podOpt {
		return affinity(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
			{Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{z}}}}}}}})
	}
	requireZones := func(zs ...string) podOpt {
		var terms []corev1.NodeSelectorTerm
		for _, z := range zs {
			terms = append(terms, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: v1.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{z}}}})
		}
		return affinity(&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}})
	}
	avoid := func(app string) podOpt {
		return affinity(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
			{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: v1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}}}})
	}
	prio := func(v int32) podOpt { return func(p *corev1.Pod) { p.Spec.Priority = &v } }
	replicas := func(n int) []*corev1.Pod {
		return times(n, func() *corev1.Pod { return pod("100m", "128Mi", label("app", "web")) })
	}

	cases := []struct {
		name     string
		nodes    func() []*provisioning.Node
		pods     func() []*corev1.Pod
		spread   bool
		want     map[string]string
		unplaced int
	}{
		{
			name: "least allocated: the emptier of two equal nodes",
			nodes: func() []*provisioning.Node {
				return []*provisioning.Node{readyNode("busy", "zone-a", 4, pod("2", "8Gi")), readyNode("idle", "zone-a", 4)}
			},
			pods: func() []*corev1.Pod { return []*corev1.Pod{pod("500m", "1Gi")} },
			want: map[string]string{"": "idle"},
		},
		{
			// Both score 67 least-allocated with the pod; balanced allocation
			// (v1.37) rewards the node whose balance the pod improves: 77 vs 72.
			name: "balanced allocation: the node whose balance the pod improves",
			nodes: func() []*provisioning.Node {
				return []*provisioning.Node{readyNode("even", "zone-a", 4, pod("1", "4Gi")), readyNode("lopsided", "zone-a", 4, pod("2", "1Ki"))}
			},
			pods: func() []*corev1.Pod { return []*corev1.Pod{pod("100m", "2Gi")} },
			want: map[string]string{"": "lopsided"},
		},
		{
			name: "an untolerated PreferNoSchedule taint is avoided",
			nodes: func() []*provisioning.Node {
				return []*provisioning.Node{pnsTaint(readyNode("tainted", "zone-a", 8)), readyNode("plain", "zone-a", 4, pod("1", "4Gi"))}
			},
			pods: func() []*corev1.Pod { return []*corev1.Pod{pod("500m", "1Gi")} },
			want: map[string]string{"": "plain"},
		},
		{
			// disruption.ConsolidatingNextTaint: the next round's nodes carry
			// two marks, a later round's one, and a pod that must land on a
			// marked node lands on the later round's, though it is fuller.
			name: "two untolerated PreferNoSchedule taints are avoided before one",
			nodes: func() []*provisioning.Node {
				next := pnsTaint(readyNode("next", "zone-a", 8))
				next.Taints = append(next.Taints, corev1.Taint{Key: "spare-next", Effect: corev1.TaintEffectPreferNoSchedule})
				return []*provisioning.Node{next, pnsTaint(readyNode("later", "zone-a", 4, pod("1", "4Gi")))}
			},
			pods: func() []*corev1.Pod { return []*corev1.Pod{pod("500m", "1Gi")} },
			want: map[string]string{"": "later"},
		},
		{
			name: "a tolerated PreferNoSchedule taint is no reason to avoid a node",
			nodes: func() []*provisioning.Node {
				return []*provisioning.Node{pnsTaint(readyNode("tainted", "zone-a", 8)), readyNode("plain", "zone-a", 4, pod("1", "4Gi"))}
			},
			pods: func() []*corev1.Pod { return []*corev1.Pod{pod("500m", "1Gi", tolerate("spare"))} },
			want: map[string]string{"": "tainted"},
		},
		{
			name: "preferred node affinity outweighs free room",
			nodes: func() []*provisioning.Node {
				return []*provisioning.Node{readyNode("a", "zone-a", 8), readyNode("b", "zone-b", 4, pod("2", "8Gi"))}
			},
			pods: func() []*corev1.Pod { return []*corev1.Pod{pod("500m", "1Gi", preferZone("zone-b"))} },
			want: map[string]string{"": "b"},
		},
		{
			name: "required node affinity: any one term will do",
			nodes: func() []*provisioning.Node {
				return []*provisioning.Node{readyNode("c", "zone-c", 16), readyNode("b", "zone-b", 4, pod("2", "8Gi"))}
			},
			pods: func() []*corev1.Pod { return []*corev1.Pod{pod("500m", "1Gi", requireZones("zone-a", "zone-b"))} },
			want: map[string]string{"": "b"},
		},
		{
			name: "without a spreading selector, replicas pile onto the emptier node",
			nodes: func() []*provisioning.Node {
				return []*provisioning.Node{readyNode("replicas", "zone-a", 8, replicas(4)...), readyNode("other", "zone-a", 8, pod("2", "8Gi"))}
			},
			pods: func() []*corev1.Pod { return replicas(1) },
			want: map[string]string{"": "replicas"},
		},
		{
			name: "default spreading moves a replica away from its siblings",
			nodes: func() []*provisioning.Node {
				return []*provisioning.Node{readyNode("replicas", "zone-a", 8, replicas(4)...), readyNode("other", "zone-a", 8, pod("2", "8Gi"))}
			},
			pods:   func() []*corev1.Pod { return replicas(1) },
			spread: true,
			want:   map[string]string{"": "other"},
		},
		{
			name: "preferred pod anti-affinity",
			nodes: func() []*provisioning.Node {
				return []*provisioning.Node{readyNode("with-db", "zone-a", 8, pod("100m", "128Mi", label("app", "db"))), readyNode("busy", "zone-a", 8, pod("3", "12Gi"))}
			},
			pods: func() []*corev1.Pod { return []*corev1.Pod{pod("500m", "1Gi", avoid("db"))} },
			want: map[string]string{"": "busy"},
		},
		{
			name: "higher priority binds first",
			nodes: func() []*provisioning.Node {
				return []*provisioning.Node{readyNode("only", "zone-a", 2)}
			},
			pods: func() []*corev1.Pod {
				low := pod("1500m", "1Gi")
				high := pod("1500m", "1Gi", prio(1000))
				high.Name = "high"
				return []*corev1.Pod{low, high}
			},
			want:     map[string]string{"high": "only"},
			unplaced: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := BindOptions{}
			if tc.spread {
				opts.SpreadSelector = appSelector
			}
			pods := tc.pods()
			res := NewBinder(opts).Bind(tc.nodes(), pods)
			got := boundTo(res)
			for name, node := range tc.want {
				if name == "" {
					name = pods[0].Name
				}
				if got[name] != node {
					t.Errorf("pod %s bound to %q, want %q (all: %v)", name, got[name], node, got)
				}
			}
			if len(res.Unschedulable) != tc.unplaced {
				t.Errorf("%d pods unplaced, want %d", len(res.Unschedulable), tc.unplaced)
			}
		})
	}
}

func TestBinderScoresMatchHandComputation(t *testing.T) {
	// Two 4-core nodes, one with a 1-core/4Gi pod; the pod asks 1 core/2Gi.
	// least allocated: idle (3000/4000 cpu → 75, 14/16 Gi → 87) → 81;
	//                  used (2000/4000 → 50, 10/16 → 62) → 56.
	// balanced: idle with (0.25, 0.125) → 93, without (0, 0) → 100 →
	//           50 + (50 + 93 - 100)/2 = 71; used with (0.5, 0.375) → 93,
	//           without (0.25, 0.25) → 100 → 71.
	// TaintToleration: no taints → 100 × 3 each. Nothing else applies.
	nodes := []*provisioning.Node{readyNode("idle", "zone-a", 4), readyNode("used", "zone-a", 4, pod("1", "4Gi"))}
	got := NewBinder(BindOptions{}).Scores(nodes, pod("1", "2Gi"))
	want := map[string]int64{"idle": 300 + 81 + 71, "used": 300 + 56 + 71}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("score of %s = %d, want %d (all %v)", n, got[n], w, got)
		}
	}
}

func TestBinderSpreadsTiesAtRandom(t *testing.T) {
	var nodes []*provisioning.Node
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		nodes = append(nodes, readyNode(n, "zone-a", 64))
	}
	first := map[string]bool{}
	for seed := int64(0); seed < 20; seed++ {
		b := NewBinder(BindOptions{Rand: rand.New(rand.NewSource(seed))})
		p := pod("1", "1Gi")
		first[boundTo(b.Bind(nodes, []*corev1.Pod{p}))[p.Name]] = true
	}
	if len(first) < 3 {
		t.Errorf("20 seeds chose only %v among 4 equal nodes", first)
	}
	b := NewBinder(BindOptions{})
	p := pod("1", "1Gi")
	if got := boundTo(b.Bind(nodes, []*corev1.Pod{p}))[p.Name]; got != "n1" {
		t.Errorf("without Rand the first equal node should win, got %s", got)
	}
}

func TestBinderSkipsInFlightAndDeletingNodes(t *testing.T) {
	inflight := readyNode("inflight", "zone-a", 64)
	inflight.InFlight = true
	deleting := readyNode("deleting", "zone-a", 64)
	deleting.MarkedForDeletion = true
	res := NewBinder(BindOptions{}).Bind([]*provisioning.Node{inflight, deleting, readyNode("small", "zone-a", 1)}, []*corev1.Pod{pod("2", "1Gi")})
	if len(res.ExistingNodes) != 0 || len(res.Unschedulable) != 1 {
		t.Fatalf("want the pod unplaced, got %v", boundTo(res))
	}
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	for all, want := range map[int]int{0: 0, 50: 50, 99: 99, 100: 100, 250: 120, 1000: 420, 5000: 500, 20000: 1000} {
		if got := numFeasibleNodesToFind(all); got != want {
			t.Errorf("numFeasibleNodesToFind(%d) = %d, want %d", all, got, want)
		}
	}
}

func TestNodeTreeOrderInterleavesZones(t *testing.T) {
	nodes := []*provisioning.Node{readyNode("a1", "a", 1), readyNode("a2", "a", 1), readyNode("b1", "b", 1), readyNode("a3", "a", 1), readyNode("c1", "c", 1)}
	var got []string
	for _, n := range nodeTreeOrder(nodes) {
		got = append(got, n.Name)
	}
	want := "a1 b1 c1 a2 a3"
	if s := joinNames(got); s != want {
		t.Errorf("order %s, want %s", s, want)
	}
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += " "
		}
		out += n
	}
	return out
}

// TestBinderScoresEachPodByItsOwnPreferences: two pods that differ only in
// a ScheduleAnyway constraint share a filter class, but not their scores.
func TestBinderScoresEachPodByItsOwnPreferences(t *testing.T) {
	nodes := []*provisioning.Node{
		readyNode("a", "zone-a", 8, pod("100m", "128Mi", label("app", "x")), pod("100m", "128Mi", label("app", "x")), pod("100m", "128Mi", label("app", "x"))),
		readyNode("b", "zone-b", 8, pod("3", "12Gi")),
	}
	soft := pod("100m", "128Mi", label("app", "x"), spread(v1.LabelZone, 1, func(c *corev1.TopologySpreadConstraint) { c.WhenUnsatisfiable = corev1.ScheduleAnyway }))
	plain := pod("100m", "128Mi", label("app", "x"))
	got := boundTo(NewBinder(BindOptions{}).Bind(nodes, []*corev1.Pod{soft, plain}))
	if got[soft.Name] != "b" || got[plain.Name] != "a" {
		t.Errorf("the spread pod should go to the empty zone, the plain one to the emptier node: %v", got)
	}
}

// TestUnreadableSelectorIsAnError: a pod whose spread or affinity selector
// cannot be read is unschedulable with that reason, never bound as if it
// had no constraints (provisioning has the same test for new claims).
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
		node := &provisioning.Node{Name: "n", NodePool: "p", Labels: map[string]string{v1.LabelHostname: "n", v1.LabelZone: "zone-a"},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}}
		bound := NewBinder(BindOptions{}).Bind([]*provisioning.Node{node}, []*corev1.Pod{p})
		if len(bound.ExistingNodes) != 0 || len(bound.Unschedulable) != 1 || !strings.Contains(bound.Unschedulable[0].Reason, "cannot be read") {
			t.Errorf("%s: the binder placed it or gave %v", name, bound.Unschedulable)
		}
	}
}

// TestRequestCache: the requests kept for a pod are kube-scheduler's
// (a container without requests at its defaults), and a pod whose content
// changed — a new resourceVersion — is worked out again.
func TestRequestCache(t *testing.T) {
	c := NewRequestCache()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", ResourceVersion: "1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}, {Name: "b"}}}}
	want := [2]int64{600, 1<<30 + 200<<20}
	if got := c.of(p); got != want {
		t.Fatalf("requests %v, want %v (the second container at 100m and 200Mi)", got, want)
	}
	c.newCall()
	resized := p.DeepCopy()
	resized.ResourceVersion = "2"
	resized.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	if got := c.of(resized); got != [2]int64{2100, want[1]} {
		t.Errorf("after a change: %v, want the new requests", got)
	}
	if got := c.of(p); got != want {
		t.Errorf("the first version again: %v, want %v", got, want)
	}
	var none *RequestCache
	if got := none.of(p); got != want {
		t.Errorf("a nil cache: %v", got)
	}
}
