package state

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestNominate: the pods a claim was launched for that kube-scheduler has
// yet to place are returned once, and, nominated so, stay pending to
// provisioning; a pod kube-scheduler nominated for a preemption, one for
// another scheduler, one bound and one nominated elsewhere are not
// returned, and a nomination is forgotten once its pod binds.
func TestNominate(t *testing.T) {
	s := (&Objects{NodePools: cluster().NodePools}).Store()
	planned := pod("planned", "", "1")
	preempting := pod("preempting", "", "1", func(p *corev1.Pod) { p.Status.NominatedNodeName = "other" })
	custom := pod("custom", "", "1", func(p *corev1.Pod) { p.Spec.SchedulerName = "volcano" })
	bound := pod("bound", "n0", "1")
	for _, p := range []*corev1.Pod{planned, preempting, custom, bound} {
		s.SetPod(p)
	}
	launchedNode(s, "n1", false, planned, preempting, custom, bound)

	got := s.Nominate("n1", "n1")
	if names(got) != "planned" {
		t.Fatalf("Nominate returned %q, want planned", names(got))
	}
	if again := s.Nominate("n1", "n1"); len(again) != 0 {
		t.Errorf("Nominate returned %q again", names(again))
	}

	// The nomination comes back through the informer.
	nominated := planned.DeepCopy()
	nominated.Status.NominatedNodeName = "n1"
	s.SetPod(nominated)
	if !s.OwnNomination(nominated) || s.OwnNomination(preempting) {
		t.Errorf("OwnNomination: planned %v (want true), preempting %v (want false)", s.OwnNomination(nominated), s.OwnNomination(preempting))
	}
	pending := names(s.PendingPods())
	if !strings.Contains(pending, "planned") || strings.Contains(pending, "preempting") {
		t.Errorf("pending %v: want planned (Joiner's nomination) and not preempting (kube-scheduler's)", pending)
	}
	// Nominated elsewhere later (a preemption): no longer Joiner's.
	elsewhere := nominated.DeepCopy()
	elsewhere.Status.NominatedNodeName = "n9"
	s.SetPod(elsewhere)
	if strings.Contains(names(s.PendingPods()), "planned") {
		t.Errorf("a pod kube-scheduler nominated elsewhere is still pending to provisioning")
	}
	// Bound: forgotten.
	b := nominated.DeepCopy()
	b.Spec.NodeName = "n1"
	s.SetPod(b)
	if _, ok := s.launch.nominated[refOf(b)]; ok {
		t.Errorf("the nomination of a bound pod is remembered")
	}
}
