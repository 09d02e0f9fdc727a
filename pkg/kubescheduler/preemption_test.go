package kubescheduler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

func withPriority(v int32) podOpt { return func(p *corev1.Pod) { p.Spec.Priority = &v } }

func names(pods []*corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, p := range pods {
		out[p.Name] = true
	}
	return out
}

func TestPreemption(t *testing.T) {
	pause := func() *corev1.Pod { return pod("1", "1Gi", withPriority(-10), label("app", "pause")) }

	t.Run("the fewest lowest-priority victims that make room", func(t *testing.T) {
		n := readyNode("n", "zone-a", 4, pause(), pause(), pause(), pause())
		p := pod("1500m", "1Gi", withPriority(100))
		res := NewBinder(BindOptions{}).Bind([]*provisioning.Node{n}, []*corev1.Pod{p})
		if len(res.Preemptions) != 1 || len(res.ExistingNodes) != 0 {
			t.Fatalf("want one preemption and no binding, got %+v", res)
		}
		if pre := res.Preemptions[0]; pre.Node != n || pre.Pod != p || len(pre.Victims) != 2 {
			t.Errorf("preemption %+v: want 2 victims on n", pre)
		}
	})
	t.Run("the node whose victims matter least", func(t *testing.T) {
		important := readyNode("important", "zone-a", 2, pod("2", "1Gi", withPriority(50)))
		placeholders := readyNode("placeholders", "zone-a", 2, pod("2", "1Gi", withPriority(-10)))
		res := NewBinder(BindOptions{}).Bind([]*provisioning.Node{important, placeholders}, []*corev1.Pod{pod("1", "1Gi", withPriority(100))})
		if len(res.Preemptions) != 1 || res.Preemptions[0].Node != placeholders {
			t.Fatalf("want a preemption on placeholders, got %+v", res.Preemptions)
		}
	})
	t.Run("budgets: an unprotected victim first", func(t *testing.T) {
		protected := readyNode("protected", "zone-a", 2, pod("2", "1Gi", withPriority(0), label("app", "db")))
		open := readyNode("open", "zone-a", 2, pod("2", "1Gi", withPriority(0), label("app", "web")))
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}
		res := NewBinder(BindOptions{PDBs: func() []*policyv1.PodDisruptionBudget { return []*policyv1.PodDisruptionBudget{pdb} }}).Bind([]*provisioning.Node{protected, open}, []*corev1.Pod{pod("1", "1Gi", withPriority(100))})
		if len(res.Preemptions) != 1 || res.Preemptions[0].Node != open {
			t.Fatalf("want a preemption on open, got %+v", res.Preemptions)
		}
	})
	t.Run("the room goes to the preemptor, not to later pods", func(t *testing.T) {
		n := readyNode("n", "zone-a", 2, pause(), pause())
		high := pod("1", "1Gi", withPriority(100))
		low := pod("1", "1Gi", withPriority(0))
		res := NewBinder(BindOptions{}).Bind([]*provisioning.Node{n}, []*corev1.Pod{low, high})
		if len(res.Preemptions) != 2 {
			t.Fatalf("want both to preempt one pause pod each, got %+v", res)
		}
		if res.Preemptions[0].Pod != high || len(res.Preemptions[0].Victims) != 1 || len(res.Preemptions[1].Victims) != 1 ||
			names(res.Preemptions[0].Victims)[res.Preemptions[1].Victims[0].Name] {
			t.Errorf("each needs its own victim, the higher priority first: %+v", res.Preemptions)
		}
	})
	t.Run("room a preemption frees beyond its need goes to the next pod", func(t *testing.T) {
		n := readyNode("n", "zone-a", 4, pod("3", "1Gi", withPriority(-10)), pod("1", "1Gi", withPriority(0)))
		first, second := pod("1", "1Gi", withPriority(100)), pod("1", "1Gi", withPriority(100))
		res := NewBinder(BindOptions{}).Bind([]*provisioning.Node{n}, []*corev1.Pod{first, second})
		if len(res.Preemptions) != 1 || len(res.Preemptions[0].Victims) != 1 {
			t.Fatalf("want one preemption of the 3-core pod, got %+v", res.Preemptions)
		}
		if got := boundTo(res); got[second.Name] != "n" {
			t.Errorf("the second pod should bind to the freed room, got %v", got)
		}
	})
	never := corev1.PreemptNever
	for name, tc := range map[string]struct {
		nodes func() []*provisioning.Node
		pod   *corev1.Pod
	}{
		"preemptionPolicy Never": {func() []*provisioning.Node {
			return []*provisioning.Node{readyNode("n", "zone-a", 2, pause(), pause())}
		},
			pod("1", "1Gi", withPriority(100), func(p *corev1.Pod) { p.Spec.PreemptionPolicy = &never })},
		"equal priority is no victim": {func() []*provisioning.Node { return []*provisioning.Node{readyNode("n", "zone-a", 2, pod("2", "1Gi"))} }, pod("1", "1Gi")},
		"an untolerated taint": {func() []*provisioning.Node {
			n := readyNode("n", "zone-a", 2, pause(), pause())
			n.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
			return []*provisioning.Node{n}
		}, pod("1", "1Gi", withPriority(100))},
		"terminating pods are no victims and still hold their room": {func() []*provisioning.Node {
			p := pause()
			p.DeletionTimestamp = &metav1.Time{}
			q := pause()
			q.DeletionTimestamp = &metav1.Time{}
			return []*provisioning.Node{readyNode("n", "zone-a", 2, p, q)}
		}, pod("1", "1Gi", withPriority(100))},
	} {
		t.Run(name, func(t *testing.T) {
			res := NewBinder(BindOptions{}).Bind(tc.nodes(), []*corev1.Pod{tc.pod})
			if len(res.Preemptions) != 0 || len(res.Unschedulable) != 1 {
				t.Errorf("want no preemption, got %+v", res.Preemptions)
			}
		})
	}
}

