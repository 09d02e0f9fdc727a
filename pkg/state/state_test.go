package state

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/kubescheduler"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func instanceType(name string, cpu int64, price float64) *cloudprovider.InstanceType {
	return &cloudprovider.InstanceType{Name: name,
		Requirements: scheduling.NewRequirements(
			scheduling.NewRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, name),
			scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, "zone-a"),
			scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand)),
		Offerings: cloudprovider.Offerings{{Zone: "zone-a", CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true}},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(4*cpu<<30, resource.BinarySI), corev1.ResourcePods: resource.MustParse("110")}}
}

func resources(cpu string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
}

func condition(t string, s metav1.ConditionStatus) v1.Condition {
	return v1.Condition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(t0)}
}

func pod(name, node, cpu string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
	if node == "" {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// cluster is a small cluster as informers would show it: an initialized
// node with its claim, a claim still launching (no Node yet), a node
// Joiner does not manage, and pods in every state.
func cluster() *Objects {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}}}
	np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("0s")
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "100%"}}

	ready := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-abc", Labels: map[string]string{v1.LabelNodePool: "general"},
		CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))}}
	ready.Spec.ExpireAfter = v1.MustParseNillableDuration("720h")
	ready.Status = v1.NodeClaimStatus{ProviderID: "aws:///zone-a/i-1", NodeName: "ip-10-0-0-1", Allocatable: resources("4"),
		Conditions: []v1.Condition{condition(v1.ConditionLaunched, metav1.ConditionTrue), condition(v1.ConditionRegistered, metav1.ConditionTrue),
			condition(v1.ConditionInitialized, metav1.ConditionTrue)}}
	launching := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-def", Labels: map[string]string{v1.LabelNodePool: "general"},
		CreationTimestamp: metav1.NewTime(t0.Add(-time.Minute))}}
	launching.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m.4x"}},
		{Key: "team", Operator: corev1.NodeSelectorOpIn, Values: []string{"checkout"}},
		{Key: v1.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a", "zone-b"}}}
	launching.Spec.StartupTaints = []corev1.Taint{{Key: "cilium.io/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}}
	launching.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "checkout", Effect: corev1.TaintEffectNoSchedule}}
	launching.Spec.Taints = append(launching.Spec.Taints, launching.Spec.StartupTaints...)
	launching.Status = v1.NodeClaimStatus{ProviderID: "aws:///zone-a/i-2", Allocatable: resources("4"),
		Conditions: []v1.Condition{condition(v1.ConditionLaunched, metav1.ConditionTrue)}}

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-0-1", Labels: map[string]string{
		v1.LabelNodePool: "general", v1.LabelInstanceType: "m.4x", v1.LabelZone: "zone-a", v1.LabelCapacityType: v1.CapacityTypeOnDemand,
		v1.LabelHostname: "ip-10-0-0-1"}},
		Spec:   corev1.NodeSpec{ProviderID: "aws:///zone-a/i-1"},
		Status: corev1.NodeStatus{Allocatable: resources("3920m"), Capacity: resources("4"), Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	system := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "system-0", Labels: map[string]string{v1.LabelHostname: "system-0"}},
		Spec:   corev1.NodeSpec{ProviderID: "aws:///zone-a/i-0"},
		Status: corev1.NodeStatus{Allocatable: resources("2"), Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}

	yes := true
	now := metav1.NewTime(t0)
	pods := []*corev1.Pod{
		pod("web-1", "ip-10-0-0-1", "1"),
		pod("agent-x", "ip-10-0-0-1", "100m", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: &yes}}
		}),
		pod("done", "ip-10-0-0-1", "1", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		pod("coredns", "system-0", "500m"),
		pod("pending", "", "3"),
		pod("nominated", "", "1", func(p *corev1.Pod) { p.Status.NominatedNodeName = "system-0" }),
		pod("leaving", "", "1", func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
		pod("fresh", "", "1", func(p *corev1.Pod) { p.Status.Conditions = nil }),
	}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}}}
	return &Objects{NodePools: []*v1.NodePool{np}, NodeClaims: []*v1.NodeClaim{launching, ready}, Nodes: []*corev1.Node{system, node},
		Pods: pods, DaemonSets: []*appsv1.DaemonSet{ds},
		InstanceTypes: map[string][]*cloudprovider.InstanceType{"general": {instanceType("m.2x", 2, 0.1), instanceType("m.4x", 4, 0.2)}}}
}

