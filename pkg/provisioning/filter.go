package provisioning

// The filter core: the checks the planner makes of existing nodes, as a
// pass over a fixed list of nodes that a kube-scheduler model drives.

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// FilterCache keeps what Filters derive from nodes and pods between
// passes, by the objects' content keys (see Node.Version). It is not safe
// for concurrent use: its owner runs one pass at a time.
type FilterCache struct {
	dims  *dims
	pods  *podCache[*podMemo]
	nodes *nodeCache[*nodeMemo]
}

// NewFilterCache returns an empty FilterCache.
func NewFilterCache() *FilterCache {
	return &FilterCache{dims: newDims(), pods: newPodCache[*podMemo](1 << 18), nodes: newNodeCache[*nodeMemo](math.MaxInt32)}
}

// Retain forgets what was derived from nodes not in the list.
func (fc *FilterCache) Retain(nodes []*Node) {
	fc.nodes.Retain(nodes)
}

// FilterPod is a pending pod as the filters take it.
type FilterPod struct {
	// Pod holds the constraints the filters check: the caller strips what
	// they ignore (preferences).
	Pod *corev1.Pod
	// AnyTerm says Pod has several required node-affinity terms, any one of
	// which will do: its Class then requires only the pod's other node
	// constraints (its nodeSelector), and the caller matches the terms.
	AnyTerm bool
}

// Filter is one pass of the checks the planner makes of existing nodes —
// deletion, taints, node requirements, resources, host ports, required
// topology spread and pod (anti-)affinity — over a fixed list of nodes
// (addressed by their index in it), as pods are placed on them and bound
// pods are evicted. It is not safe for concurrent use.
type Filter struct {
	fc    *FilterCache
	s     *scheduler
	bound map[*corev1.Pod]*podClass // bound pods as topology counts them, for eviction
}

// Class is a class of pending pods the filters treat alike (the same
// namespace, labels, requests and constraints). Classes of one Filter
// compare equal when their pods are alike.
type Class struct{ c *podClass }

// NewFilter starts a pass over the nodes with the pending pods, and
// returns each pod's Class. InFlight nodes take pods despite Joiner's
// unregistered taint; MarkedForDeletion ones take none. A pod's volumes
// narrow the nodes it may join as kube-scheduler's VolumeBinding and
// VolumeZone filters do (see Class.Waiting for those that hold it).
func (fc *FilterCache) NewFilter(nodes []*Node, pods []FilterPod, volumes Volumes) (*Filter, []Class) {
	fc.pods.NewCall(0)
	fc.nodes.NewCall(0)
	s := &scheduler{dims: fc.dims, topo: newTopology(), classes: map[uint64]*podClass{}, podMemos: fc.pods, nodeMemos: fc.nodes, volumes: volumes}
	s.addNodes(nodes)
	classes := make([]Class, len(pods))
	for i, p := range pods {
		c := s.classFor(p.Pod)
		if p.AnyTerm {
			c.reqs = strictRequirements(withoutRequiredNodeAffinity(p.Pod))
			c.affinity = c.reqs
			if !volumes.Empty() {
				c.reqs = c.reqs.Copy()
				volumes.of(p.Pod, c.reqs)
			}
		}
		classes[i] = Class{c}
	}
	s.addNodeDomains()
	for _, c := range s.sortedClasses() {
		s.finishClass(c)
	}
	s.recordExisting(nodes)
	return &Filter{fc: fc, s: s, bound: map[*corev1.Pod]*podClass{}}, classes
}

func withoutRequiredNodeAffinity(pod *corev1.Pod) *corev1.Pod {
	p := derivedPod(pod)
	p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = nil
	return p
}

// ClassKey is the class key of the whole pod, as given (preferences and
// all): pods with equal keys are alike in every scheduling respect.
func (f *Filter) ClassKey(pod *corev1.Pod) uint64 {
	m := f.s.podMemoOf(pod)
	if !m.keyKnown {
		m.key, m.keyKnown = classKey(pod, f.s.podVecOf(pod, m)), true
	}
	return m.key
}

// Prefilter rejects for the class, in one pass, the nodes it can never
// join while pods are only added: those being deleted and those without
// room for it. Calling it again does nothing.
func (f *Filter) Prefilter(c Class) {
	f.s.prefilter(c.c)
	c.c.rejected.grow(len(f.s.existing))
}

// Rejected says node i was rejected for the class for the rest of the
// pass (until an Evict from it).
func (c Class) Rejected(i int) bool { return c.c.rejected.has(i) }

// Reject rejects node i for the class, after a permanent Check failure.
func (c Class) Reject(i int) { c.c.rejected.set(i) }

// Waiting says why the class's pods bind to no node now: a claim of
// theirs is unbound with Immediate binding, being deleted, lost or
// missing ("" when none is).
func (c Class) Waiting() string {
	if w, ok := c.c.invalid.(volumeWait); ok {
		return string(w)
	}
	return ""
}