func TestPreemptionPrefersVictimsThatStartedLast(t *testing.T) {
	started := func(minute int) podOpt {
		return func(p *corev1.Pod) {
			at := metav1.NewTime(time.Date(2026, 11, 30, 9, minute, 0, 0, time.UTC))
			p.Status.StartTime = &at
		}
	}
	old := readyNode("old", "zone-a", 2, pod("2", "1Gi", withPriority(0), started(0)))
	young := readyNode("young", "zone-a", 2, pod("2", "1Gi", withPriority(0), started(30)))
	res := NewBinder(BindOptions{}).Bind([]*provisioning.Node{old, young}, []*corev1.Pod{pod("1", "1Gi", withPriority(100))})
	if len(res.Preemptions) != 1 || res.Preemptions[0].Node != young {
		t.Fatalf("want the node whose victim started last, got %+v", res.Preemptions)
	}
	// Reprieve order: of two equal-priority pods, the older one stays.
	n := readyNode("n", "zone-a", 2, pod("1", "1Gi", withPriority(0), started(30)), pod("1", "1Gi", withPriority(0), started(0)))
	res = NewBinder(BindOptions{}).Bind([]*provisioning.Node{n}, []*corev1.Pod{pod("1", "1Gi", withPriority(100))})
	if len(res.Preemptions) != 1 || len(res.Preemptions[0].Victims) != 1 || res.Preemptions[0].Victims[0] != n.Pods[0] {
		t.Fatalf("want the younger pod as the one victim, got %+v", res.Preemptions)
	}
}

func TestPreemptionRunsTopologyWithVictimsGone(t *testing.T) {
	pause := func() *corev1.Pod { return pod("1", "1Gi", withPriority(-10), label("app", "pause")) }
	n := readyNode("n", "zone-a", 4, pause(), pause())
	// Room for it, but it will not share a node with a placeholder.
	loner := pod("1", "1Gi", withPriority(100), affinity(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "kubernetes.io/hostname",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pause"}}}}}}))
	res := NewBinder(BindOptions{}).Bind([]*provisioning.Node{n}, []*corev1.Pod{loner})
	if len(res.Preemptions) != 1 || len(res.Preemptions[0].Victims) != 2 {
		t.Fatalf("want both placeholders preempted (anti-affinity, not room), got %+v, unschedulable %v", res.Preemptions, res.Unschedulable)
	}
}
