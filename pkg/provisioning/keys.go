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
// next call, by pointer. Not safe for concurrent use: its owners (Planner,
// Binder) hold a lock around each call.
type objectCache[P comparable, K comparable, V any] struct {
	key   func(P) (K, bool)
	limit int // entries kept across calls before the cache starts over
	byKey map[K]V
	byPtr map[P]V // this call's objects without a content key
}

func newNodeCache[V any](limit int) *objectCache[*Node, nodeKey, V] {
	return &objectCache[*Node, nodeKey, V]{key: nodeKeyOf, limit: limit, byKey: map[nodeKey]V{}}
}

func newPodCache[V any](limit int) *objectCache[*corev1.Pod, podKey, V] {
	return &objectCache[*corev1.Pod, podKey, V]{key: podKeyOf, limit: limit, byKey: map[podKey]V{}}
}

// get and put on a nil cache remember nothing.
func (c *objectCache[P, K, V]) get(p P) (V, bool) {
	if c == nil {
		var zero V
		return zero, false
	}
	if k, ok := c.key(p); ok {
		v, found := c.byKey[k]
		return v, found
	}
	v, found := c.byPtr[p]
	return v, found
}

func (c *objectCache[P, K, V]) put(p P, v V) {
	if c == nil {
		return
	}
	if k, ok := c.key(p); ok {
		c.byKey[k] = v
		return
	}
	if c.byPtr == nil {
		c.byPtr = map[P]V{}
	}
	c.byPtr[p] = v
}

// newCall forgets the last call's unkeyed objects, and everything once the
// cache holds more than limit (at least minimum) entries.
func (c *objectCache[P, K, V]) newCall(minimum int) {
	c.byPtr = nil
	if len(c.byKey) > max(c.limit, minimum) {
		c.byKey = map[K]V{}
	}
}

// retain drops the keyed entries of objects not in keep.
func (c *objectCache[P, K, V]) retain(keep []P) {
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

func (c *objectCache[P, K, V]) len() int { return len(c.byKey) + len(c.byPtr) }

// derivedPod is a copy of pod to change (a pod with its preferences
// relaxed, say). It has no resourceVersion: it is not the pod the API
// server gave that version to, so no cache may take it for that pod.
func derivedPod(pod *corev1.Pod) *corev1.Pod {
	p := pod.DeepCopy()
	p.ResourceVersion = ""
	return p
}
