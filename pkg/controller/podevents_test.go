package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// TestPodEventPredicate: upstream's pod events — bound, terminal,
// terminating, each once — pass; other changes of a pod do not.
func TestPodEventPredicate(t *testing.T) {
	pending := &corev1.Pod{}
	bound := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "n"}}
	running := bound.DeepCopy()
	running.Status.Phase = corev1.PodRunning
	succeeded := bound.DeepCopy()
	succeeded.Status.Phase = corev1.PodSucceeded
	terminating := running.DeepCopy()
	terminating.DeletionTimestamp = &metav1.Time{}
	unboundGone := pending.DeepCopy()
	unboundGone.DeletionTimestamp = &metav1.Time{}
	for _, c := range []struct {
		name     string
		old, new *corev1.Pod
		want     bool
	}{
		{"bound", pending, bound, true},
		{"started", bound, running, false},
		{"terminal", running, succeeded, true},
		{"terminal again", succeeded, succeeded, false},
		{"terminating", running, terminating, true},
		{"terminating again", terminating, terminating, false},
		{"unbound pod deleted", pending, unboundGone, false},
	} {
		if got := podEventPredicate.Update(event.UpdateEvent{ObjectOld: c.old, ObjectNew: c.new}); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if podEventPredicate.Create(event.CreateEvent{Object: bound}) || podEventPredicate.Delete(event.DeleteEvent{Object: bound}) {
		t.Error("a pod listed or deleted is not a pod event")
	}
}
