package disruption

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// instanceType: cpu cores, 4 GiB a core, on-demand 0.05/core-hour, spot 30 %.
func instanceType(name string, cpu int64) *cloudprovider.InstanceType {
	price := 0.05 * float64(cpu)
	return &cloudprovider.InstanceType{
		Name: name,
		Requirements: scheduling.NewRequirements(
			scheduling.NewRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, name),
			scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, "zone-a"),
			scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot, v1.CapacityTypeOnDemand),
		),
		Offerings: cloudprovider.Offerings{
			{Zone: "zone-a", CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
			{Zone: "zone-a", CapacityType: v1.CapacityTypeSpot, Price: price * 0.3, Available: true},
		},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(4*cpu<<30, resource.BinarySI), corev1.ResourcePods: resource.MustParse("110")},
	}
}

func types() []*cloudprovider.InstanceType {
	return []*cloudprovider.InstanceType{instanceType("small", 2), instanceType("medium", 4), instanceType("large", 16)}
}

func nodePool(name string, mutate ...func(*v1.NodePool)) *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}}}
	np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("720h")
	np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("30s")
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "100%"}}
	for _, m := range mutate {
		m(np)
	}
	return np
}

var seq int

func podOn(cpu string, opts ...func(*corev1.Pod)) *corev1.Pod {
	seq++
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", seq), Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func daemonPod() *corev1.Pod {
	return podOn("100m", func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: &yes}}
	})
}

// node builds a managed node of an instance type, created an hour ago,
// last touched by a pod 10 minutes ago, with the pool's current hash.
func node(name string, np *v1.NodePool, it *cloudprovider.InstanceType, capacityType string, pods ...*corev1.Pod) *Candidate {
	alloc := it.Allocatable()
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
		Annotations: map[string]string{v1.AnnotationNodePoolHash: TemplateHash(np)}}}
	nc.Spec.ExpireAfter = np.Spec.Template.Spec.ExpireAfter
	nc.Status.LastPodEventTime = metav1.NewTime(t0.Add(-10 * time.Minute))
	price := it.Offerings[0].Price
	if capacityType == v1.CapacityTypeSpot {
		price = it.Offerings[1].Price
	}
	return &Candidate{
		Node: &provisioning.Node{Name: name, NodePool: np.Name, Allocatable: alloc, Capacity: it.Capacity, Pods: pods,
			Labels: map[string]string{v1.LabelInstanceType: it.Name, v1.LabelZone: "zone-a", v1.LabelCapacityType: capacityType,
				v1.LabelNodePool: np.Name, v1.LabelHostname: name}},
		NodeClaim: nc, NodePool: np.Name, InstanceType: it.Name, Zone: "zone-a", CapacityType: capacityType, Price: price, Initialized: true,
	}
}

func cluster(np *v1.NodePool, nodes ...*Candidate) *Snapshot {
	return &Snapshot{Now: t0, NodePools: []*v1.NodePool{np}, InstanceTypes: map[string][]*cloudprovider.InstanceType{np.Name: types()}, Nodes: nodes}
}

func only(t *testing.T, d *Decision) *Command {
	t.Helper()
	if len(d.Commands) != 1 {
		t.Fatalf("want exactly one command, got %v (blocked %v)", d.Commands, d.Blocked)
	}
	return d.Commands[0]
}

func names(cs []*Candidate) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Node.Name)
	}
	return strings.Join(out, ",")
}

