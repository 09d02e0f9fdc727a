// Package objcache keeps what decisions derive from API objects (a pod's
// request vector, a node's scoring facts) between calls, keyed by the
// objects' content keys rather than by pointer, so a host may hand an
// object over however it likes: as a new object or as the same one changed.
package objcache

import corev1 "k8s.io/api/core/v1"

// Cache keeps what is derived from objects. Across calls it keys the
// answers by the objects' content keys, so an object that changes gets a
// new entry however a host hands it over (a new object or the same one
// changed); an object without a content key is remembered only until the
// next call, by pointer. In front of the content keys sits a map by
// pointer that remembers each object's version with its answer: an answer
// is taken from it only while the object's version is still the one it was
// derived under, and it spares hashing the key's strings for objects seen
// before. (An object's name does not change under its pointer; its
// version does, whenever its content does.) The map by pointer holds its
// objects alive, so it forgets those not met for a while: it keeps two
// generations, each of generationCalls calls, and an object met again is
// carried into the current one. A host's cache holds each object it hands
// over only until a newer version replaces it; without generations the
// objects met once stayed alive until the cache started over (a controller
// at 5,000 pods, its scale-in updating thousands, held about three times its
// pods). A nil Cache remembers nothing. Not safe for concurrent use: its
// owners (a Planner, a Binder) hold a lock around each call.
type Cache[P comparable, K comparable, V any] struct {
	key func(P) (K, bool)
	// version is the part of the key that changes when the object does
	// (a resourceVersion, a Version): what a seen entry is checked by.
	version func(P) string
	limit   int // entries kept across calls before the cache starts over
	byKey   map[K]V
	// seen holds the objects with a content key met in this generation,
	// older those of the last; calls counts this generation's calls.
	seen, older map[P]versioned[V]
	calls       int
	byCall      map[P]V // this call's objects without a content key
}

// generationCalls is how many calls a generation of the map by pointer
// lasts: an object not met in two generations is let go.
const generationCalls = 8

type versioned[V any] struct {
	version string
	v       V
}

// New returns a cache that keys objects by key (false: the object has no
// content key) and checks a pointer's entry by version; it starts over once
// it holds more than limit entries at the start of a call.
func New[P comparable, K comparable, V any](key func(P) (K, bool), version func(P) string, limit int) *Cache[P, K, V] {
	return &Cache[P, K, V]{key: key, version: version, limit: limit, byKey: map[K]V{}, seen: map[P]versioned[V]{}}
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
	return New[*corev1.Pod, PodKey, V](PodKeyOf, func(p *corev1.Pod) string { return p.ResourceVersion }, limit)
}

// Get returns what was put for the object, if it still holds.
func (c *Cache[P, K, V]) Get(p P) (V, bool) {
	return c.get(p, true)
}

// Peek is Get without remembering anything: while nothing puts, any
// number of goroutines may peek at once.
func (c *Cache[P, K, V]) Peek(p P) (V, bool) {
	return c.get(p, false)
}

// get looks p up; remember records a hit by content key against the
// object itself, so the next Get of it skips making the key.
func (c *Cache[P, K, V]) get(p P, remember bool) (V, bool) {
	var zero V
	if c == nil {
		return zero, false
	}
	ver := c.version(p)
	if ver == "" {
		v, found := c.byCall[p]
		return v, found
	}
	if e, found := c.seen[p]; found && e.version == ver {
		return e.v, true
	}
	if e, found := c.older[p]; found && e.version == ver {
		if remember {
			c.seen[p] = e
		}
		return e.v, true
	}
	k, _ := c.key(p)
	v, found := c.byKey[k]
	if found && remember {
		c.seen[p] = versioned[V]{ver, v}
	}
	return v, found
}

// Put remembers v for the object.
func (c *Cache[P, K, V]) Put(p P, v V) {
	if c == nil {
		return
	}
	if k, ok := c.key(p); ok {
		c.byKey[k] = v
		c.seen[p] = versioned[V]{c.version(p), v}
		return
	}
	if c.byCall == nil {
		c.byCall = map[P]V{}
	}
	c.byCall[p] = v
}

// NewCall forgets the last call's unkeyed objects, begins a new generation
// of the map by pointer every generationCalls calls, and forgets everything
// once the cache holds more than limit (at least minimum) entries.
func (c *Cache[P, K, V]) NewCall(minimum int) {
	c.byCall = nil
	if len(c.byKey) > max(c.limit, minimum) || len(c.seen) > 2*max(c.limit, minimum) {
		c.byKey = map[K]V{}
		c.seen, c.older, c.calls = map[P]versioned[V]{}, nil, 0
	}
	if c.calls++; c.calls > generationCalls {
		c.seen, c.older, c.calls = make(map[P]versioned[V], len(c.seen)), c.seen, 1
	}
}

// Retain drops the entries of objects not in keep.
func (c *Cache[P, K, V]) Retain(keep []P) {
	set := make(map[K]bool, len(keep))
	ptrs := make(map[P]bool, len(keep))
	for _, p := range keep {
		if k, ok := c.key(p); ok {
			set[k] = true
			ptrs[p] = true
		}
	}
	for k := range c.byKey {
		if !set[k] {
			delete(c.byKey, k)
		}
	}
	for p := range c.seen {
		if !ptrs[p] {
			delete(c.seen, p)
		}
	}
	for p := range c.older {
		if !ptrs[p] {
			delete(c.older, p)
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
