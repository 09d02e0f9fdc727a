package state

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

func withRV(rv string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.ResourceVersion = rv } }

func viewNames(s *Store) string {
	var out []string
	for _, n := range s.ProvisioningSnapshot().Nodes {
		kind := "managed"
		if n.NodePool == "" {
			kind = "unmanaged"
		}
		out = append(out, n.Name+"="+kind)
	}
	return strings.Join(out, ",")
}

// TestStoreFollowsEvents feeds a Store one event at a time, as informers
// do, and checks the join by providerID, which pods are on which node, and
// that a node's Version changes exactly when the node, its claim or its
// pods change.
func TestStoreFollowsEvents(t *testing.T) {
	s := NewStore(WaitForScheduler)
	claim := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-abc", ResourceVersion: "1", Labels: map[string]string{v1.LabelNodePool: "general"}},
		Status: v1.NodeClaimStatus{Allocatable: resources("4")}}
	s.SetNodeClaim(claim)
	if got := viewNames(s); got != "general-abc=managed" {
		t.Fatalf("a launching claim is a node of its own: %s", got)
	}
	if v := s.View("general-abc"); !v.InFlight || v.Version == "" {
		t.Errorf("launching claim: in-flight %v, version %q", v.InFlight, v.Version)
	}
	// The Node registers before the claim's status has its providerID.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-1", ResourceVersion: "2"}, Spec: corev1.NodeSpec{ProviderID: "aws:///zone-a/i-1"},
		Status: corev1.NodeStatus{Allocatable: resources("4")}}
	s.SetNode(node)
	if got := viewNames(s); got != "general-abc=managed,ip-1=unmanaged" {
		t.Fatalf("before the claim names its providerID the Node stands alone: %s", got)
	}
	launched := claim.DeepCopy()
	launched.ResourceVersion, launched.Status.ProviderID = "3", "aws:///zone-a/i-1"
	s.SetNodeClaim(launched)
	if got := viewNames(s); got != "ip-1=managed" {
		t.Fatalf("the claim and its Node are one node once joined by providerID: %s", got)
	}
	s.SetPod(pod("web-1", "ip-1", "1", withRV("4")))
	s.SetPod(pod("web-2", "", "1", withRV("5")))
	before := s.View("ip-1")
	if len(before.Pods) != 1 || len(s.PendingPods()) != 1 {
		t.Fatalf("pods on ip-1 %d, pending %d", len(before.Pods), len(s.PendingPods()))
	}
	if again := s.View("ip-1"); again != before {
		t.Error("a node nothing changed on is not rebuilt: caches keep hitting")
	}
	// web-2 is bound: ip-1 changes, its Version with it.
	s.SetPod(pod("web-2", "ip-1", "1", withRV("6")))
	after := s.View("ip-1")
	if len(after.Pods) != 2 || after.Version == before.Version || len(s.PendingPods()) != 0 {
		t.Errorf("after binding: %d pods, version %q (was %q), %d pending", len(after.Pods), after.Version, before.Version, len(s.PendingPods()))
	}
	if q := after.Requested[corev1.ResourceCPU]; q.String() != "2" {
		t.Errorf("requested %s, want the two pods' 2 cores", q.String())
	}
	// A pod without a resourceVersion makes the view uncacheable.
	s.SetPod(pod("hand-written", "ip-1", "1"))
	if v := s.View("ip-1"); v.Version != "" {
		t.Errorf("a node with a pod without resourceVersion has no Version, got %q", v.Version)
	}
	s.DeletePod("default", "hand-written")
	if v := s.View("ip-1"); v.Version != after.Version {
		t.Errorf("the same content gives the same Version: %q, %q", v.Version, after.Version)
	}
	// The claim goes; its Node stays as a node Joiner does not manage.
	s.DeleteNodeClaim("general-abc")
	if got := viewNames(s); got != "ip-1=unmanaged" {
		t.Fatalf("after the claim is deleted: %s", got)
	}
	if v := s.View("ip-1"); len(v.Pods) != 2 {
		t.Errorf("the unmanaged Node keeps its pods: %d", len(v.Pods))
	}
	s.DeleteNode("ip-1")
	if got := viewNames(s); got != "" {
		t.Errorf("after the Node is deleted: %q", got)
	}
}

