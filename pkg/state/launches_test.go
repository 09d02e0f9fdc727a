package state

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// launchedNode adds a claim launched for pods and, when ready, its Node,
// Ready and initialized at t0.
func launchedNode(s *Store, name string, ready bool, pods ...*corev1.Pod) {
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelNodePool: "general"}}}
	nc.Status = v1.NodeClaimStatus{ProviderID: "kwok://" + name, NodeName: name, Allocatable: resources("4"),
		Conditions: []v1.Condition{condition(v1.ConditionLaunched, metav1.ConditionTrue)}}
	if ready {
		nc.Status.Conditions = append(nc.Status.Conditions, condition(v1.ConditionInitialized, metav1.ConditionTrue))
	}
	s.SetNodeClaim(nc)
	s.LaunchedFor(name, pods)
	if !ready {
		return
	}
	s.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}},
		Spec:   corev1.NodeSpec{ProviderID: "kwok://" + name},
		Status: corev1.NodeStatus{Allocatable: resources("4"), Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}})
}

// TestLaunchLoopGuard: a pod that misses MaxLaunchRounds ready nodes
// launched for it is given up on — left out of PendingPods and of
// provisioning snapshots, with the claims and the scheduler's reason —
// while a pod that bound, a pod the nodes could have run (others took
// them first), a claim whose node never got ready, and a pod that went
// away count nothing; a NodePool spec change tries it again.
func TestLaunchLoopGuard(t *testing.T) {
	s := (&Objects{NodePools: cluster().NodePools}).Store()
	stuck := pod("stuck", "", "1", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"team": "a"} })
	lucky := pod("lucky", "", "1")
	crowded := pod("crowded", "", "1")
	s.SetPod(stuck)
	s.SetPod(lucky)
	s.SetPod(crowded)
	for _, n := range []string{"c1", "c2", "c3", "c4"} {
		launchedNode(s, n, true, crowded)
		s.SetPod(pod("other-"+n, n, "4")) // took the whole node
		if got := s.SettleLaunch(n); len(got) != 0 {
			t.Fatalf("gave up on a pod others beat to the nodes: %+v", got)
		}
	}
	s.DeletePod("default", "crowded")

	launchedNode(s, "n1", true, stuck, lucky)
	s.SetPod(pod("lucky", "n1", "1")) // kube-scheduler bound one of them
	if got := s.SettleLaunch("n1"); len(got) != 0 {
		t.Fatalf("gave up after one round: %+v", got)
	}
	launchedNode(s, "n2", false, stuck) // never ready: no chance, no miss
	if got := s.SettleLaunch("n2"); len(got) != 0 {
		t.Fatalf("gave up on a node that was not ready: %+v", got)
	}
	launchedNode(s, "n3", true, stuck)
	if got := s.SettleLaunch("n3"); len(got) != 0 {
		t.Fatalf("gave up after two rounds: %+v", got)
	}
	if got := s.SettleLaunch("n3"); len(got) != 0 {
		t.Fatalf("a claim settled twice counted twice: %+v", got)
	}
	if names(s.PendingPods()) != "stuck" {
		t.Fatalf("pending %q before the last round, want stuck", names(s.PendingPods()))
	}
	launchedNode(s, "n4", true, stuck)
	got := s.SettleLaunch("n4")
	if len(got) != 1 || got[0].Pod != stuck || strings.Join(got[0].Claims, ",") != "n1,n3,n4" || !strings.HasPrefix(got[0].Why, "it requires team In [a]") {
		t.Fatalf("given up %+v, want stuck after n1,n3,n4 with its node selector as the reason", got)
	}
	if want := "launch loop: 3 nodes were launched for it and it bound to none (it requires team In [a]"; !strings.HasPrefix(got[0].Reason(), want) {
		t.Errorf("reason %q, want it to start %q", got[0].Reason(), want)
	}
	if p := s.PendingPods(); len(p) != 0 {
		t.Errorf("pending %q after giving up, want none", names(p))
	}
	if snap := s.ProvisioningSnapshot(); len(snap.Pods) != 0 {
		t.Errorf("the snapshot plans for %q, want nobody", names(snap.Pods))
	}
	if g := s.GivenUpPods(); len(g) != 1 || g[0].Pod.Name != "stuck" {
		t.Errorf("GivenUpPods %+v", g)
	}

	// A NodePool's spec changes (its generation): the pod is tried again,
	// its misses forgotten.
	np := cluster().NodePools[0].DeepCopy()
	np.Generation = 2
	s.SetNodePools([]*v1.NodePool{np})
	if names(s.PendingPods()) != "stuck" || len(s.GivenUpPods()) != 0 {
		t.Fatalf("after a NodePool change: pending %q, given up %d; want stuck tried again", names(s.PendingPods()), len(s.GivenUpPods()))
	}
	launchedNode(s, "n5", true, stuck)
	if got := s.SettleLaunch("n5"); len(got) != 0 {
		t.Fatalf("misses before the change still counted: %+v", got)
	}
	// A pod that is gone is forgotten too.
	s.DeletePod("default", "stuck")
	s.SetPod(stuck)
	launchedNode(s, "n6", true, stuck)
	launchedNode(s, "n7", true, stuck)
	if got := append(s.SettleLaunch("n6"), s.SettleLaunch("n7")...); len(got) != 0 {
		t.Fatalf("a re-created pod inherited misses: %+v", got)
	}
}

