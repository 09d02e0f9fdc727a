package objcache

import (
	"runtime"
	"testing"
	"weak"

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

// TestGetByContent: Get finds an object by its content key, whatever the
// pointer, an unkeyed one by its pointer, and a derived pod not at all.
func TestGetByContent(t *testing.T) {
	c := NewPodCache[int](10)
	keyed := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", ResourceVersion: "7"}}
	unkeyed := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "default"}}
	c.Put(keyed, 1)
	c.Put(unkeyed, 2)
	same := keyed.DeepCopy() // another pointer, the same content key
	for _, tc := range []struct {
		pod  *corev1.Pod
		want int
		ok   bool
	}{{keyed, 1, true}, {unkeyed, 2, true}, {same, 1, true}, {DerivedPod(keyed), 0, false}} {
		if v, ok := c.Get(tc.pod); v != tc.want || ok != tc.ok {
			t.Errorf("Get(%s) = %d, %v; want %d, %v", tc.pod.Name, v, ok, tc.want, tc.ok)
		}
	}
}

// TestObjectsAreLetGo: the cache holds no object it was given alive,
// while what it derived stays, by content key, for the object's next
// version handed over as a new object of the same content — a host hands
// each version of a pod over as a new object, and the old versions must be
// free to go. An object without a content key is remembered for its call
// only.
func TestObjectsAreLetGo(t *testing.T) {
	c := NewPodCache[int](1 << 10)
	c.NewCall(0)
	gone := putOnce(c)
	c.Put(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unkeyed", Namespace: "default"}}, 3)
	runtime.GC()
	if gone.Value() != nil {
		t.Error("the cache holds a pod it was given alive")
	}
	same := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: "default", ResourceVersion: "1"}}
	if v, ok := c.Get(same); !ok || v != 2 {
		t.Errorf("Get(the same content) = %d, %v; want 2, true", v, ok)
	}
	c.NewCall(0)
	if c.Len() != 1 {
		t.Errorf("%d entries after the call, want the keyed pod's only", c.Len())
	}
}

// putOnce puts a pod and returns a weak pointer to it.
func putOnce(c *Cache[*corev1.Pod, PodKey, int]) weak.Pointer[corev1.Pod] {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: "default", ResourceVersion: "1"}}
	c.Put(p, 2)
	return weak.Make(p)
}
