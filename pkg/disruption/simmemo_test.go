package disruption

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// TestSimulationsAreRememberedByContent: a pass over the very cluster of
// the pass before takes its simulations' answers from the Memo, and any
// change to what a simulation depends on — a pending pod, a node's
// content (its Version), a node being disrupted — is a new question. At
// every step the decision is the one a pass without a Memo makes.
func TestSimulationsAreRememberedByContent(t *testing.T) {
	np := nodePool("p")
	medium := types()[1]
	versioned := func(cand *Candidate, version string) *Candidate {
		cand.Node.Version = version
		for i, p := range cand.Node.Pods {
			p.ResourceVersion = fmt.Sprintf("%s-%d", version, i)
		}
		return cand
	}
	a := versioned(node("a", np, medium, v1.CapacityTypeOnDemand, podOn("1")), "a1")
	b := versioned(node("b", np, medium, v1.CapacityTypeOnDemand, podOn("1")), "b1")
	c := cluster(np, a, b)
	c.Planner = provisioning.NewPlanner(c.NodePools, c.InstanceTypes, nil)
	c.Memo = NewMemo()

	step := func(what string) (*Decision, int) {
		t.Helper()
		got := Compute(context.Background(), c, Options{})
		fresh := *c
		fresh.Planner, fresh.Memo = nil, nil
		want := Compute(context.Background(), &fresh, Options{})
		if fmt.Sprint(got.Commands) != fmt.Sprint(want.Commands) {
			t.Fatalf("%s: with the Memo %v, without %v", what, got.Commands, want.Commands)
		}
		return got, len(c.Memo.simulations)
	}

	d, remembered := step("first pass")
	if len(d.Commands) != 1 || remembered == 0 {
		t.Fatalf("first pass: want one command and its simulations remembered, got %v and %d", d.Commands, remembered)
	}
	if _, again := step("same cluster"); again != remembered {
		t.Fatalf("the same cluster again asked %d new questions", again-remembered)
	}

	// A pending pod that needs the room consolidation would take.
	pending := podOn("3500m")
	pending.ResourceVersion = "p1"
	c.Pending = []*corev1.Pod{pending}
	if d, _ := step("with a pending pod"); len(d.Commands) != 0 {
		t.Fatalf("the pending pod's room was forgotten: %v", d.Commands)
	}
	c.Pending = nil

	// Node b's content changes (a bigger pod, a new Version).
	b2 := versioned(node("b", np, medium, v1.CapacityTypeOnDemand, podOn("3")), "b2")
	c.Nodes = []*Candidate{a, b2}
	step("node b changed")

	// With a budget of one node, multi-node consolidation has nothing to
	// do and single-node consolidation asks about node a alone: its pod
	// moves to b, and a goes.
	c.Nodes = []*Candidate{a, b}
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "1"}}
	if d, _ := step("budget of one"); len(d.Commands) != 1 || len(d.Commands[0].Replacements) != 0 {
		t.Fatalf("budget of one: want node a deleted, got %v", d.Commands)
	}
	// Node b is being disrupted: nothing new may go there, so the same
	// question about node a has a new answer (a smaller replacement).
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "100%"}}
	disrupting := *b
	disrupting.Disrupting = true
	c.Nodes = []*Candidate{a, &disrupting}
	if d, _ := step("node b disrupting"); len(d.Commands) != 1 || len(d.Commands[0].Replacements) != 1 {
		t.Fatalf("node b disrupting: want node a replaced, got %v", d.Commands)
	}

	// Objects without a content key are never remembered.
	c.Memo = NewMemo()
	c.Nodes = []*Candidate{node("x", np, medium, v1.CapacityTypeOnDemand, podOn("1")), node("y", np, medium, v1.CapacityTypeOnDemand, podOn("1"))}
	if _, n := step("no versions"); n != 0 {
		t.Fatalf("nodes without a Version: %d simulations remembered", n)
	}
}

// TestMemoKeepsTheNewestScopes: answers are kept for the maxSimScopes
// scopes used last (a scope asked again becomes the newest), older ones
// are let go with what they hold, and ForgetSimulations lets go of all.
func TestMemoKeepsTheNewestScopes(t *testing.T) {
	m := NewMemo()
	scope := func(i byte) simScope { return simScope{world: [32]byte{i}} }
	for i := byte(0); i < maxSimScopes; i++ {
		m.remember(scope(i), "a", simAnswer{ok: true})
	}
	m.remember(scope(0), "b", simAnswer{ok: true}) // 0 is the newest now
	m.remember(scope(maxSimScopes), "a", simAnswer{ok: true})
	if _, ok := m.simulations[scope(1)]; ok {
		t.Errorf("the oldest scope was kept")
	}
	if len(m.simulations) != maxSimScopes || len(m.simulations[scope(0)]) != 2 {
		t.Errorf("%d scopes, scope 0 with %d answers; want %d and 2", len(m.simulations), len(m.simulations[scope(0)]), maxSimScopes)
	}
	m.ForgetSimulations()
	if len(m.simulations) != 0 || len(m.scopes) != 0 {
		t.Errorf("ForgetSimulations kept %d scopes", len(m.simulations))
	}
}