// TestSettleLaunches: the controller's way — a claim settles once its
// Initialized condition is `after` old, or when it is deleted; a claim
// not yet initialized waits.
func TestSettleLaunches(t *testing.T) {
	s := (&Objects{NodePools: cluster().NodePools}).Store()
	stuck := pod("stuck", "", "1", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"team": "a"} })
	s.SetPod(stuck)
	for i, name := range []string{"n1", "n2", "n3"} {
		launchedNode(s, name, true, stuck)
		if i == 0 {
			// Not yet after: nothing; after: one miss.
			if got := s.SettleLaunches(t0.Add(5*time.Second), 10*time.Second); len(got) != 0 {
				t.Fatalf("settled before `after`: %+v", got)
			}
			if s.launch.missed[refOf(stuck)] != nil {
				t.Fatalf("a miss counted before `after`")
			}
			s.SettleLaunches(t0.Add(10*time.Second), 10*time.Second)
			if m := s.launch.missed[refOf(stuck)]; len(m) != 1 {
				t.Fatalf("misses %v after `after`, want n1", m)
			}
			continue
		}
		if name == "n2" {
			s.DeleteNodeClaim(name) // consolidated before anyone asked
			continue
		}
	}
	got := s.SettleLaunches(t0.Add(20*time.Second), 10*time.Second)
	if len(got) != 1 || strings.Join(got[0].Claims, ",") != "n1,n2,n3" {
		t.Fatalf("given up %+v, want stuck after n1,n2,n3", got)
	}
	if again := s.SettleLaunches(t0.Add(30*time.Second), 10*time.Second); len(again) != 0 {
		t.Errorf("reported twice: %+v", again)
	}
}

func TestMissReason(t *testing.T) {
	node := &provisioning.Node{Name: "n", Labels: map[string]string{"capacity-spread": "2"},
		Taints:      []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("10")}}
	tolerate := []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want string
	}{
		{"taint", corev1.PodSpec{}, "the nodes have a taint it does not tolerate"},
		{"label value", corev1.PodSpec{Tolerations: tolerate, NodeSelector: map[string]string{"capacity-spread": "3"}},
			"it requires capacity-spread In [3], and the node has capacity-spread=2"},
		{"label absent", corev1.PodSpec{Tolerations: tolerate, NodeSelector: map[string]string{"team": "a"}},
			"it requires team In [a], and the node has no team label"},
		{"room", corev1.PodSpec{Tolerations: tolerate, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}}}}}, "the node launched for it cannot run it: "},
		{"fits", corev1.PodSpec{Tolerations: tolerate}, "other pods took the nodes launched for it first"},
	} {
		pod := &corev1.Pod{Spec: tc.spec}
		pod.Name, pod.Namespace = "p", "default"
		if got := MissReason(node, pod, provisioning.Volumes{}); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want it to start with %q", tc.name, got, tc.want)
		}
	}
}

// TestDaemonSetAntiAffinityIsAMiss: a DaemonSet's pod on the node that
// keeps the pod off by required anti-affinity is a refusal of the node.
func TestDaemonSetAntiAffinityIsAMiss(t *testing.T) {
	s := (&Objects{NodePools: cluster().NodePools}).Store()
	metrics := pod("metrics", "", "1", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "metrics"} })
	s.SetPod(metrics)
	yes := true
	for i, n := range []string{"n1", "n2", "n3"} {
		launchedNode(s, n, true, metrics)
		s.SetPod(pod("guard-"+n, n, "100m", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "guard", Controller: &yes}}
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "metrics"}}}}}}
		}))
		got := s.SettleLaunch(n)
		if i < 2 && len(got) != 0 || i == 2 && (len(got) != 1 || !strings.Contains(got[0].Why, "anti-affinity")) {
			t.Fatalf("after %s: given up %+v", n, got)
		}
	}
}