// Requirements are the node requirements the class is held to.
func (c Class) Requirements() scheduling.Requirements { return c.c.reqs }

// Check reports whether a pod of the class passes the filters on node i
// now, changing nothing: err says why not, and permanent that the failure
// cannot go away while pods are only added.
func (f *Filter) Check(c Class, i int) (permanent bool, err error) {
	return f.s.existing[i].check(f.s, c.c)
}

// Add places a pod of the class, which Check accepted, on node i.
func (f *Filter) Add(c Class, i int, pod *corev1.Pod) {
	f.s.existing[i].add(f.s, c.c, pod)
}

// Placed are the pods Add placed on node i, in order.
func (f *Filter) Placed(i int) []*corev1.Pod { return f.s.existing[i].added }

// Resources are node i's allocatable and requested cpu (millicores) and
// memory (bytes), with the pods placed and less the pods evicted.
func (f *Filter) Resources(i int) (allocatable, requested [2]int64) {
	e := f.s.existing[i]
	return [2]int64{e.alloc.get(0), e.alloc.get(1)}, [2]int64{e.used.get(0), e.used.get(1)}
}

// Evict takes bound pods off node i for the rest of the pass: their room
// is free and topology no longer counts them. Every class may look at the
// node again.
func (f *Filter) Evict(i int, pods []*corev1.Pod) {
	s, e := f.s, f.s.existing[i]
	doms := existingDomains(e.node)
	for _, q := range pods {
		s.topo.unrecord(f.boundClass(q), doms)
	}
	for _, q := range pods {
		e.used = minus(e.used, s.podVec(q))
	}
	// Room on this node grew, which rejections and the free-room order
	// assume never happens.
	for _, cl := range s.classes {
		if i < len(cl.rejected)*64 {
			cl.rejected.clear(i)
		}
	}
	s.byFree, s.initialFree = nil, nil
}

// Trial is node i as the filters would see it for a class with some of
// its bound pods gone: what preemption weighs before it evicts anything.
// While a Trial is open, topology leaves its pods out; End counts those
// not given back again. One Trial at a time per Filter; it is not safe for
// concurrent use.
type Trial struct {
	f    *Filter
	c    *podClass
	e    *existingTarget
	doms domainsOf
	used vec
	gone []*corev1.Pod
	back map[*corev1.Pod]bool
}

// Try opens a Trial of the class on node i with the pods gone. It fails,
// leaving nothing open, when the class would not pass the resource and
// topology filters there even then.
func (f *Filter) Try(c Class, i int, gone []*corev1.Pod) (*Trial, bool) {
	s, e := f.s, f.s.existing[i]
	used := e.used
	for _, q := range gone {
		used = minus(used, s.podVec(q))
	}
	if !sumFitsIn(used, c.c.requests, e.alloc) {
		return nil, false
	}
	t := &Trial{f: f, c: c.c, e: e, doms: existingDomains(e.node), used: used, gone: gone, back: map[*corev1.Pod]bool{}}
	for _, q := range gone {
		s.topo.unrecord(f.boundClass(q), t.doms)
	}
	if !t.topologyAllows() {
		for _, q := range gone {
			s.topo.record(f.boundClass(q), t.doms)
		}
		return nil, false
	}
	return t, true
}

// GiveBack puts a gone pod back if the class still passes the filters
// with it there, and says whether it did.
func (t *Trial) GiveBack(q *corev1.Pod) bool {
	s := t.f.s
	if back := t.used.plus(s.podVec(q)); sumFitsIn(back, t.c.requests, t.e.alloc) {
		s.topo.record(t.f.boundClass(q), t.doms)
		if t.topologyAllows() {
			t.used = back
			t.back[q] = true
			return true
		}
		s.topo.unrecord(t.f.boundClass(q), t.doms)
	}
	return false
}

// End closes the Trial: topology counts the pods not given back again.
func (t *Trial) End() {
	for _, q := range t.gone {
		if !t.back[q] {
			t.f.s.topo.record(t.f.boundClass(q), t.doms)
		}
	}
}

func (t *Trial) topologyAllows() bool {
	s := t.f.s
	_, err := s.topo.check(t.c, t.doms, func(g *topoGroup) []string { return s.eligible(t.c, g) })
	return err == nil
}

// boundClass is a bound pod as the topology counts it, for taking it out
// (and putting it back).
func (f *Filter) boundClass(q *corev1.Pod) *podClass {
	if c, ok := f.bound[q]; ok {
		return c
	}
	t := f.s.topo
	c := &podClass{namespace: q.Namespace, labels: q.Labels, requiredAnti: t.requiredAntiAffinityGroups(q)}
	for _, g := range t.ordered {
		if g.selects(q.Namespace, q.Labels) {
			c.matchedBy = append(c.matchedBy, g)
		}
	}
	f.bound[q] = c
	return c
}

func minus(a, b vec) vec {
	out := make(vec, max(len(a), len(b)))
	copy(out, a)
	for i, x := range b {
		out[i] -= x
	}
	return out
}