func TestEmpty(t *testing.T) {
	np := nodePool("p")
	medium := types()[1]
	c := cluster(np, node("empty", np, medium, v1.CapacityTypeOnDemand, daemonPod()), node("busy", np, medium, v1.CapacityTypeOnDemand, podOn("3")))
	cmd := only(t, Compute(context.Background(), c, Options{}))
	if cmd.Method != MethodEmpty || names(cmd.Candidates) != "empty" || len(cmd.Replacements) != 0 {
		t.Fatalf("got %s", cmd)
	}
	// A node whose only pods are terminating is empty — unless one is a
	// StatefulSet's: its replacement waits for it to go, so upstream
	// counts it as still to be placed.
	gone := metav1.NewTime(t0.Add(-5 * time.Second))
	terminating := func(kind string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.DeletionTimestamp = &gone
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: "x"}}
		}
	}
	c = cluster(np, node("leaving", np, medium, v1.CapacityTypeOnDemand, podOn("1", terminating("ReplicaSet"))),
		node("busy", np, medium, v1.CapacityTypeOnDemand, podOn("3")))
	if cmd := only(t, Compute(context.Background(), c, Options{})); cmd.Method != MethodEmpty || names(cmd.Candidates) != "leaving" {
		t.Fatalf("a node of a terminating ReplicaSet pod: got %s, want it deleted as empty", cmd)
	}
	c = cluster(np, node("db", np, medium, v1.CapacityTypeOnDemand, podOn("1", terminating("StatefulSet"))),
		node("busy", np, medium, v1.CapacityTypeOnDemand, podOn("3")))
	for _, cmd := range Compute(context.Background(), c, Options{}).Commands {
		if cmd.Method == MethodEmpty {
			t.Fatalf("a node of a terminating StatefulSet pod is not empty: got %s", cmd)
		}
	}
	// consolidateAfter not yet elapsed since the last pod event.
	c = cluster(np, node("empty", np, medium, v1.CapacityTypeOnDemand))
	c.Nodes[0].NodeClaim.Status.LastPodEventTime = metav1.NewTime(t0.Add(-10 * time.Second))
	if d := Compute(context.Background(), c, Options{}); len(d.Commands) != 0 {
		t.Fatalf("consolidateAfter 30s, last pod event 10s ago: want nothing, got %s", d.Commands[0])
	}
	// consolidateAfter: Never disables consolidation altogether.
	never := nodePool("p", func(np *v1.NodePool) { np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never") })
	c = cluster(never, node("empty", never, medium, v1.CapacityTypeOnDemand))
	if d := Compute(context.Background(), c, Options{}); len(d.Commands) != 0 {
		t.Fatalf("Never: got %s", d.Commands[0])
	}
}

func TestMethodOrder(t *testing.T) {
	np := nodePool("p")
	medium := types()[1]
	drifted := node("drifted", np, medium, v1.CapacityTypeOnDemand, podOn("1"))
	drifted.NodeClaim.Annotations[v1.AnnotationNodePoolHash] = "old"
	c := cluster(np, drifted, node("empty", np, medium, v1.CapacityTypeOnDemand))
	if cmd := only(t, Compute(context.Background(), c, Options{})); cmd.Method != MethodEmpty {
		t.Fatalf("empty comes before drift: got %s", cmd)
	}
	c = cluster(np, drifted, node("busy", np, medium, v1.CapacityTypeOnDemand, podOn("3500m")))
	cmd := only(t, Compute(context.Background(), c, Options{}))
	if cmd.Method != MethodDrift || names(cmd.Candidates) != "drifted" || len(cmd.Replacements) != 1 {
		t.Fatalf("drift with a replacement: got %s", cmd)
	}
}

func TestDriftReasons(t *testing.T) {
	np := nodePool("p")
	medium := types()[1]
	p := &pass{c: cluster(np), pools: map[string]*v1.NodePool{"p": np}}
	fresh := node("n", np, medium, v1.CapacityTypeOnDemand)
	if r := p.driftReason(fresh); r != "" {
		t.Fatalf("a fresh node is not drifted: %s", r)
	}
	changed := nodePool("p", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoSchedule}}
	})
	p.pools["p"] = changed
	if r := p.driftReason(fresh); !strings.Contains(r, "template changed") {
		t.Errorf("template change: %q", r)
	}
	budgetsOnly := nodePool("p", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}} })
	p.pools["p"] = budgetsOnly
	if r := p.driftReason(fresh); r != "" {
		t.Errorf("disruption settings do not drift nodes: %q", r)
	}
	spotOnly := nodePool("p", func(np *v1.NodePool) { np.Spec.Template.Spec.Requirements[0].Values = []string{v1.CapacityTypeSpot} })
	p.pools["p"] = spotOnly
	if r := p.driftReason(fresh); !strings.Contains(r, "no longer satisfies") {
		t.Errorf("requirement drift: %q", r)
	}
	// A label the claim was scheduled with (one value of a requirement that
	// allows several) is the pool's own choice, not drift.
	spread := nodePool("p", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
			Key: "capacity-spread", Operator: corev1.NodeSelectorOpIn, Values: []string{"2", "3", "4", "5"}})
	})
	p.pools["p"], p.hashes = spread, nil
	labelled := node("l", spread, medium, v1.CapacityTypeOnDemand)
	labelled.Node.Labels["capacity-spread"] = "3"
	if r := p.driftReason(labelled); r != "" {
		t.Errorf("a node labelled with one value its pool allows is not drifted: %q", r)
	}
	labelled.Node.Labels["capacity-spread"] = "1"
	if r := p.driftReason(labelled); !strings.Contains(r, "no longer satisfies") {
		t.Errorf("a value the pool no longer allows is drift: %q", r)
	}
	// A NodePool that carries its hash (written by upstream's NodePool
	// controller, as a cluster's dump shows it) is compared by that hash,
	// and only with claims hashed by the same version.
	annotated := nodePool("p", func(np *v1.NodePool) {
		np.Annotations = map[string]string{v1.AnnotationNodePoolHash: "1234", v1.AnnotationNodePoolHashVersion: "v3"}
	})
	p.pools["p"], p.hashes = annotated, nil
	claimed := node("c", annotated, medium, v1.CapacityTypeOnDemand)
	claimed.NodeClaim.Annotations = map[string]string{v1.AnnotationNodePoolHash: "1234", v1.AnnotationNodePoolHashVersion: "v3"}
	if r := p.driftReason(claimed); r != "" {
		t.Errorf("the claim's hash is the pool's: %q", r)
	}
	claimed.NodeClaim.Annotations[v1.AnnotationNodePoolHash] = "9999"
	if r := p.driftReason(claimed); !strings.Contains(r, "template changed") {
		t.Errorf("another hash of the same version is drift: %q", r)
	}
	claimed.NodeClaim.Annotations[v1.AnnotationNodePoolHashVersion] = "v2"
	if r := p.driftReason(claimed); r != "" {
		t.Errorf("hashes of different versions do not compare: %q", r)
	}
	p.pools["p"], p.hashes = np, nil
	gone := node("g", np, instanceType("retired", 4), v1.CapacityTypeOnDemand)
	if r := p.driftReason(gone); !strings.Contains(r, "retired is no longer offered") {
		t.Errorf("instance type gone: %q", r)
	}
	// With a Memo, answers are kept per node and NodePool object.
	p.c.Memo = NewMemo()
	for i, tc := range []struct {
		pool    *v1.NodePool
		drifted bool
	}{{np, false}, {spotOnly, true}, {spotOnly, true}, {np, false}} {
		p.pools["p"] = tc.pool
		p.hashes = nil
		if r := p.driftReason(fresh); (r != "") != tc.drifted {
			t.Errorf("with a Memo, step %d: %q, drifted want %v", i, r, tc.drifted)
		}
	}
	p.pools["p"] = np
	fresh.NodeClassDrift = "AMIDrift"
	if r := p.driftReason(fresh); r != "node class: AMIDrift" {
		t.Errorf("node class drift: %q", r)
	}
}

func TestSingleNodeConsolidation(t *testing.T) {
	np := nodePool("p")
	small, medium, large := types()[0], types()[1], types()[2]
	// Delete: the pod on "a" fits in the room left on "b".
	c := cluster(np, node("a", np, medium, v1.CapacityTypeOnDemand, podOn("1")), node("b", np, medium, v1.CapacityTypeOnDemand, podOn("2")))
	cmd := only(t, Compute(context.Background(), c, Options{}))
	if cmd.Method != MethodSingleNode || len(cmd.Replacements) != 0 || names(cmd.Candidates) != "a" {
		t.Fatalf("want a deleted (a and b into one medium is no better), got %s", cmd)
	}
	// Replace: one pod of 1 core on a 16-core node moves to a 2-core node.
	c = cluster(np, node("big", np, large, v1.CapacityTypeOnDemand, podOn("1")))
	cmd = only(t, Compute(context.Background(), c, Options{}))
	if len(cmd.Replacements) != 1 || cmd.Replacements[0].InstanceTypes[0].Name != "small" || cmd.Savings <= 0 {
		t.Fatalf("want big replaced by small, got %s", cmd)
	}
	// Never by the same type: a full small node stays.
	c = cluster(np, node("s", np, small, v1.CapacityTypeOnDemand, podOn("1500m")))
	if d := Compute(context.Background(), c, Options{}); len(d.Commands) != 0 {
		t.Fatalf("nothing cheaper than small: got %s", d.Commands[0])
	}
	// WhenEmpty pools are not consolidated when underutilized.
	whenEmpty := nodePool("p", func(np *v1.NodePool) { np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty })
	c = cluster(whenEmpty, node("big", whenEmpty, large, v1.CapacityTypeOnDemand, podOn("1")))
	if d := Compute(context.Background(), c, Options{}); len(d.Commands) != 0 {
		t.Fatalf("WhenEmpty: got %s", d.Commands[0])
	}
}

func TestSpotToSpot(t *testing.T) {
	spot := nodePool("p", func(np *v1.NodePool) { np.Spec.Template.Spec.Requirements[0].Values = []string{v1.CapacityTypeSpot} })
	c := cluster(spot, node("big", spot, types()[2], v1.CapacityTypeSpot, podOn("1")))
	if d := Compute(context.Background(), c, Options{}); len(d.Commands) != 0 || len(d.Blocked) != 1 || d.Blocked[0].Reason.Code != BlockSpotToSpotOff {
		t.Fatalf("spot-to-spot is off by default, and says so: got %v, blocked %v", d.Commands, d.Blocked)
	}
	// Even when on, it needs 15 cheaper types; this cluster has 2.
	if d := Compute(context.Background(), c, Options{SpotToSpot: true}); len(d.Commands) != 0 || len(d.Blocked) != 1 ||
		d.Blocked[0].Reason != (BlockReason{Code: BlockSpotToSpotTypes, Needed: 15, Found: 2}) {
		t.Fatalf("spot-to-spot with 2 cheaper types: got %v, blocked %v", d.Commands, d.Blocked)
	}
	var many []*cloudprovider.InstanceType
	for i := 1; i <= 16; i++ {
		many = append(many, instanceType(fmt.Sprintf("t%02d", i), int64(i)))
	}
	c.InstanceTypes["p"] = append(many, types()...)
	cmd := only(t, Compute(context.Background(), c, Options{SpotToSpot: true}))
	if len(cmd.Replacements) != 1 || len(cmd.Replacements[0].InstanceTypes) != MinSpotToSpotTypes {
		t.Fatalf("spot-to-spot with enough types launches the cheapest %d: %s", MinSpotToSpotTypes, cmd)
	}
}