// TestUnawaited: a plan of only pods whose launched node (registered,
// unsettled) refuses them by itself is held back until the launch
// settles; one with another pod, or for pods whose node is still on its
// way, is kept. LaunchesDue says when the settling is due; AwaitedNodes
// names the registered Nodes of the launches not settled.
func TestUnawaited(t *testing.T) {
	s := (&Objects{NodePools: cluster().NodePools}).Store()
	stuck := pod("stuck", "", "1", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"team": "a"} })
	waiting := pod("waiting", "", "1")
	other := pod("other", "", "1")
	for _, p := range []*corev1.Pod{stuck, waiting, other} {
		s.SetPod(p)
	}
	launchedNode(s, "n1", true, stuck)
	launchedNode(s, "n2", false, waiting)
	plans := []*provisioning.NodeClaimPlan{{Pods: []*corev1.Pod{stuck}}, {Pods: []*corev1.Pod{stuck, other}}, {Pods: []*corev1.Pod{waiting}}}
	if got := s.AwaitedNodes(); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("awaited nodes %v, want n1 (n2 has not registered)", got)
	}
	kept := s.Unawaited(plans, false)
	if len(kept) != 2 || kept[0] != plans[1] || kept[1] != plans[2] {
		t.Fatalf("kept %d plans, want the mixed one and the one for the pod whose node is on its way", len(kept))
	}
	// While kube-scheduler binds, a plan only for pods awaiting a launch
	// waits, whatever keeps them off their node.
	if kept := s.Unawaited(plans, true); len(kept) != 1 || kept[0] != plans[1] {
		t.Fatalf("binding: kept %d plans, want only the one with a pod awaiting no launch", len(kept))
	}
	if len(plans) != 3 || plans[0].Pods[0] != stuck {
		t.Fatalf("Unawaited changed its argument")
	}
	if s.LaunchesDue(t0.Add(29*time.Second), 30*time.Second) {
		t.Errorf("due before its time")
	}
	if !s.LaunchesDue(t0.Add(30*time.Second), 30*time.Second) {
		t.Errorf("not due 30 s after n1's initialization")
	}
	s.SettleLaunches(t0.Add(30*time.Second), 30*time.Second)
	if kept := s.Unawaited(plans, false); len(kept) != 3 {
		t.Errorf("kept %d plans after n1 settled, want all 3", len(kept))
	}
	if got := s.AwaitedNodes(); len(got) != 0 {
		t.Errorf("awaited nodes %v after n1 settled, want none", got)
	}
	if s.LaunchesDue(t0.Add(time.Hour), 30*time.Second) {
		t.Errorf("due with n2 not initialized")
	}
}

// TestLaunchedClaimLaunches: a claim recorded before it launched (no
// providerID yet, as the controller creates it) keeps its record when
// launching sets its providerID.
func TestLaunchedClaimLaunches(t *testing.T) {
	s := (&Objects{NodePools: cluster().NodePools}).Store()
	stuck := pod("stuck", "", "1", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"team": "a"} })
	s.SetPod(stuck)
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{v1.LabelNodePool: "general"}}}
	s.SetNodeClaim(nc)
	s.LaunchedFor("n1", []*corev1.Pod{stuck})
	launched := nc.DeepCopy()
	launched.Status = v1.NodeClaimStatus{ProviderID: "kwok://n1", NodeName: "n1", Allocatable: resources("4"),
		Conditions: []v1.Condition{condition(v1.ConditionLaunched, metav1.ConditionTrue), condition(v1.ConditionInitialized, metav1.ConditionTrue)}}
	s.SetNodeClaim(launched)
	s.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{v1.LabelHostname: "n1"}},
		Spec:   corev1.NodeSpec{ProviderID: "kwok://n1"},
		Status: corev1.NodeStatus{Allocatable: resources("4"), Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}})
	if s.launch.planned["n1"] == nil {
		t.Fatal("the record went when the claim launched")
	}
	s.SettleLaunch("n1")
	if m := s.launch.missed[refOf(stuck)]; len(m) != 1 {
		t.Errorf("misses %v, want n1", m)
	}
}

// TestPoolChurnKeepsMisses: NodePools coming and going around a looping
// pod — one deleted, one's status updated (same generation) — neither
// forget its misses nor retry it; the third miss gives up on it.
func TestPoolChurnKeepsMisses(t *testing.T) {
	general := cluster().NodePools[0]
	other := general.DeepCopy()
	other.Name = "other"
	s := (&Objects{NodePools: []*v1.NodePool{general, other}}).Store()
	stuck := pod("stuck", "", "1", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"team": "a"} })
	s.SetPod(stuck)
	launchedNode(s, "n1", true, stuck)
	s.SettleLaunch("n1")
	s.SetNodePools([]*v1.NodePool{general}) // other deleted
	launchedNode(s, "n2", true, stuck)
	s.SettleLaunch("n2")
	updated := general.DeepCopy()
	updated.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	s.SetNodePools([]*v1.NodePool{updated}) // a status update
	launchedNode(s, "n3", true, stuck)
	if got := s.SettleLaunch("n3"); len(got) != 1 || strings.Join(got[0].Claims, ",") != "n1,n2,n3" {
		t.Fatalf("given up %+v, want stuck after n1,n2,n3", got)
	}
}

