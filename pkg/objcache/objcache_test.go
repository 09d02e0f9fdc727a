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

// TestPeekRemembersNothing: Peek finds what Get finds, and leaves the
// cache as it was.
func TestPeekRemembersNothing(t *testing.T) {
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
		if v, ok := c.Peek(tc.pod); v != tc.want || ok != tc.ok {
			t.Errorf("Peek(%s) = %d, %v; want %d, %v", tc.pod.Name, v, ok, tc.want, tc.ok)
		}
	}
	if _, seen := c.seen[same]; seen {
		t.Error("Peek remembered a pointer")
	}
}

// TestObjectsMetOnceAreLetGo: the map by pointer holds an object alive
// only for two generations of calls after it was last met; an object met
// in every call keeps its entry. A host hands each version of a pod over
// as a new object, and the old versions must be free to go.
func TestObjectsMetOnceAreLetGo(t *testing.T) {
	c := NewPodCache[int](1 << 10)
	kept := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: "default", ResourceVersion: "1"}}
	c.NewCall(0)
	c.Put(kept, 1)
	gone := putOnce(c)
	for range 2*generationCalls + 1 {
		c.NewCall(0)
		if v, ok := c.Get(kept); !ok || v != 1 {
			t.Fatalf("Get(kept) = %d, %v", v, ok)
		}
	}
	runtime.GC()
	if gone.Value() != nil {
		t.Error("a pod met once is still alive two generations later")
	}
	if _, ok := c.seen[kept]; !ok {
		t.Error("a pod met in every call lost its entry by pointer")
	}
	if c.Len() != 2 {
		t.Errorf("%d entries by content key, want both pods'", c.Len())
	}
}

// putOnce puts a pod met once and returns a weak pointer to it.
func putOnce(c *Cache[*corev1.Pod, PodKey, int]) weak.Pointer[corev1.Pod] {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: "default", ResourceVersion: "1"}}
	c.Put(p, 2)
	return weak.Make(p)
}