// TestOnDemandToSpotLaunchesOnlySpot: an on-demand node whose pool also
// allows spot is replaced by a plan priced as spot and allowed only spot,
// as upstream, so a spot shortage cannot turn the saving into a dearer
// on-demand node.
func TestOnDemandToSpotLaunchesOnlySpot(t *testing.T) {
	both := nodePool("p", func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements[0].Values = []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand}
	})
	// A medium on-demand node (0.20/h) with 1 core used: a medium spot
	// (0.06/h) is cheaper, though no on-demand type smaller than small is.
	c := cluster(both, node("od", both, types()[1], v1.CapacityTypeOnDemand, podOn("1500m")))
	cmd := only(t, Compute(context.Background(), c, Options{}))
	if len(cmd.Replacements) != 1 {
		t.Fatalf("want a replacement: %s", cmd)
	}
	if ct := cmd.Replacements[0].Requirements.Get(v1.LabelCapacityType); ct.Has(v1.CapacityTypeOnDemand) || !ct.Has(v1.CapacityTypeSpot) {
		t.Errorf("the replacement may launch as %v, want spot only", ct.Values())
	}
}

func TestBlockers(t *testing.T) {
	np := nodePool("p")
	medium := types()[1]
	dnd := podOn("1", func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} })
	guarded := podOn("1", func(p *corev1.Pod) { p.Labels["app"] = "db" })
	tests := []struct {
		name  string
		nodes func() []*Candidate
		pdbs  []*policyv1.PodDisruptionBudget
		want  BlockCode
	}{
		{"do-not-disrupt pod", func() []*Candidate { return []*Candidate{node("a", np, medium, v1.CapacityTypeOnDemand, dnd)} }, nil, BlockPodDoNotDisrupt},
		{"do-not-disrupt node", func() []*Candidate {
			n := node("a", np, medium, v1.CapacityTypeOnDemand)
			n.NodeClaim.Annotations[v1.AnnotationDoNotDisrupt] = "true"
			return []*Candidate{n}
		}, nil, BlockNodeDoNotDisrupt},
		{"PDB allows no eviction", func() []*Candidate { return []*Candidate{node("a", np, medium, v1.CapacityTypeOnDemand, guarded)} },
			[]*policyv1.PodDisruptionBudget{{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
				Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
				Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0}}}, BlockPDB},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(np, tc.nodes()...)
			c.PDBs = tc.pdbs
			c.InstanceTypes["p"] = []*cloudprovider.InstanceType{types()[0], medium}
			// Without a Memo, and twice with one (the second pass reads it).
			for i, memo := range []*Memo{nil, NewMemo()} {
				c.Memo = memo
				for pass := 0; pass <= i; pass++ {
					d := Compute(context.Background(), c, Options{})
					if len(d.Commands) != 0 {
						t.Fatalf("blocked node disrupted: %s", d.Commands[0])
					}
					if len(d.Blocked) == 0 || d.Blocked[0].Reason.Code != tc.want {
						t.Fatalf("want blocked with %s, got %v", tc.want, d.Blocked)
					}
					if r := d.Blocked[0].Reason; tc.want != BlockNodeDoNotDisrupt && r.Pod == "" || tc.want == BlockPDB && r.PDB != "default/db" {
						t.Fatalf("the evidence is missing: %+v", r)
					}
				}
			}
		})
	}
	// A PDB that still allows a disruption does not block.
	c := cluster(np, node("a", np, types()[2], v1.CapacityTypeOnDemand, guarded))
	c.PDBs = []*policyv1.PodDisruptionBudget{{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}}}
	only(t, Compute(context.Background(), c, Options{}))
}

func TestBudgetsLimitCommands(t *testing.T) {
	zero := nodePool("p", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}} })
	c := cluster(zero, node("empty", zero, types()[1], v1.CapacityTypeOnDemand))
	d := Compute(context.Background(), c, Options{})
	if len(d.Commands) != 0 || len(d.Blocked) == 0 || d.Blocked[0].Reason != (BlockReason{Code: BlockBudget, NodePool: "p", Budget: v1.DisruptionReasonEmpty}) {
		t.Fatalf("budget 0: commands %v, blocked %v", d.Commands, d.Blocked)
	}
	// 50 % of 4 nodes: two of four empty nodes go this pass.
	half := nodePool("p", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "50%"}} })
	var nodes []*Candidate
	for i := 0; i < 4; i++ {
		nodes = append(nodes, node(fmt.Sprintf("e%d", i), half, types()[1], v1.CapacityTypeOnDemand))
	}
	if cmd := only(t, Compute(context.Background(), cluster(half, nodes...), Options{})); len(cmd.Candidates) != 2 {
		t.Fatalf("50%% of 4: %s", cmd)
	}
	// A node already disrupting uses one of the two.
	nodes[3].Disrupting = true
	if cmd := only(t, Compute(context.Background(), cluster(half, nodes...), Options{})); len(cmd.Candidates) != 1 {
		t.Fatalf("one already disrupting: %s", cmd)
	}
	// Only initialized nodes count in the base: 50 % of 2 initialized
	// nodes (two more still starting) is one.
	nodes[3].Disrupting = false
	nodes[2].Initialized, nodes[3].Initialized = false, false
	if cmd := only(t, Compute(context.Background(), cluster(half, nodes...), Options{})); len(cmd.Candidates) != 1 {
		t.Fatalf("50%% of 2 initialized nodes: %s", cmd)
	}
	// A node whose only pods are terminating is empty.
	now := metav1.NewTime(t0)
	leaving := node("leaving", half, types()[1], v1.CapacityTypeOnDemand, podOn("1", func(p *corev1.Pod) { p.DeletionTimestamp = &now }))
	if cmd := only(t, Compute(context.Background(), cluster(half, leaving), Options{})); cmd.Method != MethodEmpty {
		t.Fatalf("a node of terminating pods is empty: %s", cmd)
	}
}

func TestExpirationIsForceful(t *testing.T) {
	np := nodePool("p", func(np *v1.NodePool) {
		np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("30m")
		np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}}
	})
	old := node("old", np, types()[1], v1.CapacityTypeOnDemand, podOn("1", func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} }))
	d := Compute(context.Background(), cluster(np, old), Options{})
	if len(d.Expired) != 1 || d.Expired[0] != old {
		t.Fatalf("created 1h ago with expireAfter 30m: want expired despite do-not-disrupt and a 0 budget, got %v", d.Expired)
	}
	never := nodePool("p", func(np *v1.NodePool) { np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("Never") })
	if d := Compute(context.Background(), cluster(never, node("n", never, types()[1], v1.CapacityTypeOnDemand)), Options{}); len(d.Expired) != 0 {
		t.Fatal("expireAfter Never never expires")
	}
}

