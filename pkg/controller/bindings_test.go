package controller

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// TestBindingsSeenByTheFeed: a pod the feed saw pending and now sees bound
// is a binding — kube-scheduler is busy on that node for bindingQuiet
// after it, not on others — and nothing else is: a pod first seen bound,
// or a pending pod's update.
func TestBindingsSeenByTheFeed(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	f := &storeFeed{store: state.NewStore(state.WaitForScheduler), batch: NewBatcher(clk, time.Second, 10*time.Second), clock: clk, bindings: &bindings{}}
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	boundTo := func(p *corev1.Pod, node string) *corev1.Pod {
		cp := p.DeepCopy()
		cp.Spec.NodeName = node
		return cp
	}
	f.podChanged(boundTo(pending, "n0")) // first seen bound
	f.podChanged(pending.DeepCopy())     // seen pending: in the Store, an update
	if busy, _ := f.bindings.busy(clk.Now(), []string{"n0", "n1"}); busy {
		t.Fatal("busy with no pod bound after it was seen pending")
	}
	f.podChanged(pending.DeepCopy())
	clk.Step(300 * time.Millisecond)
	at := clk.Now()
	f.podChanged(boundTo(pending, "n1"))
	clk.Step(300 * time.Millisecond)
	f.podChanged(pending2(pending))
	f.podChanged(boundTo(pending2(pending), "n2"))
	busy, quietAt := f.bindings.busy(clk.Now(), []string{"n0", "n1"})
	if !busy || !quietAt.Equal(at.Add(bindingQuiet)) {
		t.Fatalf("after a binding to n1: busy on n0, n1 %v until %s, want true until %s", busy, quietAt, at.Add(bindingQuiet))
	}
	if busy, quietAt := f.bindings.busy(clk.Now(), []string{"n1", "n2"}); !busy || !quietAt.Equal(at.Add(300*time.Millisecond+bindingQuiet)) {
		t.Fatalf("busy on n1, n2 %v until %s, want true until n2's quiet, %s", busy, quietAt, at.Add(300*time.Millisecond+bindingQuiet))
	}
	if busy, _ := f.bindings.busy(clk.Now(), []string{"n0", "n3"}); busy {
		t.Fatal("busy on n0 and n3, where nothing was bound")
	}
	clk.Step(bindingQuiet - 300*time.Millisecond)
	if busy, _ := f.bindings.busy(clk.Now(), []string{"n1"}); busy {
		t.Errorf("busy on n1 %s after its last binding", bindingQuiet)
	}
	if busy, _ := f.bindings.busy(clk.Now(), []string{"n1", "n2"}); !busy {
		t.Errorf("not busy on n2 %s after its last binding", bindingQuiet-300*time.Millisecond)
	}
}

// pending2 is another pod like p.
func pending2(p *corev1.Pod) *corev1.Pod {
	cp := p.DeepCopy()
	cp.Name = p.Name + "2"
	return cp
}

// TestPassAfterBinding: a pass held for kube-scheduler's binding asks for
// another when the binding's quiet ends (wakeForBindings triggers the
// batch then, not before); a later ask replaces an earlier one.
func TestPassAfterBinding(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	p := &provisioner{batch: NewBatcher(clk, time.Second, 10*time.Second), clock: clk, recheck: make(chan time.Time, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.passAt(clk.Now().Add(time.Second))
	p.passAt(clk.Now().Add(2 * time.Second)) // a later pass held again
	go p.wakeForBindings(ctx)
	triggered := func() bool {
		select {
		case <-p.batch.trigger:
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	}
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(time.Second)
	if triggered() {
		t.Fatal("triggered at the earlier ask, which the later replaced")
	}
	clk.Step(time.Second)
	if !triggered() {
		t.Fatal("no pass when the binding's quiet ended")
	}
}
