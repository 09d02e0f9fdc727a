package disruption

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// solo is a pod no other solo pod may share a node with.
func solo(p *corev1.Pod) {
	p.Labels = map[string]string{"app": "solo"}
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "solo"}}, TopologyKey: v1.LabelHostname}}}}
}

// soloCluster: three large nodes, each with one solo pod of one core. No
// two pods share a node, so multi-node consolidation finds nothing; each
// node alone is replaced by a small one.
func soloCluster(np *v1.NodePool, policy provisioning.Policy) *Snapshot {
	large := types()[2]
	c := cluster(np, node("a", np, large, v1.CapacityTypeOnDemand, podOn("1", solo)),
		node("b", np, large, v1.CapacityTypeOnDemand, podOn("1", solo)),
		node("c", np, large, v1.CapacityTypeOnDemand, podOn("1", solo)))
	c.Policy = policy
	return c
}

func TestConsolidationChainsWhatTheNextPassesWouldDo(t *testing.T) {
	ctx := context.Background()
	joiner := provisioning.Policy{}
	karpenter := provisioning.Policy{Decisions: provisioning.DecisionsKarpenter}

	// Upstream: one command a pass.
	d := Compute(ctx, soloCluster(nodePool("p"), karpenter), Options{})
	if cmd := only(t, d); cmd.Method != MethodSingleNode || names(cmd.Candidates) != "a" || len(cmd.Replacements) != 1 {
		t.Fatalf("karpenter's decisions: got %s", cmd)
	}

	// Joiner: the passes after it too, each over the cluster the commands
	// before it leave — every node once, each by a small one.
	c := soloCluster(nodePool("p"), joiner)
	d = Compute(ctx, c, Options{})
	if len(d.Commands) != 3 {
		t.Fatalf("want 3 chained commands, got %v", d.Commands)
	}
	for i, want := range []string{"a", "b", "c"} {
		cmd := d.Commands[i]
		if cmd.Method != MethodSingleNode || names(cmd.Candidates) != want || len(cmd.Replacements) != 1 || cmd.Replacements[0].InstanceTypes[0].Name != "small" {
			t.Errorf("command %d: got %s, want node %s replaced by a small one", i, cmd, want)
		}
	}
	// The chain's commands are validated together, each after the ones
	// before it: all hold on the cluster they were made on.
	for i, err := range RevalidateAll(ctx, d.Commands, c, Options{}) {
		if err != nil {
			t.Errorf("command %d no longer holds: %v", i, err)
		}
	}

	// As far as the budget allows: two nodes at a time, two commands.
	two := nodePool("p", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "2"}} })
	d = Compute(ctx, soloCluster(two, joiner), Options{})
	if len(d.Commands) != 2 || names(d.Commands[0].Candidates) != "a" || names(d.Commands[1].Candidates) != "b" {
		t.Fatalf("budget of 2: got %v", d.Commands)
	}
	// Validated over a cluster where one more node is already going, the
	// second no longer fits the budget: the first counts against it.
	busy := soloCluster(two, joiner)
	gone := node("d", two, types()[2], v1.CapacityTypeOnDemand)
	gone.Disrupting = true
	busy.Nodes = append(busy.Nodes, gone)
	errs := RevalidateAll(ctx, d.Commands, busy, Options{})
	if errs[0] != nil || errs[1] == nil {
		t.Fatalf("with node d going: want the first command to hold and the second refused by the budget, got %v", errs)
	}
}