// TestBalanced: upstream's Balanced policy (v1.14) — a move passes when
// its share of the pool's cost saved is at least half its share of the
// pool's disruption cost (1 per node plus each pod's positive eviction
// cost); single-node consolidation skips, unsimulated, a node that not even
// deleting would pass; each judged move is in the Decision.
func TestBalanced(t *testing.T) {
	balanced := nodePool("p", func(np *v1.NodePool) { np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced })
	medium, large := types()[1], types()[2]
	pods := func(n int, cpu string) []*corev1.Pod {
		var out []*corev1.Pod
		for i := 0; i < n; i++ {
			out = append(out, podOn(cpu))
		}
		return out
	}

	// Replacing a and b (1.0 USD/h: all of it) by a small node (0.1) moves
	// both pods (disruption 4 of 4: 100 %): score 0.9, approved.
	c := cluster(balanced, node("a", balanced, large, v1.CapacityTypeOnDemand, podOn("1")), node("b", balanced, medium, v1.CapacityTypeOnDemand, podOn("1")))
	d := Compute(context.Background(), c, Options{})
	cmd := only(t, d)
	if names(cmd.Candidates) != "a,b" || len(cmd.Replacements) != 1 {
		t.Fatalf("balanced approves a good trade: got %s", cmd)
	}
	want := Move{Method: MethodMultiNode, NodePool: "p", Policy: v1.ConsolidationPolicyBalanced, Nodes: []string{"a", "b"},
		Scored: true, Score: Score{Savings: 0.9, Disruption: 1}, Approved: true}
	if len(d.Moves) != 1 || !movesEqual(d.Moves[0], want) {
		t.Fatalf("moves %+v, want %+v", d.Moves, want)
	}
	if got := d.Moves[0].Score.String(); got != "score 0.90 >= threshold 0.50 (k: 2, savings 90.0%, disruption 100.0%)" {
		t.Errorf("score words %q", got)
	}

	// x moves ten pods (disruption 11 of 13: 85 %) to a medium node, saving
	// 0.6 of 1.6 USD/h (37.5 %): score 0.44, rejected — though deleting x
	// outright (50 %: 0.59) would have passed, so it was simulated.
	c = cluster(balanced, node("x", balanced, large, v1.CapacityTypeOnDemand, pods(10, "350m")...),
		node("w", balanced, large, v1.CapacityTypeOnDemand, podOn("15")))
	d = Compute(context.Background(), c, Options{})
	if len(d.Commands) != 0 {
		t.Fatalf("balanced refuses a poor trade: %s", d.Commands[0])
	}
	if len(d.Moves) != 1 || d.Moves[0].Approved || !d.Moves[0].Scored || names2(d.Moves[0].Nodes) != "x" ||
		math.Abs(d.Moves[0].Score.Savings-0.375) > 1e-9 || math.Abs(d.Moves[0].Score.Disruption-11.0/13) > 1e-9 {
		t.Fatalf("moves %+v, want x's replacement judged and rejected", d.Moves)
	}
	// WhenEmptyOrUnderutilized takes it, unscored.
	eager := nodePool("p")
	c = cluster(eager, node("x", eager, large, v1.CapacityTypeOnDemand, pods(10, "350m")...),
		node("w", eager, large, v1.CapacityTypeOnDemand, podOn("15")))
	d = Compute(context.Background(), c, Options{})
	if cmd := only(t, d); names(cmd.Candidates) != "x" || len(cmd.Replacements) != 1 {
		t.Fatalf("WhenEmptyOrUnderutilized replaces x: got %s", cmd)
	}
	if len(d.Moves) != 1 || d.Moves[0].Scored || !d.Moves[0].Approved || d.Moves[0].Policy != v1.ConsolidationPolicyWhenEmptyOrUnderutilized {
		t.Fatalf("moves %+v, want one unscored approved move", d.Moves)
	}

	// Ten pods for a 0.2 saving: not even deleting a (20 % against 85 %)
	// passes, so it is not simulated and no move is judged.
	c = cluster(balanced, node("a", balanced, medium, v1.CapacityTypeOnDemand, pods(10, "100m")...), node("b", balanced, large, v1.CapacityTypeOnDemand, podOn("13")))
	if d := Compute(context.Background(), c, Options{}); len(d.Commands) != 0 || len(d.Moves) != 0 {
		t.Fatalf("balanced skips a node that cannot pass: commands %v, moves %+v", d.Commands, d.Moves)
	}
}

func movesEqual(a, b Move) bool {
	const eps = 1e-9
	return a.Method == b.Method && a.NodePool == b.NodePool && a.Policy == b.Policy && names2(a.Nodes) == names2(b.Nodes) &&
		a.Scored == b.Scored && math.Abs(a.Score.Savings-b.Score.Savings) < eps && math.Abs(a.Score.Disruption-b.Score.Disruption) < eps && a.Approved == b.Approved
}

func names2(ns []string) string { return strings.Join(ns, ",") }

func TestSkippedAndBarePods(t *testing.T) {
	np := nodePool("p")
	starting := node("starting", np, types()[1], v1.CapacityTypeOnDemand)
	starting.Initialized = false
	going := node("going", np, types()[1], v1.CapacityTypeOnDemand)
	going.Disrupting = true
	if d := Compute(context.Background(), cluster(np, starting, going), Options{}); len(d.Commands) != 0 {
		t.Fatalf("initializing and already-disrupting nodes are skipped: %s", d.Commands[0])
	}
	// A bare pod (no controller) does not block: it is evicted and moves.
	bare := podOn("1")
	bare.OwnerReferences = nil
	cmd := only(t, Compute(context.Background(), cluster(np, node("big", np, types()[2], v1.CapacityTypeOnDemand, bare)), Options{}))
	if len(cmd.Candidates) != 1 || len(cmd.Replacements) != 1 {
		t.Fatalf("bare pod moves with a replacement: %s", cmd)
	}
}

// TestConsolidationPlacesPendingPods: consolidation does not pause while
// pods pend; as upstream, its simulation places them too, so a node whose
// room a pending pod needs is not taken away, while one it does not need
// still goes.
func TestConsolidationPlacesPendingPods(t *testing.T) {
	np := nodePool("p")
	// Two medium nodes with 1 core used each: one can take the other's pod.
	c := cluster(np, node("a", np, types()[1], v1.CapacityTypeOnDemand, podOn("1")), node("b", np, types()[1], v1.CapacityTypeOnDemand, podOn("1")))
	if cmd := only(t, Compute(context.Background(), c, Options{})); cmd.Savings <= 0 {
		t.Fatalf("without pending pods the two are consolidated: %s", cmd)
	}
	// A pending pod of 3.5 cores fits only on a medium node with nothing
	// else on it: moving one node's pod beside the other's leaves that
	// node free for it, so deleting or shrinking it takes room it needs.
	c.Pending = []*corev1.Pod{podOn("3500m")}
	if d := Compute(context.Background(), c, Options{}); len(d.Commands) != 0 {
		t.Fatalf("the pending pod needs the room consolidation would take: %s", d.Commands[0])
	}
	// A pending pod that fits nowhere is not held against the command.
	c.Pending = []*corev1.Pod{podOn("64")}
	if cmd := only(t, Compute(context.Background(), c, Options{})); cmd.Savings <= 0 {
		t.Fatalf("a pod that fits nowhere does not stop consolidation: %s", cmd)
	}
}

