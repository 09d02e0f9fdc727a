package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// TestPodTriggers: under Joiner's decisions (the Store's scheduler backlog
// on), kube-scheduler's first verdict on a pod whose backlog has run out
// wakes no provisioning — the pod was provisionable already, and its
// backlog running out woke it (Store.BacklogDue) — while a verdict on a
// pod still in its backlog, a verdict again, and a new pod already
// marked do, as every write to a marked pod does upstream; and there a
// new untried pod starts a batch (its burst's quiet ends it).
func TestPodTriggers(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	store := state.NewStore(state.WaitForScheduler)
	store.SetSchedulerBacklog(2*time.Second, 0, clk)
	untried := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: metav1.NewTime(clk.Now())},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodPending}}
	}
	verdict := func(p *corev1.Pod, msg string) *corev1.Pod {
		cp := p.DeepCopy()
		cp.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: msg}}
		return cp
	}
	for _, quiet := range []bool{true, false} {
		f := &storeFeed{store: store, batch: NewBatcher(clk, time.Second, 10*time.Second), clock: clk, quietFirstVerdicts: quiet}
		triggered := func() bool {
			select {
			case <-f.batch.trigger:
				return true
			default:
				return false
			}
		}
		start := clk.Now()
		late := untried("late-" + map[bool]string{true: "q", false: "u"}[quiet])
		early := untried("early-" + map[bool]string{true: "q", false: "u"}[quiet])
		f.podChanged(late)
		f.podChanged(early)
		if got := triggered(); got != quiet {
			t.Fatalf("quiet %v: two untried pods arriving woke provisioning: %v (want it under Joiner's decisions only)", quiet, got)
		}
		f.podChanged(early)
		if triggered() {
			t.Fatalf("quiet %v: an untried pod's update woke provisioning", quiet)
		}
		f.podChanged(verdict(early, "0/3 nodes are available"))
		if !triggered() {
			t.Errorf("quiet %v: a verdict on a pod in its backlog woke nothing", quiet)
		}
		clk.Step(2 * time.Second)
		if !store.BacklogDue(start, clk.Now()) || store.BacklogDue(clk.Now(), clk.Now().Add(time.Minute)) {
			t.Errorf("quiet %v: late's backlog ran out at %s: BacklogDue says otherwise", quiet, clk.Now())
		}
		f.podChanged(verdict(late, "0/3 nodes are available"))
		if got := triggered(); got == quiet {
			t.Errorf("quiet %v: the first verdict on a pod past its backlog woke provisioning: %v", quiet, got)
		}
		if store.BacklogDue(start, clk.Now()) {
			t.Errorf("quiet %v: a pod with a verdict is still due for its backlog", quiet)
		}
		f.podChanged(verdict(late, "0/4 nodes are available"))
		if !triggered() {
			t.Errorf("quiet %v: a verdict again woke nothing", quiet)
		}
		f.podChanged(verdict(untried("marked-"+map[bool]string{true: "q", false: "u"}[quiet]), "0/4 nodes are available"))
		if !triggered() {
			t.Errorf("quiet %v: a new pod already marked woke nothing", quiet)
		}
		clk.Step(time.Minute)
	}
}