// TestPinLaunchedPods: with pinning on, a pending pod a claim was launched
// for is on that claim's node in provisioning snapshots, not pending,
// while it fits beside what kube-scheduler bound there and until the
// launch settles; the node's shared view is not changed, and a pod that
// no longer fits, one whose claim is going, and every pod with pinning
// off stay pending.
func TestPinLaunchedPods(t *testing.T) {
	s := (&Objects{NodePools: cluster().NodePools}).Store()
	a, b, c, d := pod("a", "", "1"), pod("b", "", "2"), pod("c", "", "1"), pod("d", "", "1")
	for _, p := range []*corev1.Pod{a, b, c, d} {
		s.SetPod(p)
	}
	launchedNode(s, "n1", true, a, b, c) // 4 cpus, registered
	launchedNode(s, "n2", false, d)      // on its way
	pinned := func() (pending, onN1, onN2 string, n1 *provisioning.Node) {
		snap := s.ProvisioningSnapshot()
		for _, n := range snap.Nodes {
			switch n.Name {
			case "n1":
				onN1, n1 = names(n.Pods), n
			case "n2":
				onN2 = names(n.Pods)
			}
		}
		return names(snap.Pods), onN1, onN2, n1
	}
	if pending, _, _, _ := pinned(); pending != "a,b,c,d" {
		t.Fatalf("pinning off: pending %q, want every pod", pending)
	}
	if _, repacked := s.ProvisioningSnapshots(); repacked != nil {
		t.Fatalf("pinning off: a snapshot without pins besides")
	}
	s.SetPinLaunchedPods(true)
	pending, onN1, onN2, n1 := pinned()
	if pending != "" || onN1 != "a,b,c" || onN2 != "d" {
		t.Fatalf("pending %q, on n1 %q, on n2 %q; want none pending, a,b,c on n1 and d on n2", pending, onN1, onN2)
	}
	if cpu := n1.Requested[corev1.ResourceCPU]; cpu.String() != "4" {
		t.Errorf("n1 requests %s cpu, want the pinned pods' 4", cpu.String())
	}
	if v := s.View("n1"); len(v.Pods) != 0 {
		t.Errorf("the shared view of n1 got pods %q", names(v.Pods))
	}
	if _, repacked := s.ProvisioningSnapshots(); repacked == nil || names(repacked.Pods) != "a,b,c,d" {
		t.Errorf("the snapshot without pins: %v, want every pending pod", repacked)
	} else {
		for _, n := range repacked.Nodes {
			if len(n.Pods) != 0 {
				t.Errorf("the snapshot without pins has pods %q on %s", names(n.Pods), n.Name)
			}
		}
	}

	// kube-scheduler binds d to n1: a and b still fit beside it, c does
	// not (pending order: a, b, c); n2 holds nothing pinned.
	s.SetPod(pod("d", "n1", "1"))
	if pending, onN1, onN2, _ := pinned(); pending != "c" || onN1 != "d,a,b" || onN2 != "" {
		t.Fatalf("after d bound to n1: pending %q, on n1 %q, on n2 %q; want c pending, d,a,b on n1", pending, onN1, onN2)
	}

	// n1 gets a taint d and a do not tolerate (a starting node's taints
	// do not count, Node.Taints): every pod launched for it is pending.
	tainted := s.nodes["n1"].DeepCopy()
	tainted.Spec.Taints = []corev1.Taint{{Key: "example.com/broken", Effect: corev1.TaintEffectNoSchedule}}
	s.SetNode(tainted)
	if pending, onN1, _, _ := pinned(); pending != "a,b,c" || onN1 != "d" {
		t.Fatalf("n1 tainted: pending %q, on n1 %q; want a,b,c pending, only d (bound) on n1", pending, onN1)
	}
	tainted.Spec.Taints = nil
	s.SetNode(tainted)

	// n2 is deleted with pods launched for it: they are pending again.
	s.LaunchedFor("n2", []*corev1.Pod{c})
	if pending, _, onN2, _ := pinned(); pending != "" || onN2 != "c" {
		t.Fatalf("c launched for n2: pending %q, on n2 %q", pending, onN2)
	}
	gone := s.claims["n2"].DeepCopy()
	gone.DeletionTimestamp = &metav1.Time{Time: t0}
	s.SetNodeClaim(gone)
	if pending, _, _, _ := pinned(); pending != "c" {
		t.Fatalf("claim n2 going: pending %q, want c", pending)
	}

	// n1's launch settles: its pods are planned again.
	s.SettleLaunch("n1")
	if pending, _, _, _ := pinned(); pending != "a,b,c" {
		t.Fatalf("after n1 settled: pending %q, want a,b,c", pending)
	}
}