// TestNoConsolidationOntoAStartingNode: as upstream's SimulateScheduling,
// a node that has not initialized yet is no destination for a
// candidate's pods — it may never come up — though pending pods may still
// be planned onto it. Once it has initialized, the same cluster
// consolidates onto it.
func TestNoConsolidationOntoAStartingNode(t *testing.T) {
	np := nodePool("p")
	medium := types()[1]
	starting := node("starting", np, medium, v1.CapacityTypeOnDemand, podOn("2"))
	starting.Initialized = false
	c := cluster(np, node("busy", np, medium, v1.CapacityTypeOnDemand, podOn("1")), starting)
	c.Pending = []*corev1.Pod{podOn("500m")} // may still be planned there
	d := Compute(context.Background(), c, Options{})
	if len(d.Commands) != 0 {
		t.Fatalf("busy's pod moved onto a node still starting: %s", d.Commands[0])
	}
	why, err := ExplainNode(context.Background(), c, "busy", Options{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range why {
		found = found || strings.Contains(a.Why, "starting, which has not initialized yet")
	}
	if !found {
		t.Errorf("explain does not say the destination is starting: %+v", why)
	}
	starting.Initialized = true
	if cmd := only(t, Compute(context.Background(), c, Options{})); len(cmd.Candidates) != 1 || len(cmd.Replacements) != 0 {
		t.Fatalf("once initialized, one node's pod goes to the other: got %s", cmd)
	}
}

// TestEmptinessLeavesBufferNodes: as upstream, a node the last
// provisioning pass placed a CapacityBuffer's virtual pods on is not
// empty for emptiness — its room is the buffer — while another empty
// node still goes.
func TestEmptinessLeavesBufferNodes(t *testing.T) {
	np := nodePool("p")
	medium := types()[1]
	c := cluster(np, node("held", np, medium, v1.CapacityTypeOnDemand, daemonPod()), node("idle", np, medium, v1.CapacityTypeOnDemand, daemonPod()))
	c.BufferPods = map[string]int{"held": 2}
	cmd := only(t, Compute(context.Background(), c, Options{}))
	if cmd.Method != MethodEmpty || names(cmd.Candidates) != "idle" {
		t.Fatalf("got %s, want idle deleted as empty and held kept", cmd)
	}
	why, err := ExplainNode(context.Background(), c, "held", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(why) < 2 || why[1].Method != MethodEmpty || why[1].Acts || !strings.Contains(why[1].Why, "holds 2 virtual pod(s) of CapacityBuffers") {
		t.Errorf("explain held: %+v", why)
	}
}

// TestWhichPodsBlock: as upstream, every active pod on the node counts —
// DaemonSet pods too — for do-not-disrupt (a duration runs from the pod's
// start; an invalid value is ignored) and for PDBs; terminal and
// terminating pods never block, and PDBs do not guard mirror pods or pods
// that tolerate the disrupted taint (eviction leaves them alone).
func TestWhichPodsBlock(t *testing.T) {
	np := nodePool("p")
	medium := types()[1]
	annotated := func(v string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: v} }
	}
	started := func(ago time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Status.StartTime = &metav1.Time{Time: t0.Add(-ago)} }
	}
	daemon := func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", Controller: &yes}}
	}
	db := func(p *corev1.Pod) { p.Labels["app"] = "db" }
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0}}
	now := metav1.NewTime(t0)
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		pdb   bool
		block BlockReason // zero when the node is free to go
	}{
		{"do-not-disrupt DaemonSet pod", podOn("100m", daemon, annotated("true")), false, BlockReason{Code: BlockPodDoNotDisrupt}},
		{"do-not-disrupt 30m, started 10m ago", podOn("1", annotated("30m"), started(10*time.Minute)), false,
			BlockReason{Code: BlockPodDoNotDisrupt, Value: "30m", Until: "2026-11-30T12:20:00Z"}},
		{"do-not-disrupt 30m, started 40m ago", podOn("1", annotated("30m"), started(40*time.Minute)), false, BlockReason{}},
		{"do-not-disrupt with an invalid value", podOn("1", annotated("forever")), false, BlockReason{}},
		{"do-not-disrupt on a finished pod", podOn("1", annotated("true"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), false, BlockReason{}},
		{"do-not-disrupt on a terminating pod", podOn("1", annotated("true"), func(p *corev1.Pod) { p.DeletionTimestamp = &now }), false, BlockReason{}},
		{"PDB over a DaemonSet pod", podOn("100m", daemon, db), true, BlockReason{Code: BlockPDB, PDB: "default/db"}},
		{"PDB over a mirror pod", podOn("100m", db, func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }), true, BlockReason{}},
		{"PDB over a pod that tolerates the disrupted taint", podOn("100m", db, func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: v1.DisruptedTaint.Key, Operator: corev1.TolerationOpExists}}
		}), true, BlockReason{}},
		{"PDB over a terminating pod", podOn("1", db, func(p *corev1.Pod) { p.DeletionTimestamp = &now }), true, BlockReason{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := node("a", np, medium, v1.CapacityTypeOnDemand, tc.pod)
			c := cluster(np, n)
			if tc.pdb {
				c.PDBs = []*policyv1.PodDisruptionBudget{pdb}
			}
			for _, memo := range []*Memo{nil, NewMemo()} {
				c.Memo = memo
				got := c.blocker(n)
				got.Pod = "" // the pod's name is the fixture's
				if got != tc.block {
					t.Errorf("blocker %+v, want %+v", got, tc.block)
				}
			}
		})
	}
	// A Memo keeps the protection's end, not its answer: 20 minutes on,
	// the 30 minutes are over.
	n := node("a", np, medium, v1.CapacityTypeOnDemand, podOn("1", annotated("30m"), started(10*time.Minute)))
	c := cluster(np, n)
	c.Memo = NewMemo()
	if c.blocker(n).None() {
		t.Fatal("protected at first")
	}
	c.Now = t0.Add(20 * time.Minute)
	if why := c.blocker(n); !why.None() {
		t.Errorf("30m after its start the pod no longer protects the node: %s", why)
	}
}

// TestTerminationGracePeriodLetsDriftPass: a drifted node that a
// do-not-disrupt pod or a blocking PDB holds is replaced anyway when its
// NodeClaim has a terminationGracePeriod (its drain ends by that deadline);
// consolidation of such a node stays blocked.
func TestTerminationGracePeriodLetsDriftPass(t *testing.T) {
	np := nodePool("p")
	medium := types()[1]
	pinned := func() *corev1.Pod {
		return podOn("1", func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} })
	}
	drifted := func(tgp bool) *Candidate {
		n := node("old", np, medium, v1.CapacityTypeOnDemand, pinned())
		n.NodeClaim.Annotations[v1.AnnotationNodePoolHash] = "stale"
		if tgp {
			n.NodeClaim.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
		}
		return n
	}
	if d := Compute(context.Background(), cluster(np, drifted(false)), Options{}); len(d.Commands) != 0 {
		t.Fatalf("without a terminationGracePeriod the pod blocks drift: %s", d.Commands[0])
	}
	cmd := only(t, Compute(context.Background(), cluster(np, drifted(true)), Options{}))
	if cmd.Method != MethodDrift || names(cmd.Candidates) != "old" {
		t.Fatalf("with a terminationGracePeriod drift proceeds: %s", cmd)
	}
	if err := Revalidate(context.Background(), cmd, cluster(np, drifted(true)), Options{}); err != nil {
		t.Errorf("revalidation keeps the eventual candidate: %v", err)
	}
	// Consolidation is graceful: an underutilized node with the pod stays.
	big := node("big", np, types()[2], v1.CapacityTypeOnDemand, pinned())
	big.NodeClaim.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
	if d := Compute(context.Background(), cluster(np, big), Options{}); len(d.Commands) != 0 {
		t.Fatalf("consolidation stays blocked by the pod: %s", d.Commands[0])
	}
}