// After a command, the cluster the next pass sees: the candidate going
// with no pods, its pods on the nodes that took them (settling, so no
// candidate) or on the replacement (in flight, no candidate either).
func TestAfterACommand(t *testing.T) {
	ctx := context.Background()
	np := nodePool("p")
	small, medium, large := types()[0], types()[1], types()[2]
	command := func(c *Snapshot) (*pass, *Command) {
		t.Helper()
		p := newPass(ctx, c, Options{})
		cmd, why := p.consolidateWhy(ctx, []*Candidate{c.Nodes[0]}, MethodSingleNode)
		if cmd == nil {
			t.Fatalf("want node %s consolidated, got %s", c.Nodes[0].Node.Name, why)
		}
		return p, cmd
	}

	// Deleted: its pod goes to x.
	c := cluster(np, node("leave", np, medium, v1.CapacityTypeOnDemand, podOn("1")),
		node("x", np, large, v1.CapacityTypeOnDemand, podOn("10")))
	p, cmd := command(c)
	next := p.after(cmd)
	if len(cmd.Replacements) != 0 || next == nil || len(next.Nodes) != 2 {
		t.Fatalf("want leave deleted and a cluster of two nodes after, got %s and %v", cmd, next)
	}
	leave, x := next.Nodes[0], next.Nodes[1]
	if !leave.Disrupting || len(leave.Node.Pods) != 0 || !leave.Node.MarkedForDeletion {
		t.Errorf("the candidate: want it disrupting with no pods, got disrupting=%v pods=%d", leave.Disrupting, len(leave.Node.Pods))
	}
	if len(x.Node.Pods) != 2 || x.Node.Pods[1].Spec.NodeName != "x" || x.Node.Version != "" {
		t.Errorf("want leave's pod on x, got %d pods there", len(x.Node.Pods))
	}
	q := newPass(ctx, next, Options{})
	if !q.settling(x) || q.consolidatable(x) {
		t.Errorf("node x took a pod: want it settling, not consolidatable")
	}
	if graceful, _ := q.eligible(); len(graceful) != 1 || graceful[0] != x {
		t.Errorf("the next pass's candidates: got %q, want x alone", names(graceful))
	}
	if len(c.Nodes[1].Node.Pods) != 1 || !c.Nodes[1].NodeClaim.Status.LastPodEventTime.Time.Equal(t0.Add(-10*time.Minute)) || c.Nodes[0].Disrupting {
		t.Errorf("after changed the cluster it was given")
	}

	// Deleted onto a node Joiner does not manage: that node has the pod.
	c = cluster(np, node("leave", np, medium, v1.CapacityTypeOnDemand, podOn("1")))
	u := node("u", np, large, v1.CapacityTypeOnDemand).Node
	u.NodePool = ""
	c.Unmanaged = []*provisioning.Node{u}
	p, cmd = command(c)
	if next = p.after(cmd); len(cmd.Replacements) != 0 || next == nil || len(next.Unmanaged) != 1 || len(next.Unmanaged[0].Pods) != 1 || len(u.Pods) != 0 {
		t.Fatalf("want leave deleted, its pod on the unmanaged node after (and not before), got %s", cmd)
	}

	// Replaced: its pod goes to the replacement.
	c = cluster(np, node("leave", np, large, v1.CapacityTypeOnDemand, podOn("1")))
	p, cmd = command(c)
	next = p.after(cmd)
	if len(cmd.Replacements) != 1 || next == nil || len(next.Nodes) != 2 {
		t.Fatalf("want leave replaced and a cluster of two nodes after, got %s and %v", cmd, next)
	}
	repl := next.Nodes[1]
	if len(repl.Node.Pods) != 1 || !repl.Node.InFlight || repl.Initialized || repl.InstanceType != small.Name || repl.Node.Labels[v1.LabelHostname] != repl.Node.Name {
		t.Errorf("want leave's pod on an in-flight small replacement, got %d pods on %s (%s, in flight %v)", len(repl.Node.Pods), repl.Node.Name, repl.InstanceType, repl.Node.InFlight)
	}
	if graceful, _ := newPass(ctx, next, Options{}).eligible(); len(graceful) != 0 {
		t.Errorf("the next pass's candidates: got %q, want none", names(graceful))
	}
}

// The queue validates the commands one pass chained together: each over
// the cluster after the ones before it, so the second is held to the
// budget the first leaves.
func TestQueueValidatesAChainTogether(t *testing.T) {
	ctx := context.Background()
	two := nodePool("p", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "2"}} })
	d := Compute(ctx, soloCluster(two, provisioning.Policy{}), Options{})
	if len(d.Commands) != 2 {
		t.Fatalf("want 2 chained commands, got %v", d.Commands)
	}
	q := &Queue{}
	for _, cmd := range d.Commands {
		q.Add(cmd, t0)
	}
	// Meanwhile another node went: each command alone would still fit the
	// budget (one of two taken), the two together do not.
	busy := soloCluster(two, provisioning.Policy{})
	gone := node("d", two, types()[2], v1.CapacityTypeOnDemand)
	gone.Disrupting = true
	busy.Nodes = append(busy.Nodes, gone)
	busy.Now = t0.Add(ValidationDelay)
	for i, cmd := range d.Commands {
		if err := Revalidate(ctx, cmd, busy, Options{}); err != nil {
			t.Fatalf("command %d alone: %v", i, err)
		}
	}
	r := newRecorder()
	var got []string
	for _, ev := range q.Step(ctx, busy.Now, r, func() *Snapshot { return busy }) {
		got = append(got, names(ev.Command.Candidates)+" "+string(ev.What))
	}
	if want := "a validated;a tainted;a launched;b cancelled"; strings.Join(got, ";") != want {
		t.Fatalf("events: got %q, want %q", strings.Join(got, ";"), want)
	}
}
