// Package objcache keeps what decisions derive from API objects (a pod's
// request vector, a node's scoring facts) between calls, keyed by the
// objects' content keys rather than by pointer, so a host may hand an
// object over however it likes: as a new object or as the same one changed.
package objcache

import corev1 "k8s.io/api/core/v1"

// Cache keeps what is derived from objects. Across calls it keys the
// answers by the objects' content keys, so an object that changes gets a
// new entry however a host hands it over (a new object or the same one
// changed), and the cache holds no object alive: a host hands each version
// of a pod over as a new object, and the old versions must be free to go.
// (A map by pointer in front of the content keys, which spared hashing
// the keys' strings, held them: a controller at rest kept one old version
// of each of its pods, and its pods deleted by a scale-in until the next
// calls; see docs/scale.md, session 33.) An object without a content key
// is remembered only until the next call, by pointer. A nil Cache
// remembers nothing. Not safe for concurrent use: its owners (a Planner,
// a Binder) hold a lock around each call.
type Cache[P comparable, K comparable, V any] struct {
	key    func(P) (K, bool)
	limit  int // entries kept across calls before the cache starts over
	byKey  map[K]V
	byCall map[P]V // this call's objects without a content key
}

// New returns a cache that keys objects by key (false: the object has no
// content key); it starts over once it holds more than limit entries at
// the start of a call.
func New[P comparable, K comparable, V any](key func(P) (K, bool), limit int) *Cache[P, K, V] {
	return &Cache[P, K, V]{key: key, limit: limit, byKey: map[K]V{}}
}

// PodKey is a pod's content key: an API server never gives two different
// pods, or two states of one pod, the same namespace, name and
// resourceVersion.
type PodKey struct{ namespace, name, resourceVersion string }

// PodKeyOf is the pod's content key; false when it has no resourceVersion.
func PodKeyOf(p *corev1.Pod) (PodKey, bool) {
	return PodKey{p.Namespace, p.Name, p.ResourceVersion}, p.ResourceVersion != ""
}

// NewPodCache returns a cache of pods by their content keys.
func NewPodCache[V any](limit int) *Cache[*corev1.Pod, PodKey, V] {
	return New[*corev1.Pod, PodKey, V](PodKeyOf, limit)
}

// Get returns what was put for the object, if it still holds. It changes
// nothing, so while nothing puts, any number of goroutines may get at once.
func (c *Cache[P, K, V]) Get(p P) (V, bool) {
	var zero V
	if c == nil {
		return zero, false
	}
	k, keyed := c.key(p)
	if !keyed {
		v, found := c.byCall[p]
		return v, found
	}
	v, found := c.byKey[k]
	return v, found
}

// Put remembers v for the object.
func (c *Cache[P, K, V]) Put(p P, v V) {
	if c == nil {
		return
	}
	if k, ok := c.key(p); ok {
		c.byKey[k] = v
		return
	}
	if c.byCall == nil {
		c.byCall = map[P]V{}
	}
	c.byCall[p] = v
}

// NewCall forgets the last call's unkeyed objects, and everything once the
// cache holds more than limit (at least minimum) entries.
func (c *Cache[P, K, V]) NewCall(minimum int) {
	c.byCall = nil
	if len(c.byKey) > max(c.limit, minimum) {
		c.byKey = map[K]V{}
	}
}

// Retain drops the entries of objects not in keep.
func (c *Cache[P, K, V]) Retain(keep []P) {
	set := make(map[K]bool, len(keep))
	for _, p := range keep {
		if k, ok := c.key(p); ok {
			set[k] = true
		}
	}
	for k := range c.byKey {
		if !set[k] {
			delete(c.byKey, k)
		}
	}
}

// Len is the number of entries held.
func (c *Cache[P, K, V]) Len() int { return len(c.byKey) + len(c.byCall) }

// DerivedPod is a copy of pod to change (a pod with its preferences
// relaxed, say). It has no resourceVersion: it is not the pod the API
// server gave that version to, so no cache may take it for that pod.
func DerivedPod(pod *corev1.Pod) *corev1.Pod {
	p := pod.DeepCopy()
	p.ResourceVersion = ""
	return p
}