// TestNextConsolidatable: the first node to pass its consolidateAfter
// after now; nodes already past it, and pools that never consolidate, do
// not count.
func TestNextConsolidatable(t *testing.T) {
	np := nodePool("general") // consolidateAfter 30s
	never := nodePool("never", func(np *v1.NodePool) { np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("Never") })
	past := node("past", np, types()[0], v1.CapacityTypeOnDemand)
	soon := node("soon", np, types()[0], v1.CapacityTypeOnDemand)
	soon.NodeClaim.Status.LastPodEventTime = metav1.NewTime(t0.Add(-20 * time.Second))
	later := node("later", np, types()[0], v1.CapacityTypeOnDemand)
	later.NodeClaim.Status.LastPodEventTime = metav1.NewTime(t0.Add(-5 * time.Second))
	held := node("held", never, types()[0], v1.CapacityTypeOnDemand)
	held.NodeClaim.Status.LastPodEventTime = metav1.NewTime(t0)
	c := cluster(np, past, later, soon, held)
	c.NodePools = append(c.NodePools, never)
	if got, want := NextConsolidatable(c), t0.Add(10*time.Second); !got.Equal(want) {
		t.Errorf("NextConsolidatable = %s, want %s (soon: 20s ago + 30s)", got, want)
	}
	if got := NextConsolidatable(cluster(np, past)); !got.IsZero() {
		t.Errorf("with every node consolidatable: %s, want zero", got)
	}
}

// TestSettlingNodesAreNoDestination: under upstream's decisions, as
// upstream since v1.14, a consolidation moves no running pod onto a node
// whose NodePool's consolidateAfter has not passed since its last pod
// event; a pending pod may still go there. Joiner's decisions move pods
// there as anywhere else.
func TestSettlingNodesAreNoDestination(t *testing.T) {
	np := nodePool("p") // consolidateAfter 30s
	medium, large := types()[1], types()[2]
	build := func(bLastEvent time.Duration, podPhase corev1.PodPhase, d provisioning.Decisions) *Snapshot {
		a := node("a", np, medium, v1.CapacityTypeOnDemand, podOn("1", func(p *corev1.Pod) { p.Status.Phase = podPhase }))
		b := node("b", np, large, v1.CapacityTypeOnDemand, podOn("14"))
		b.NodeClaim.Status.LastPodEventTime = metav1.NewTime(t0.Add(-bLastEvent))
		c := cluster(np, a, b)
		c.Policy = provisioning.Policy{Decisions: d}
		return c
	}
	upstream, joiner := provisioning.DecisionsKarpenter, provisioning.DecisionsJoiner
	// b took a pod 10 s ago: a's pod may not go there; a is replaced by a
	// cheaper small node instead of deleted.
	cmd := only(t, Compute(context.Background(), build(10*time.Second, corev1.PodRunning, upstream), Options{}))
	if names(cmd.Candidates) != "a" || len(cmd.Replacements) != 1 {
		t.Fatalf("upstream's decisions, b settling: got %s, want a replaced", cmd)
	}
	// A minute ago: b is settled, a's pod moves there, a is deleted.
	cmd = only(t, Compute(context.Background(), build(time.Minute, corev1.PodRunning, upstream), Options{}))
	if names(cmd.Candidates) != "a" || len(cmd.Replacements) != 0 {
		t.Fatalf("upstream's decisions, b settled: got %s, want a deleted", cmd)
	}
	// a's pod is still Pending (bound, not started): it may go to b.
	cmd = only(t, Compute(context.Background(), build(10*time.Second, corev1.PodPending, upstream), Options{}))
	if names(cmd.Candidates) != "a" || len(cmd.Replacements) != 0 {
		t.Fatalf("upstream's decisions, a pending pod may go to a settling node: got %s, want a deleted", cmd)
	}
	// Joiner's: b settling or not, a's pod moves there and a is deleted.
	cmd = only(t, Compute(context.Background(), build(10*time.Second, corev1.PodRunning, joiner), Options{}))
	if names(cmd.Candidates) != "a" || len(cmd.Replacements) != 0 {
		t.Fatalf("Joiner's decisions, b settling: got %s, want a deleted", cmd)
	}
}

// TestPodEvent: a claim records a pod event unless it recorded one less
// than five seconds before (upstream's dedupe), and always its first.
func TestPodEvent(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name          string
		recorded, now time.Time
		want          time.Time
		wantRecorded  bool
	}{
		{"first", time.Time{}, t0, t0, true},
		{"within five seconds", t0, t0.Add(4 * time.Second), t0, false},
		{"five seconds on", t0, t0.Add(PodEventDedupe), t0.Add(PodEventDedupe), true},
		{"later", t0, t0.Add(time.Minute), t0.Add(time.Minute), true},
	} {
		got, ok := PodEvent(c.recorded, c.now)
		if !got.Equal(c.want) || ok != c.wantRecorded {
			t.Errorf("%s: %s %v, want %s %v", c.name, got, ok, c.want, c.wantRecorded)
		}
	}
}

func TestLeavingNamesTheRoundsToCome(t *testing.T) {
	large := types()[2]
	build := func(budget string) *Snapshot {
		np := nodePool("p", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: budget}} })
		var nodes []*Candidate
		for i := 0; i < 6; i++ {
			nodes = append(nodes, node(fmt.Sprintf("n%d", i), np, large, v1.CapacityTypeOnDemand, podOn("4")))
		}
		return cluster(np, nodes...)
	}
	// Six 16-core nodes with 4 cores each in use: four can go at once
	// (their pods fit on the other two), a budget of two takes two now,
	// and the two after them are the next round's.
	d := Compute(context.Background(), build("2"), Options{})
	cmd := only(t, d)
	if cmd.Method != MethodMultiNode || len(cmd.Candidates) != 2 || len(cmd.Replacements) != 0 {
		t.Fatalf("budget 2: %s", cmd)
	}
	if !d.LeavingKnown || len(d.Leaving) != 2 {
		t.Fatalf("budget 2: leaving %q (known %v), want the two the next round takes", names(d.Leaving), d.LeavingKnown)
	}
	for _, l := range d.Leaving {
		for _, c := range cmd.Candidates {
			if l == c {
				t.Fatalf("leaving %q repeats the command's %s", names(d.Leaving), cmd)
			}
		}
	}
	// The command's candidates are marked too, for their validation.
	if got, want := names(d.Marked), names(append(append([]*Candidate{}, cmd.Candidates...), d.Leaving...)); got != want {
		t.Fatalf("budget 2: marked %q, want the command's candidates and the next round's, %q", got, want)
	}
	// Every marked node leaves in this round or the next.
	if got, want := names(d.Next), names(d.Marked); got != want {
		t.Fatalf("budget 2: marked next %q, want all marked %q", got, want)
	}
	// A budget of one: this round's node and the first of the three the
	// rounds to come take are marked next; the other two leave later.
	d = Compute(context.Background(), build("1"), Options{})
	if cmd := only(t, d); len(cmd.Candidates) != 1 || len(d.Leaving) != 3 {
		t.Fatalf("budget 1: %s, leaving %q; want one now and three later", cmd, names(d.Leaving))
	} else if got, want := names(d.Next), names(append(slices.Clone(cmd.Candidates), d.Leaving[0])); got != want {
		t.Fatalf("budget 1: marked next %q, want this round's and the next's, %q", got, want)
	}
	// No budget holds a node back: nothing is left for a later round.
	d = Compute(context.Background(), build("100%"), Options{})
	if cmd := only(t, d); len(cmd.Candidates) != 4 || !d.LeavingKnown || len(d.Leaving) != 0 {
		t.Fatalf("budget 100%%: %s, leaving %q (known %v)", cmd, names(d.Leaving), d.LeavingKnown)
	}
	// Upstream's decisions mark nothing, and say so, so a host takes
	// earlier marks off.
	c := build("2")
	c.Policy = provisioning.Policy{Decisions: provisioning.DecisionsKarpenter}
	if d := Compute(context.Background(), c, Options{}); !d.LeavingKnown || len(d.Leaving) != 0 || len(d.Marked) != 0 {
		t.Fatalf("karpenter's decisions: leaving %q, marked %q (known %v)", names(d.Leaving), names(d.Marked), d.LeavingKnown)
	}
	// A pass that skips consolidation does not know.
	if d := Compute(context.Background(), build("2"), Options{SkipConsolidation: true}); d.LeavingKnown {
		t.Fatal("a pass without consolidation cannot know what later rounds take")
	}
}

