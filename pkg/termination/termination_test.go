package termination

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func pod(name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func critical(p *corev1.Pod) { p.Spec.PriorityClassName = "system-cluster-critical" }
func daemon(p *corev1.Pod) {
	yes := true
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: &yes}}
}
func grace(s int64) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &s }
}
func doNotDisrupt(p *corev1.Pod) {
	p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "true"}
}

func podNames(ps []*corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestEvictionOrder(t *testing.T) {
	app, crit, ds, critDS := pod("app"), pod("crit", critical), pod("ds", daemon), pod("critds", daemon, critical)
	d := Drain{Started: t0, Pods: []*corev1.Pod{critDS, ds, crit, app}}
	// Upstream's order: non-critical, non-critical DaemonSet, critical,
	// critical DaemonSet.
	for _, want := range []string{"app", "ds", "crit", "critds"} {
		st := Next(d, t0)
		if len(st.Evict) != 1 || st.Evict[0].Name != want {
			t.Fatalf("want %s evicted next, got %v (waiting %d)", want, podNames(st.Evict), len(st.Waiting))
		}
		// The eviction goes through: the pod is gone next time.
		var rest []*corev1.Pod
		for _, p := range d.Pods {
			if p != st.Evict[0] {
				rest = append(rest, p)
			}
		}
		d.Pods = rest
	}
	if !Next(d, t0).Done {
		t.Fatal("empty node: done")
	}
	// Completed pods do not hold the node.
	done := pod("job", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })
	if !Next(Drain{Started: t0, Pods: []*corev1.Pod{done}}, t0).Done {
		t.Fatal("a succeeded pod does not block termination")
	}
	// Neither do mirror pods, pods that tolerate the disrupted taint (they
	// are not evicted either), nor a pod stuck terminating for over a
	// minute past its deletion timestamp.
	mirror := pod("kube-proxy", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} })
	stays := pod("agent", func(p *corev1.Pod) { p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}} })
	deleted := metav1.NewTime(t0)
	stuck := pod("stuck", func(p *corev1.Pod) { p.DeletionTimestamp = &deleted })
	st := Next(Drain{Started: t0, Pods: []*corev1.Pod{mirror, stays, stuck}}, t0.Add(61*time.Second))
	if !st.Done || len(st.Evict) != 0 {
		t.Fatalf("mirror, tolerating and stuck pods hold nothing: %+v", st)
	}
	if st := Next(Drain{Started: t0, Pods: []*corev1.Pod{stuck}}, t0.Add(30*time.Second)); st.Done || st.Waiting[stuck] != "terminating" {
		t.Fatalf("a pod 30 s into its termination still holds the node: %+v", st)
	}
}

func TestPDBsAndDoNotDisrupt(t *testing.T) {
	a, b := pod("a"), pod("b")
	a.Labels["tier"], b.Labels["tier"] = "db", "db"
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}}
	st := Next(Drain{Started: t0, Pods: []*corev1.Pod{a, b}, PDBs: []*policyv1.PodDisruptionBudget{pdb}}, t0)
	if len(st.Evict) != 1 || st.Evict[0] != a || st.Waiting[b] == "" {
		t.Fatalf("PDB allows 1: evict a, b waits; got evict %v waiting %v", podNames(st.Evict), st.Waiting)
	}
	pinned := pod("pinned", doNotDisrupt, grace(30))
	tgp := time.Hour
	d := Drain{Started: t0, GracePeriod: &tgp, Pods: []*corev1.Pod{pinned}}
	if st := Next(d, t0.Add(30*time.Minute)); len(st.Evict)+len(st.Delete) != 0 {
		t.Fatalf("do-not-disrupt pod is left alone before the grace period: %+v", st)
	}
	// Deleted 30 s (its own grace) before the node's deadline.
	if st := Next(d, t0.Add(tgp-31*time.Second)); len(st.Delete) != 0 {
		t.Fatal("too early")
	}
	if st := Next(d, t0.Add(tgp-30*time.Second)); len(st.Delete) != 1 {
		t.Fatalf("at deadline − pod grace: delete it, got %+v", st)
	}
	// Without a terminationGracePeriod it waits forever.
	if st := Next(Drain{Started: t0, Pods: []*corev1.Pod{pinned}}, t0.Add(1000*time.Hour)); len(st.Delete)+len(st.Evict) != 0 || st.Done {
		t.Fatal("no grace period: wait indefinitely")
	}
	// A PDB that blocks is overridden at the deadline too.
	blocked := &policyv1.PodDisruptionBudget{ObjectMeta: pdb.ObjectMeta, Spec: pdb.Spec}
	d = Drain{Started: t0, GracePeriod: &tgp, Pods: []*corev1.Pod{a}, PDBs: []*policyv1.PodDisruptionBudget{blocked}}
	if st := Next(d, t0.Add(tgp)); len(st.Delete) != 1 {
		t.Fatalf("PDB-blocked pod deleted at the deadline: %+v", st)
	}
}

// TestDoNotDisruptDuration: a do-not-disrupt duration holds a pod's
// eviction only until that long after the pod started.
func TestDoNotDisruptDuration(t *testing.T) {
	p := pod("warm", func(p *corev1.Pod) {
		p.Annotations = map[string]string{v1.AnnotationDoNotDisrupt: "10m"}
		p.Status.StartTime = &metav1.Time{Time: t0.Add(-5 * time.Minute)}
	})
	d := Drain{Started: t0, Pods: []*corev1.Pod{p}}
	if st := Next(d, t0); len(st.Evict) != 0 || st.Waiting[p] == "" {
		t.Fatalf("5 minutes into its 10: wait, got evict %v", podNames(st.Evict))
	}
	if st := Next(d, t0.Add(5*time.Minute)); len(st.Evict) != 1 {
		t.Fatalf("10 minutes after its start: evict, got %+v", st.Waiting)
	}
}

// Within a group the larger pods go first (cpu, then memory, then by
// name), so their replacements reach kube-scheduler first and take the
// emptiest nodes; the small ones fill in after.
func TestEvictionOrderLargerFirst(t *testing.T) {
	sized := func(cpu, mem string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}
		}
	}
	xs, l, m, m2, bigMem := pod("xs", sized("100m", "128Mi")), pod("l", sized("2", "4Gi")), pod("m", sized("1", "2Gi")),
		pod("m2", sized("1", "2Gi")), pod("big-mem", sized("1", "8Gi"))
	crit := pod("crit", critical, sized("4", "8Gi"))
	st := Next(Drain{Started: t0, Pods: []*corev1.Pod{xs, m2, crit, m, bigMem, l}}, t0)
	if got, want := podNames(st.Evict), []string{"l", "big-mem", "m", "m2", "xs"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("evicted %v, want %v (the critical pod waits for them)", got, want)
	}
	if got := podNames(EvictionOrder([]*corev1.Pod{xs, crit, l})); fmt.Sprint(got) != "[l xs crit]" {
		t.Errorf("EvictionOrder %v, want [l xs crit]", got)
	}
}