func names(pods []*corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return strings.Join(out, ",")
}

func TestProvisioningSnapshot(t *testing.T) {
	c := cluster()
	snap := c.ProvisioningSnapshot()
	if got := names(snap.Pods); got != "pending" {
		t.Errorf("pending pods %q: only the one kube-scheduler gave up on (not nominated, terminating, or never tried)", got)
	}
	c.AssumeUnschedulable = true
	if got := names(c.PendingPods()); got != "fresh,pending" {
		t.Errorf("with AssumeUnschedulable, pending %q: a pod no scheduler tried counts too (oldest first, then by name)", got)
	}
	byName := map[string]*provisioning.Node{}
	var order []string
	for _, n := range snap.Nodes {
		byName[n.Name] = n
		order = append(order, n.Name)
	}
	if got := strings.Join(order, ","); got != "general-def,ip-10-0-0-1,system-0" {
		t.Fatalf("nodes %s: the registered claim joins its Node by providerID, the launching claim stands alone", got)
	}
	registered := byName["ip-10-0-0-1"]
	if registered.NodePool != "general" || registered.InFlight || names(registered.Pods) != "agent-x,web-1" {
		t.Errorf("registered node: pool %q in-flight %v pods %s (by namespace and name; the finished pod frees its room)", registered.NodePool, registered.InFlight, names(registered.Pods))
	}
	if q := registered.Allocatable[corev1.ResourceCPU]; q.String() != "3920m" {
		t.Errorf("a registered node's allocatable is the Node's: %s", q.String())
	}
	inflight := byName["general-def"]
	if !inflight.InFlight || inflight.Labels["team"] != "checkout" || inflight.Labels[v1.LabelInstanceType] != "m.4x" ||
		inflight.Labels[v1.LabelHostname] != "general-def" || inflight.Labels[v1.LabelZone] != "" {
		t.Errorf("in-flight claim: %v, labels %v (single-valued requirements only)", inflight.InFlight, inflight.Labels)
	}
	if len(inflight.Taints) != 1 || inflight.Taints[0].Key != "dedicated" {
		t.Errorf("in-flight taints %v: the startup taint does not count before initialization", inflight.Taints)
	}
	if system := byName["system-0"]; system.NodePool != "" || system.InFlight {
		t.Errorf("an unmanaged node: pool %q in-flight %v", system.NodePool, system.InFlight)
	}
	if len(snap.DaemonSets) != 1 || snap.DaemonSets[0].Namespace != "kube-system" || !strings.Contains(names(snap.DaemonSets), "agent") {
		t.Fatalf("DaemonSet pods %v", snap.DaemonSets)
	}
	if q := snap.DaemonSets[0].Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.String() != "100m" {
		t.Errorf("a DaemonSet pod requests its limit: %s", q.String())
	}
	// The same snapshot through provisioning: the 3-core pod fits nowhere
	// (the registered node has 2.82 cores left, the in-flight claim is
	// tainted), so it gets a claim of its own.
	res := provisioning.Solve(context.Background(), snap)
	if len(res.NewNodeClaims) != 1 || names(res.NewNodeClaims[0].Pods) != "pending" || len(res.Unschedulable) != 0 {
		t.Fatalf("solve: %d claims, %d unschedulable", len(res.NewNodeClaims), len(res.Unschedulable))
	}
	if got := res.NewNodeClaims[0].InstanceTypes[0].Name; got != "m.4x" {
		t.Errorf("3 cores and the DaemonSet's 100m need m.4x, got %s", got)
	}
}

// TestConcurrentReads: hosts read one Objects from several goroutines (a
// provisioning and a disruption reconciler); under -race this fails if
// building a snapshot writes anything shared.
func TestConcurrentReads(t *testing.T) {
	c := cluster()
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func() { defer wg.Done(); _ = provisioning.Solve(context.Background(), c.ProvisioningSnapshot()) }()
		go func() {
			defer wg.Done()
			_ = disruption.Compute(context.Background(), c.DisruptionSnapshot(t0, nil), disruption.Options{})
		}()
	}
	wg.Wait()
}