// TestLeavingKeepsTheMarkedPlan: the nodes an earlier pass marked stay
// the later rounds' while one multi-node consolidation could still take
// them — even one a pod landed on since (its consolidateAfter restarted)
// — rather than whichever nodes come first in byValue order; an unmarked
// node whose consolidateAfter restarted is not planned.
func TestLeavingKeepsTheMarkedPlan(t *testing.T) {
	large := types()[2]
	np := nodePool("p", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "2"}} })
	build := func(marked ...string) *Snapshot {
		var nodes []*Candidate
		for i := 0; i < 6; i++ {
			n := node(fmt.Sprintf("n%d", i), np, large, v1.CapacityTypeOnDemand, podOn("4"))
			if slices.Contains(marked, n.Node.Name) {
				n.Node.Taints = append(n.Node.Taints, ConsolidatingTaint)
			}
			nodes = append(nodes, n)
		}
		return cluster(np, nodes...)
	}
	// Unmarked, identical nodes: byValue order (by name) plans n2 and n3.
	d := Compute(context.Background(), build(), Options{})
	if cmd := only(t, d); names(cmd.Candidates) != "n0,n1" || names(d.Leaving) != "n2,n3" {
		t.Fatalf("no marks: %s, leaving %q; want n0,n1 now and n2,n3 next", cmd, names(d.Leaving))
	}
	// n4 and n5 were marked by the pass before: they stay the plan.
	d = Compute(context.Background(), build("n4", "n5"), Options{})
	if cmd := only(t, d); names(cmd.Candidates) != "n0,n1" || names(d.Leaving) != "n4,n5" {
		t.Fatalf("n4, n5 marked: %s, leaving %q; want n0,n1 now and n4,n5 kept for next", cmd, names(d.Leaving))
	}
	// A pod landed on n5 a moment ago: it is still planned, as marked...
	c := build("n4", "n5")
	c.Nodes[5].NodeClaim.Status.LastPodEventTime = metav1.NewTime(c.Now)
	if d := Compute(context.Background(), c, Options{}); names(d.Leaving) != "n4,n5" {
		t.Fatalf("marked n5 settling: leaving %q, want n4,n5", names(d.Leaving))
	}
	// ...while unmarked, the plan passes it over.
	c = build("n4")
	c.Nodes[5].NodeClaim.Status.LastPodEventTime = metav1.NewTime(c.Now)
	if d := Compute(context.Background(), c, Options{}); names(d.Leaving) != "n4,n2" {
		t.Fatalf("unmarked n5 settling: leaving %q, want n4 then n2", names(d.Leaving))
	}
}

// TestLeavingNamesTheNextSingleNode: when no multi-node consolidation
// takes two nodes (b's pod is pinned to it), the plan names the node
// single-node consolidation would delete next once this pass's command is
// carried out — c, not b — so kube-scheduler keeps this round's pods off
// it; a node only a replacement would take is not named.
func TestLeavingNamesTheNextSingleNode(t *testing.T) {
	large := types()[2]
	np := nodePool("p", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "1"}} })
	pinned := podOn("15", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{v1.LabelHostname: "b"} })
	d := Compute(context.Background(), cluster(np,
		node("a", np, large, v1.CapacityTypeOnDemand, podOn("1")),
		node("b", np, large, v1.CapacityTypeOnDemand, pinned),
		node("c", np, large, v1.CapacityTypeOnDemand, cores(2)...),
		node("d", np, large, v1.CapacityTypeOnDemand, cores(12)...),
	), Options{})
	if cmd := only(t, d); names(cmd.Candidates) != "a" || len(cmd.Replacements) != 0 {
		t.Fatalf("want a deleted, got %s", cmd)
	}
	if names(d.Leaving) != "c" {
		t.Fatalf("leaving %q, want c (its pods fit on d once a is gone; b's cannot move)", names(d.Leaving))
	}
	for _, b := range d.Blocked {
		if b.Node == "c" && b.Reason.Code != BlockBudget {
			t.Errorf("the plan's search recorded %v against c", b)
		}
	}
	// d's twelve pods fit nowhere once a is gone (b is full) but on a new
	// node: only a replacement takes d, and the plan does not name it.
	d = Compute(context.Background(), cluster(np,
		node("a", np, large, v1.CapacityTypeOnDemand, podOn("1")),
		node("b", np, large, v1.CapacityTypeOnDemand, pinned),
		node("d", np, large, v1.CapacityTypeOnDemand, cores(12)...),
	), Options{})
	if len(d.Leaving) != 0 {
		t.Fatalf("leaving %q, want none (d goes only with a replacement)", names(d.Leaving))
	}
}

// TestLeavingNamesTheWaitingNodes: a pass that moves pods names the
// nodes still waiting out their consolidateAfter that the next rounds
// would take, though no budget held one back; a pass that moves none
// names none.
func TestLeavingNamesTheWaitingNodes(t *testing.T) {
	large := types()[2]
	np := nodePool("p", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "2"}} }) // consolidateAfter 30s
	pinned := podOn("15", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{v1.LabelHostname: "b"} })
	build := func(withA bool) *Snapshot {
		c := node("c", np, large, v1.CapacityTypeOnDemand, cores(2)...)
		d := node("d", np, large, v1.CapacityTypeOnDemand, cores(12)...)
		for _, n := range []*Candidate{c, d} {
			n.NodeClaim.Status.LastPodEventTime = metav1.NewTime(t0.Add(-10 * time.Second)) // consolidatable in 20 s
		}
		nodes := []*Candidate{node("b", np, large, v1.CapacityTypeOnDemand, pinned), c, d}
		if withA {
			nodes = append(nodes, node("a", np, large, v1.CapacityTypeOnDemand, podOn("1")))
		}
		return cluster(np, nodes...)
	}
	d := Compute(context.Background(), build(true), Options{})
	if cmd := only(t, d); names(cmd.Candidates) != "a" || len(cmd.Replacements) != 0 {
		t.Fatalf("want a deleted, got %s", cmd)
	}
	if names(d.Leaving) != "c" {
		t.Fatalf("leaving %q, want c (waiting; its pods fit on d once a is gone, d's fit nowhere)", names(d.Leaving))
	}
	if d = Compute(context.Background(), build(false), Options{}); len(d.Commands) != 0 || len(d.Leaving) != 0 {
		t.Fatalf("no pod moves: got %d command(s), leaving %q; want none", len(d.Commands), names(d.Leaving))
	}
}

