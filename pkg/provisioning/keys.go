package provisioning

import corev1 "k8s.io/api/core/v1"

// nodeKey is a node's content key: its name and Version.
type nodeKey struct{ name, version string }

func nodeKeyOf(n *Node) (nodeKey, bool) { return nodeKey{n.Name, n.Version}, n.Version != "" }

// podKey is a pod's content key: an API server never gives two different
// pods, or two states of one pod, the same namespace, name and
// resourceVersion.
type podKey struct{ namespace, name, resourceVersion string }

func podKeyOf(p *corev1.Pod) (podKey, bool) {
	return podKey{p.Namespace, p.Name, p.ResourceVersion}, p.ResourceVersion != ""
}

// objectCache keeps what is derived from objects. Across calls it keys the
// answers by the objects' content keys, so an object that changes gets a
// new entry however a host hands it over (a new object or the same one
// changed); an object without a content key is remembered only until the
// next call, by pointer. In front of the content keys sits a map by
// pointer that remembers each object's version with its answer: an answer
// is taken from it only while the object's version is still the one it was
// derived under, and it spares hashing the key's strings for objects seen
// before. (An object's name does not change under its pointer; its
// version does, whenever its content does.) Not safe for concurrent use: its owners (Planner, Binder) hold a
// lock around each call.
type objectCache[P comparable, K comparable, V any] struct {
	key func(P) (K, bool)
	// version is the part of the key that changes when the object does
	// (a resourceVersion, a Version): what a seen entry is checked by.
	version func(P) string
	limit   int // entries kept across calls before the cache starts over
	byKey   map[K]V
	seen    map[P]versioned[V] // objects with a content key, met before
	byCall  map[P]V            // this call's objects without a content key
}

type versioned[V any] struct {
	version string
	v       V
}

func newNodeCache[V any](limit int) *objectCache[*Node, nodeKey, V] {
	return &objectCache[*Node, nodeKey, V]{key: nodeKeyOf, version: func(n *Node) string { return n.Version }, limit: limit,
		byKey: map[nodeKey]V{}, seen: map[*Node]versioned[V]{}}
}

func newPodCache[V any](limit int) *objectCache[*corev1.Pod, podKey, V] {
	return &objectCache[*corev1.Pod, podKey, V]{key: podKeyOf, version: func(p *corev1.Pod) string { return p.ResourceVersion }, limit: limit,
		byKey: map[podKey]V{}, seen: map[*corev1.Pod]versioned[V]{}}
}

// get and put on a nil cache remember nothing.
func (c *objectCache[P, K, V]) get(p P) (V, bool) {
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
	k, _ := c.key(p)
	v, found := c.byKey[k]
	if found {
		c.seen[p] = versioned[V]{ver, v}
	}
	return v, found
}

func (c *objectCache[P, K, V]) put(p P, v V) {
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

// newCall forgets the last call's unkeyed objects, and everything once the
// cache holds more than limit (at least minimum) entries.
func (c *objectCache[P, K, V]) newCall(minimum int) {
	c.byCall = nil
	if len(c.byKey) > max(c.limit, minimum) || len(c.seen) > 2*max(c.limit, minimum) {
		c.byKey = map[K]V{}
		c.seen = map[P]versioned[V]{}
	}
}

// retain drops the entries of objects not in keep.
func (c *objectCache[P, K, V]) retain(keep []P) {
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
}

func (c *objectCache[P, K, V]) len() int { return len(c.byKey) + len(c.byCall) }

// derivedPod is a copy of pod to change (a pod with its preferences
// relaxed, say). It has no resourceVersion: it is not the pod the API
// server gave that version to, so no cache may take it for that pod.
func derivedPod(pod *corev1.Pod) *corev1.Pod {
	p := pod.DeepCopy()
	p.ResourceVersion = ""
	return p
}