// TestStoreMatchesCluster: a Store fed the objects one by one builds what
// an Objects built from the same lists does.
func TestStoreMatchesCluster(t *testing.T) {
	c := cluster()
	s := NewStore(WaitForScheduler)
	for _, p := range c.Pods { // pods before their nodes, as informers may deliver them
		s.SetPod(p)
	}
	for _, n := range c.Nodes {
		s.SetNode(n)
	}
	for _, nc := range c.NodeClaims {
		s.SetNodeClaim(nc)
	}
	s.SetNodePools(c.NodePools)
	s.SetInstanceTypes(c.InstanceTypes)
	s.SetDaemonSets(c.DaemonSets)
	got, want := s.ProvisioningSnapshot(), c.ProvisioningSnapshot()
	if !equalJSON(t, got.Nodes, want.Nodes) || names(got.Pods) != names(want.Pods) || names(got.DaemonSets) != names(want.DaemonSets) {
		t.Errorf("store %s / cluster %s", nodeNames(got.Nodes), nodeNames(want.Nodes))
	}
}

func nodeNames(nodes []*provisioning.Node) string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return strings.Join(out, ",")
}

// TestStoreUnderConcurrency: informer handlers write while reconcilers
// read and decide; under -race this fails if the Store or the engine's
// shared caches are not safe for it.
func TestStoreUnderConcurrency(t *testing.T) {
	c := cluster()
	s := c.Store()
	planner := provisioning.NewPlanner(c.NodePools, c.InstanceTypes, s.DaemonSetPods())
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		for i := 0; i < 50; i++ {
			node := "ip-10-0-0-1"
			if i%2 == 0 {
				node = ""
			}
			s.SetPod(pod("churn", node, "100m", withRV(strings.Repeat("x", i+1))))
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 20; i++ {
			_ = planner.Solve(context.Background(), s.ProvisioningSnapshot())
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 20; i++ {
			_ = s.DisruptionSnapshot(t0, func(*v1.NodeClaim) cloudprovider.DriftReason { return "" })
		}
	}()
	wg.Wait()
}

// TestConfigVersion: the version a host keeps its Planner by changes with
// the NodePools, instance types and DaemonSets, and not with pods.
func TestConfigVersion(t *testing.T) {
	s := NewStore(WaitForScheduler)
	v0 := s.ConfigVersion()
	s.SetPod(pod("web", "", "1", withRV("1")))
	if s.ConfigVersion() != v0 {
		t.Error("a pod changed the configuration version")
	}
	last := v0
	for _, change := range []func(){func() { s.SetNodePools(nil) }, func() { s.SetInstanceTypes(nil) }, func() { s.SetDaemonSets(nil) }} {
		change()
		if v := s.ConfigVersion(); v == last {
			t.Error("a configuration change kept the version")
		} else {
			last = v
		}
	}
}

// TestUnlaunchedClaimHoldsItsPods: a pass between a claim's creation and
// its launch (no size in its status yet) sees it as big as the least of the
// instance types it allows, so the pods it was made for go on it rather
// than on a second claim; once its instance types change it is resized.
func TestUnlaunchedClaimHoldsItsPods(t *testing.T) {
	c := cluster()
	s := NewStore(WaitForScheduler)
	np := c.NodePools[0]
	s.SetNodePoolsAndTypes([]*v1.NodePool{np}, map[string][]*cloudprovider.InstanceType{np.Name: {
		instanceType("small", 2, 0.1), instanceType("medium", 4, 0.2), instanceType("large", 8, 0.4)}})
	s.SetPod(pod("web-1", "", "1500m", withRV("1")))
	s.SetPod(pod("web-2", "", "1500m", withRV("2")))
	snap := s.ProvisioningSnapshot()
	res := provisioning.Solve(context.Background(), snap)
	if len(res.NewNodeClaims) != 1 {
		t.Fatalf("want one claim for the two pods, got %d", len(res.NewNodeClaims))
	}
	plan := res.NewNodeClaims[0]
	nc := NewNodeClaim(plan, "general-new", metav1.Time{})
	if _, marked := nc.Annotations[v1.AnnotationMinValuesRelaxed]; marked {
		t.Error("a claim whose minValues were kept is marked relaxed")
	}
	relaxed := *plan
	relaxed.MinValuesRelaxed = true
	if got := NewNodeClaim(&relaxed, "x", metav1.Time{}).Annotations[v1.AnnotationMinValuesRelaxed]; got != "true" {
		t.Errorf("a relaxed claim's %s = %q, want true", v1.AnnotationMinValuesRelaxed, got)
	}
	nc.ResourceVersion = "3"
	s.SetNodeClaim(nc) // created, not launched: no status
	v := s.View("general-new")
	if v == nil || !v.InFlight {
		t.Fatalf("the new claim is an in-flight node: %+v", v)
	}
	if q := v.Allocatable[corev1.ResourceCPU]; q.Cmp(resource.MustParse("3")) < 0 {
		t.Fatalf("the unlaunched claim allows %v, so it holds at least the least of them: %s cores", plan.InstanceTypes, q.String())
	}
	again := provisioning.Solve(context.Background(), s.ProvisioningSnapshot())
	if len(again.NewNodeClaims) != 0 || len(again.ExistingNodes) != 1 || len(again.ExistingNodes[0].Pods) != 2 {
		t.Fatalf("a pass before the launch: %d new claims, %d existing nodes used (want 0, and the new claim for both pods)", len(again.NewNodeClaims), len(again.ExistingNodes))
	}
	// New instance types (the least one the claim allows is gone): a new
	// size and a new Version, so no cache keeps the old one.
	s.SetInstanceTypes(map[string][]*cloudprovider.InstanceType{np.Name: {instanceType("small", 2, 0.1), instanceType("large", 8, 0.4)}})
	if w := s.View("general-new"); w.Version == v.Version || w.Allocatable.Cpu().Cmp(*v.Allocatable.Cpu()) <= 0 {
		t.Errorf("after the instance types changed: version %q (was %q), %s cores (was %s)", w.Version, v.Version, w.Allocatable.Cpu(), v.Allocatable.Cpu())
	}
}

// TestStoreObjects: what a Store holds, handed back as an Objects, is the
// same cluster to every decision — nodes, pending pods, the disruption
// candidates — with its objects listed by name; an object the Store was
// told is gone is not in it.
func TestStoreObjects(t *testing.T) {
	c := cluster()
	s := c.Store()
	back := s.Objects()
	if !equalJSON(t, back.StateNodes(), c.StateNodes()) {
		t.Error("the nodes differ")
	}
	if got, want := names(back.PendingPods()), names(c.PendingPods()); got != want {
		t.Errorf("pending %s, want %s", got, want)
	}
	if !equalJSON(t, back.DisruptionSnapshot(t0, nil).Nodes, c.DisruptionSnapshot(t0, nil).Nodes) {
		t.Error("the disruption candidates differ")
	}
	if got := names(back.Pods); got != "agent-x,coredns,done,fresh,leaving,nominated,pending,web-1" {
		t.Errorf("pods %s, want them by name", got)
	}
	if back.NodeClaims[0].Name != "general-abc" || back.Nodes[0].Name != "ip-10-0-0-1" || back.AssumeUnschedulable != c.AssumeUnschedulable {
		t.Errorf("claims %s…, nodes %s…: want them by name", back.NodeClaims[0].Name, back.Nodes[0].Name)
	}
	s.DeletePod("", "pending")
	s.DeleteNode("system-0")
	gone := s.Objects()
	if strings.Contains(names(gone.Pods), "pending") || len(gone.Nodes) != 1 {
		t.Errorf("after deletes: pods %s, %d nodes", names(gone.Pods), len(gone.Nodes))
	}
}

// The spread defaults reach the pods the Store hands out — pending pods,
// a node's pods, Pod — on copies, only for pods without constraints of
// their own and with a selector; a Respread after a selector changed
// applies them again and changes the node's Version, while what was handed
// out before keeps what it had.
func TestSpreadDefaults(t *testing.T) {
	s := NewStore(WaitForScheduler)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-1", ResourceVersion: "1"}, Status: corev1.NodeStatus{Allocatable: resources("4")}}
	s.SetNode(node)
	own := pod("own", "", "1", func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 5, TopologyKey: corev1.LabelHostname}}
	})
	given := []*corev1.Pod{pod("web-1", "", "1", withRV("2")), pod("db-1", "", "1", withRV("3")), pod("web-2", "ip-1", "1", withRV("4")), own}
	for _, p := range given {
		s.SetPod(p)
	}
	selectors := map[string]*metav1.LabelSelector{"web-1": {MatchLabels: map[string]string{"app": "web"}}, "web-2": {MatchLabels: map[string]string{"app": "web"}}}
	s.SetSpreadDefaults(SpreadDefaults{
		Constraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}},
		Selector:    func(p *corev1.Pod) *metav1.LabelSelector { return selectors[p.Name] },
	})
	spread := func(p *corev1.Pod) string {
		var out []string
		for _, c := range p.Spec.TopologySpreadConstraints {
			sel := "-"
			if c.LabelSelector != nil {
				sel = c.LabelSelector.MatchLabels["app"]
			}
			out = append(out, c.TopologyKey+"/"+sel)
		}
		return strings.Join(out, ",")
	}
	got := map[string]string{}
	for _, p := range s.PendingPods() {
		got[p.Name] = spread(p)
	}
	before := s.View("ip-1")
	got["web-2"] = spread(before.Pods[0])
	want := map[string]string{"web-1": "topology.kubernetes.io/zone/web", "db-1": "", "own": "kubernetes.io/hostname/-", "web-2": "topology.kubernetes.io/zone/web"}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: constraints %q, want %q", name, got[name], w)
		}
	}
	for _, p := range given {
		if p.Name != "own" && len(p.Spec.TopologySpreadConstraints) != 0 {
			t.Errorf("the pod %s handed to the Store was changed", p.Name)
		}
	}
	if s.Pod("default", "web-1") == given[0] {
		t.Error("Pod hands out the host's pod, not the one with the defaults")
	}

	// A Service now selects db-1 as well.
	selectors["db-1"] = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	s.Respread()
	if p := s.Pod("default", "db-1"); spread(p) != "topology.kubernetes.io/zone/db" {
		t.Errorf("db-1 after Respread: %q", spread(p))
	}
	after := s.View("ip-1")
	if after.Version == before.Version {
		t.Error("a Respread left the node's Version as it was: the engine's caches would keep its old answers")
	}
	if spread(before.Pods[0]) != "topology.kubernetes.io/zone/web" {
		t.Error("the view handed out before the Respread changed")
	}
}