func TestDisruptionSnapshot(t *testing.T) {
	c := cluster()
	dc := c.DisruptionSnapshot(t0, func(nc *v1.NodeClaim) cloudprovider.DriftReason {
		if nc.Name == "general-abc" {
			return "AMIDrift"
		}
		return ""
	})
	if len(dc.Nodes) != 2 || len(dc.Unmanaged) != 1 || len(dc.Pending) != 1 {
		t.Fatalf("%d candidates, %d unmanaged, %d pending: want the launching claim and the registered managed node, the system node, one pending pod", len(dc.Nodes), len(dc.Unmanaged), len(dc.Pending))
	}
	if launching := dc.Nodes[0]; launching.Node.Name != "general-def" || launching.Initialized || launching.NotReady || !launching.Node.InFlight {
		t.Errorf("the launching claim is capacity pods may move to, not yet a candidate: %+v", launching)
	}
	cand := dc.Nodes[1]
	if cand.Node.Name != "ip-10-0-0-1" || cand.NodeClaim.Name != "general-abc" || cand.InstanceType != "m.4x" || cand.Zone != "zone-a" ||
		cand.CapacityType != v1.CapacityTypeOnDemand || cand.Price != 0.2 || !cand.Initialized || cand.Disrupting || cand.NotReady || cand.NodeClassDrift != "AMIDrift" {
		t.Errorf("candidate %+v", cand)
	}
	// The pending pod keeps consolidation waiting; drift acts.
	d := disruption.Compute(context.Background(), dc, disruption.Options{})
	if len(d.Commands) != 1 || d.Commands[0].Method != disruption.MethodDrift {
		t.Fatalf("want a drift command, got %v (blocked %v)", d.Commands, d.Blocked)
	}
	// A node tainted karpenter.sh/disrupted is already being disrupted.
	c.Nodes[1].Spec.Taints = []corev1.Taint{v1.DisruptedTaint}
	if cand := c.DisruptionSnapshot(t0, nil).Nodes[1]; !cand.Disrupting {
		t.Error("a node with the disrupted taint is disrupting")
	}
}

// TestStateReadsOnly: building snapshots writes nothing into the objects.
func TestStateReadsOnly(t *testing.T) {
	c := cluster()
	before := cluster()
	_ = c.ProvisioningSnapshot()
	_ = c.DisruptionSnapshot(t0, nil)
	for i := range c.Pods {
		if !equalJSON(t, c.Pods[i], before.Pods[i]) {
			t.Errorf("pod %s changed", c.Pods[i].Name)
		}
	}
	for i := range c.NodeClaims {
		if !equalJSON(t, c.NodeClaims[i], before.NodeClaims[i]) {
			t.Errorf("claim %s changed", c.NodeClaims[i].Name)
		}
	}
	if !equalJSON(t, c.DaemonSets[0], before.DaemonSets[0]) {
		t.Error("DaemonSet changed")
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

// TestSharedCachesUnderConcurrency: a controller's reconcilers share one
// Planner, one disruption Memo and one Binder over the same snapshot
// objects. Under -race this fails if any of them writes into the nodes or
// pods it is given, or guards its own caches badly; and every concurrent
// answer equals the one computed alone.
func TestSharedCachesUnderConcurrency(t *testing.T) {
	c := cluster()
	ctx := context.Background()
	planner := provisioning.NewPlanner(c.NodePools, c.InstanceTypes, c.DaemonSetPods())
	binder := kubescheduler.NewBinder(kubescheduler.BindOptions{})
	snap := c.ProvisioningSnapshot()
	dc := c.DisruptionSnapshot(t0, func(nc *v1.NodeClaim) cloudprovider.DriftReason { return "AMIDrift" })
	dc.Planner, dc.Memo = planner, disruption.NewMemo()
	wantClaims := len(planner.Solve(ctx, snap).NewNodeClaims)
	wantCommands := len(disruption.Compute(ctx, dc, disruption.Options{}).Commands)
	var wg sync.WaitGroup
	errs := make(chan string, 32)
	for i := 0; i < 8; i++ {
		wg.Add(3)
		go func() {
			defer wg.Done()
			if got := len(planner.Solve(ctx, snap).NewNodeClaims); got != wantClaims {
				errs <- fmt.Sprintf("Solve: %d claims, want %d", got, wantClaims)
			}
		}()
		go func() {
			defer wg.Done()
			if got := len(disruption.Compute(ctx, dc, disruption.Options{}).Commands); got != wantCommands {
				errs <- fmt.Sprintf("Compute: %d commands, want %d", got, wantCommands)
			}
		}()
		go func() { defer wg.Done(); _ = binder.Bind(snap.Nodes, snap.Pods) }()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