// As upstream's filterOutSameInstanceType: two nodes whose pods one node
// of the larger's type holds are not replaced by a dearer type in its
// place (which single-node consolidation would replace by that type next);
// deleting the smaller alone does it.
// cores is n pods of one core each.
func cores(n int) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		out = append(out, podOn("1"))
	}
	return out
}

func TestMultiNodeNotReplacedByADearerTypeThanACandidates(t *testing.T) {
	g48, g8, c48 := instanceType("g48", 48), instanceType("g8", 8), instanceType("c48", 48)
	for _, o := range c48.Offerings {
		o.Price *= 1.07 // dearer than g48 alone, cheaper than g48 and g8 together
	}
	np := nodePool("p")
	c := cluster(np, node("a", np, g48, v1.CapacityTypeOnDemand, cores(30)...), node("b", np, g8, v1.CapacityTypeOnDemand, cores(6)...))
	c.InstanceTypes[np.Name] = []*cloudprovider.InstanceType{g8, g48, c48}
	cmd := only(t, Compute(context.Background(), c, Options{}))
	if len(cmd.Replacements) != 0 || names(cmd.Candidates) != "b" {
		t.Fatalf("want b deleted alone (its pods fit a), got %s", cmd)
	}
}

// TestNoReplacementAtTheSamePrice: two nodes priced 1.088 and 0.544
// whose pods need one node priced 1.632 are not replaced — in float64
// 1.088 + 0.544 is above 1.632, which once passed for a saving; a real
// saving however small (reserved offerings' prices) still counts.
func TestNoReplacementAtTheSamePrice(t *testing.T) {
	priced := func(name string, cpu int64, price float64) *cloudprovider.InstanceType {
		it := instanceType(name, cpu)
		it.Offerings[0].Price, it.Offerings[1].Price = price, price
		return it
	}
	x48, x32, x16 := priced("x48", 48, 1.632), priced("x32", 32, 1.088), priced("x16", 16, 0.544)
	if x32.Offerings[0].Price+x16.Offerings[0].Price <= x48.Offerings[0].Price {
		t.Fatal("the float64 sum this test is about no longer exceeds its parts' replacement")
	}
	np := nodePool("p")
	c := cluster(np, node("a", np, x32, v1.CapacityTypeOnDemand, cores(20)...), node("b", np, x16, v1.CapacityTypeOnDemand, cores(14)...))
	c.InstanceTypes[np.Name] = []*cloudprovider.InstanceType{x16, x32, x48}
	if d := Compute(context.Background(), c, Options{}); len(d.Commands) != 0 {
		t.Fatalf("want no command (no type is cheaper than the two nodes together), got %v", d.Commands)
	}
	// Priced as reserved offerings (on-demand over 10,000,000), a type
	// cheaper by a ten-millionth of a dollar is a saving all the same.
	r48, r32, r16, r40 := priced("x48", 48, 1.632e-7), priced("x32", 32, 1.088e-7), priced("x16", 16, 0.544e-7), priced("x40", 40, 1.5e-7)
	c = cluster(np, node("a", np, r32, v1.CapacityTypeOnDemand, cores(20)...), node("b", np, r16, v1.CapacityTypeOnDemand, cores(14)...))
	c.InstanceTypes[np.Name] = []*cloudprovider.InstanceType{r16, r32, r40, r48}
	cmd := only(t, Compute(context.Background(), c, Options{}))
	if names(cmd.Candidates) != "a,b" || len(cmd.Replacements) != 1 || cmd.Replacements[0].InstanceTypes[0].Name != "x40" {
		t.Fatalf("want a and b replaced by an x40, got %s", cmd)
	}
}

// TestSingleNodeBatches: three 16-core nodes, each with one 1-core pod
// that keeps the others' nodes (hostname anti-affinity), can each be
// replaced by a 2-core node, never two by one. Under Joiner's decisions
// one pass takes all three (each checked beside the others' replacements);
// a budget of two takes two, the third held by the budget; under
// upstream's, one a pass.
func TestSingleNodeBatches(t *testing.T) {
	apart := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, TopologyKey: corev1.LabelHostname}}}}
	}
	large := types()[2]
	build := func(np *v1.NodePool) *Snapshot {
		return cluster(np, node("a", np, large, v1.CapacityTypeOnDemand, podOn("1", apart)),
			node("b", np, large, v1.CapacityTypeOnDemand, podOn("1", apart)), node("c", np, large, v1.CapacityTypeOnDemand, podOn("1", apart)))
	}
	d := Compute(context.Background(), build(nodePool("p")), Options{})
	if len(d.Commands) != 3 {
		t.Fatalf("Joiner's decisions: want 3 single-node commands in one pass, got %v", d.Commands)
	}
	for _, cmd := range d.Commands {
		if cmd.Method != MethodSingleNode || len(cmd.Candidates) != 1 || len(cmd.Replacements) != 1 || cmd.Replacements[0].InstanceTypes[0].Name != "small" {
			t.Errorf("want each node replaced by a small one, got %s", cmd)
		}
	}
	two := nodePool("p", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "2"}} })
	d = Compute(context.Background(), build(two), Options{})
	if len(d.Commands) != 2 || len(d.Blocked) != 1 || d.Blocked[0].Reason.Code != BlockBudget {
		t.Fatalf("a budget of 2: want 2 commands and the third node held by the budget, got %v, blocked %v", d.Commands, d.Blocked)
	}
	upstream := build(nodePool("p"))
	upstream.Policy = provisioning.Policy{Decisions: provisioning.DecisionsKarpenter}
	if d := Compute(context.Background(), upstream, Options{}); len(d.Commands) != 1 {
		t.Fatalf("upstream's decisions: want one command a pass, got %v", d.Commands)
	}
}

// TestWithMarks: a node that leaves next carries both marks, one marked
// for a later round only the first, any other neither; a node already as
// it should be is not changed, and other taints stay.
func TestWithMarks(t *testing.T) {
	other := corev1.Taint{Key: "other", Effect: corev1.TaintEffectNoSchedule}
	keys := func(ts []corev1.Taint) string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Key)
		}
		return strings.Join(out, ",")
	}
	both, changed := WithMarks([]corev1.Taint{other}, true, true)
	if !changed || keys(both) != "other,joiner.sh/consolidating,joiner.sh/consolidating-next" {
		t.Fatalf("next: %s (changed %v)", keys(both), changed)
	}
	if _, changed := WithMarks(both, true, true); changed {
		t.Fatal("next again: changed")
	}
	later, changed := WithMarks(both, true, false)
	if !changed || keys(later) != "other,joiner.sh/consolidating" {
		t.Fatalf("a later round's: %s (changed %v)", keys(later), changed)
	}
	none, changed := WithMarks(both, false, false)
	if !changed || keys(none) != "other" {
		t.Fatalf("unmarked: %s (changed %v)", keys(none), changed)
	}
}