func TestPodsOn(t *testing.T) {
	s := NewStore(WaitForScheduler)
	s.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-1", ResourceVersion: "1"}, Status: corev1.NodeStatus{Allocatable: resources("8")}})
	given := []*corev1.Pod{pod("web-2", "ip-1", "1"), pod("web-1", "ip-1", "1"), pod("db-1", "ip-2", "1"), pod("idle", "", "1"), pod("api-1", "ip-1", "1")}
	for _, p := range given {
		s.SetPod(p)
	}
	s.SetSpreadDefaults(SpreadDefaults{
		Constraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}},
		Selector:    func(*corev1.Pod) *metav1.LabelSelector { return &metav1.LabelSelector{} },
	})
	on := s.PodsOn("ip-1")
	if got, want := podNames(on), "[default/api-1@:ip-1 default/web-1@:ip-1 default/web-2@:ip-1]"; got != want {
		t.Fatalf("PodsOn(ip-1) = %s, want %s", got, want)
	}
	if on[0] != given[4] {
		t.Error("PodsOn hands out a copy, not the pod the host gave")
	}
	on[0] = nil // the caller's slice
	s.DeletePod("default", "web-1")
	if got, want := podNames(s.PodsOn("ip-1")), "[default/api-1@:ip-1 default/web-2@:ip-1]"; got != want {
		t.Errorf("after web-1's deletion PodsOn(ip-1) = %s, want %s", got, want)
	}
	if got := s.PodsOn("ip-9"); len(got) != 0 {
		t.Errorf("PodsOn of a node without pods = %d pods", len(got))
	}
}

