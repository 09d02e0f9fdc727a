package objcache

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDerivedPodsAreNotTheirOriginal: a pod relaxed of its preferences is
// a different pod to every cache, though it keeps its name — taking it
// for the original made relaxation go round for ever.
func TestDerivedPodsAreNotTheirOriginal(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", ResourceVersion: "7"}}
	d := DerivedPod(p)
	if _, keyed := PodKeyOf(d); keyed || d.Name != p.Name {
		t.Errorf("derived pod keyed %v, name %s", keyed, d.Name)
	}
}
