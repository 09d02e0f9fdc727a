package disruption

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// TestExplainNode: for each cause, the method that meets it says so with
// its evidence, and a node something acts on says what.
func TestExplainNode(t *testing.T) {
	np := nodePool("p")
	small, medium, large := types()[0], types()[1], types()[2]
	pinned := func(p *corev1.Pod) { p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"} }
	for _, tc := range []struct {
		name   string
		pool   *v1.NodePool
		node   func() *Candidate
		method Method
		acts   bool
		why    string
	}{
		{"expired", np, func() *Candidate {
			n := node("n", np, medium, v1.CapacityTypeOnDemand, podOn("1"))
			n.NodeClaim.CreationTimestamp = metav1.NewTime(t0.Add(-800 * time.Hour))
			return n
		}, "expiration", true, "it expired at 2026-11-27T04:00:00Z (expireAfter 720h0m0s)"},
		{"empty", np, func() *Candidate { return node("n", np, medium, v1.CapacityTypeOnDemand) }, MethodEmpty, true, "it is empty: it is deleted"},
		{"do-not-disrupt", np, func() *Candidate { return node("n", np, large, v1.CapacityTypeOnDemand, podOn("1", pinned)) },
			MethodSingleNode, false, "pod default/pod-"},
		{"consolidateAfter", np, func() *Candidate {
			n := node("n", np, large, v1.CapacityTypeOnDemand, podOn("1"))
			n.NodeClaim.Status.LastPodEventTime = metav1.NewTime(t0.Add(-10 * time.Second))
			return n
		}, MethodSingleNode, false, "consolidateAfter 30s has not passed since its last pod change at 2026-11-30T11:59:50Z (until 2026-11-30T12:00:20Z)"},
		{"budget", nodePool("p", func(np *v1.NodePool) { np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "0"}} }), func() *Candidate {
			return node("n", np, large, v1.CapacityTypeOnDemand, podOn("1"))
		}, MethodSingleNode, false, "NodePool p's budget allows no Underutilized disruption now"},
		{"no cheaper", np, func() *Candidate { return node("n", np, small, v1.CapacityTypeOnDemand, podOn("1500m")) },
			MethodSingleNode, false, "no cheaper replacement: the cheapest type that holds its pods is small at 0.1000 USD/h, against 0.1000 USD/h now"},
		{"replace", np, func() *Candidate { return node("n", np, large, v1.CapacityTypeOnDemand, podOn("1")) },
			MethodSingleNode, true, "it is replaced by a cheaper small, saving 0.7000 USD/h"},
		{"drifted", np, func() *Candidate {
			n := node("n", np, medium, v1.CapacityTypeOnDemand, podOn("1"))
			n.NodeClassDrift = "AMIDrift"
			return n
		}, MethodDrift, true, "drifted (node class: AMIDrift): it is replaced"},
		{"drifted, pinned", np, func() *Candidate {
			n := node("n", np, medium, v1.CapacityTypeOnDemand, podOn("1", pinned))
			n.NodeClassDrift = "AMIDrift"
			return n
		}, MethodDrift, false, "and its claim has no terminationGracePeriod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.node()
			answers, err := ExplainNode(context.Background(), cluster(tc.pool, n), "n", Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got *Answer
			for i := range answers {
				if answers[i].Method == tc.method {
					got = &answers[i]
				}
			}
			if got == nil || got.Acts != tc.acts || !strings.Contains(got.Why, tc.why) {
				t.Errorf("%s: got %+v, want acts=%v with %q", tc.method, answers, tc.acts, tc.why)
			}
		})
	}
	if _, err := ExplainNode(context.Background(), cluster(np), "nope", Options{}); err == nil || !strings.Contains(err.Error(), "not one Joiner manages") {
		t.Errorf("unknown node: %v", err)
	}
}