// untried is a pending pod created at created that kube-scheduler has
// not tried (no PodScheduled condition).
func untried(name string, created time.Time, opts ...func(*corev1.Pod)) *corev1.Pod {
	return pod(name, "", "1", append([]func(*corev1.Pod){func(p *corev1.Pod) {
		p.Status.Conditions = nil
		p.CreationTimestamp = metav1.NewTime(created)
	}}, opts...)...)
}

// pending names the Store's pending pods, sorted.
func pending(s *Store) string {
	var out []string
	for _, p := range s.PendingPods() {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// TestSchedulerBacklog: a pod kube-scheduler has not tried within the
// backlog of its creation is pending as if it had found no room; one it
// has not had that long, another scheduler's, or any with the backlog
// off is left to the scheduler's verdict.
func TestSchedulerBacklog(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	s := NewStore(WaitForScheduler)
	s.SetPod(pod("marked", "", "1"))
	s.SetPod(untried("old", t0.Add(-6*time.Second)))
	s.SetPod(untried("new", t0.Add(-3*time.Second)))
	s.SetPod(untried("other", t0.Add(-time.Minute), func(p *corev1.Pod) { p.Spec.SchedulerName = "volcano" }))
	if got := pending(s); got != "marked" {
		t.Fatalf("backlog off: pending %q, want only the pod kube-scheduler found no room for", got)
	}
	s.SetSchedulerBacklog(5*time.Second, 0, clk)
	if got := pending(s); got != "marked,old" {
		t.Fatalf("backlog 5 s: pending %q, want old (untried 6 s) and marked", got)
	}
	clk.SetTime(t0.Add(2 * time.Second))
	if got := pending(s); got != "marked,new,old" {
		t.Fatalf("2 s later: pending %q, want new too (untried 5 s)", got)
	}
	s.SetSchedulerBacklog(0, 0, clk)
	if got := pending(s); got != "marked" {
		t.Fatalf("backlog off again: pending %q", got)
	}
}

// TestBurstQuiet: once no untried pod has arrived for the quiet, every
// untried pod that had arrived is pending, long before its backlog, and
// stays so when the next burst begins; updates, other schedulers' pods and
// pods kube-scheduler has tried do not restart the quiet. BacklogDue
// names the moment the quiet runs out.
func TestBurstQuiet(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	s := NewStore(WaitForScheduler)
	s.SetSchedulerBacklog(5*time.Second, time.Second, clk)
	s.SetPod(untried("a", t0))
	clk.SetTime(at(500 * time.Millisecond))
	s.SetPod(untried("b", at(500*time.Millisecond)))
	if got := pending(s); got != "" {
		t.Fatalf("during the burst: pending %q, want none", got)
	}
	if s.BacklogDue(t0, at(1400*time.Millisecond)) || !s.BacklogDue(at(1400*time.Millisecond), at(1500*time.Millisecond)) {
		t.Errorf("BacklogDue does not name 1.5 s, when the quiet after b ran out")
	}
	clk.SetTime(at(1500 * time.Millisecond))
	if got := pending(s); got != "a,b" {
		t.Fatalf("a quiet second after b: pending %q, want a,b", got)
	}
	clk.SetTime(at(2 * time.Second))
	s.SetPod(untried("c", at(2*time.Second)))
	if got := pending(s); got != "a,b" {
		t.Fatalf("the next burst began: pending %q, want a,b (released) and not c", got)
	}
	clk.SetTime(at(2500 * time.Millisecond))
	s.SetPod(untried("c", at(2*time.Second), func(p *corev1.Pod) { p.Labels = map[string]string{"updated": "yes"} }))
	s.SetPod(untried("volcano", at(2500*time.Millisecond), func(p *corev1.Pod) { p.Spec.SchedulerName = "volcano" }))
	s.SetPod(pod("tried", "", "1"))
	clk.SetTime(at(3 * time.Second))
	if got := pending(s); got != "a,b,c,tried" {
		t.Fatalf("a quiet second after c (an update, another scheduler's pod and a tried pod since): pending %q, want a,b,c,tried", got)
	}
	s.SetPod(untried("relisted", at(-10*time.Second)))
	if got := pending(s); got != "a,b,c,relisted,tried" {
		t.Errorf("an untried pod created before its backlog: pending %q, want it too", got)
	}
	s.SetSchedulerBacklog(0, 0, clk)
	if got := pending(s); got != "tried" {
		t.Errorf("backlog off: pending %q, want only the pod kube-scheduler tried", got)
	}
}

// TestReleaseBacklog: a burst still arriving is pending only as its pods
// reach their backlog, until ReleaseBacklog makes every pod that has
// arrived pending; a pod arriving after it waits as before. With the
// backlog off it changes nothing.
func TestReleaseBacklog(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	s := NewStore(WaitForScheduler)
	s.SetSchedulerBacklog(5*time.Second, time.Second, clk)
	for i, name := range []string{"a", "b", "c", "d", "e", "f", "g"} { // one every 900 ms: never a quiet second
		clk.SetTime(at(time.Duration(i) * 900 * time.Millisecond))
		s.SetPod(untried(name, clk.Now()))
	}
	if got := pending(s); got != "a" {
		t.Fatalf("5.4 s into the burst: pending %q, want a (5 s untried)", got)
	}
	s.ReleaseBacklog()
	if got := pending(s); got != "a,b,c,d,e,f,g" {
		t.Fatalf("released: pending %q, want every pod that has arrived", got)
	}
	clk.SetTime(at(6 * time.Second))
	s.SetPod(untried("h", clk.Now()))
	if got := pending(s); got != "a,b,c,d,e,f,g" {
		t.Fatalf("h arrived after the release: pending %q, want it left to kube-scheduler", got)
	}

	off := NewStore(WaitForScheduler)
	off.SetPod(untried("x", t0))
	off.ReleaseBacklog()
	if got := pending(off); got != "" {
		t.Fatalf("backlog off: pending %q after a release, want none (upstream waits for kube-scheduler)", got)
	}
}

// TestAddNodeClaimKeepsTheWatchsCopy: the copy a Create returned, handed in
// after the watch delivered the claim launched and joined to its Node,
// does not undo the launch; before the watch has it, it is the claim.
func TestAddNodeClaimKeepsTheWatchsCopy(t *testing.T) {
	s := NewStore(WaitForScheduler)
	created := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-abc", ResourceVersion: "1", Labels: map[string]string{v1.LabelNodePool: "general"}},
		Status: v1.NodeClaimStatus{Allocatable: resources("4")}}
	launched := created.DeepCopy()
	launched.ResourceVersion, launched.Status.ProviderID = "3", "aws:///zone-a/i-1"
	s.SetNodeClaim(launched)
	s.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-1", ResourceVersion: "2"}, Spec: corev1.NodeSpec{ProviderID: "aws:///zone-a/i-1"},
		Status: corev1.NodeStatus{Allocatable: resources("4")}})
	s.AddNodeClaim(created)
	if got := viewNames(s); got != "ip-1=managed" {
		t.Errorf("after the Create's copy came in late: %s, want the launched claim joined to its Node", got)
	}
	fresh := NewStore(WaitForScheduler)
	fresh.AddNodeClaim(created)
	if v := fresh.View("general-abc"); v == nil || !v.InFlight {
		t.Errorf("a claim the watch has not delivered yet: %+v, want it in flight", v)
	}
}
