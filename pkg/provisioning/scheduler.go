package provisioning

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/objcache"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

type scheduler struct {
	nodeMemos *nodeCache[*nodeMemo] // nil: nothing kept between runs
	podMemos  *podCache[*podMemo]   // nil: nothing kept between runs
	dims      *dims
	topo      *topology
	pools     []*poolInfo
	// modelDRA: the Policy's ModelDRA; without it a pod that asks for
	// devices is invalid (ReasonDRA).
	modelDRA bool
	// dra allocates device claims, when the Policy models DRA.
	dra      *dra
	existing []*existingTarget
	claims   []*claim
	classes  map[uint64]*podClass
	volumes  Volumes
	// moving are pods that skip Settling nodes (Snapshot.Moving): per pod,
	// not per class, as a pending pod of the same class may go there.
	moving map[*corev1.Pod]bool
	// poolChecks is the planner's cache of class-to-pool checks by class
	// key (nil: none).
	poolChecks map[uint64][]*classPool
	// reqsByKey caches classes' node requirements by class key (nil: none).
	reqsByKey map[uint64]scheduling.Requirements
	// byFree orders existing targets by the cpu they had free at the start.
	byFree      []int
	initialFree []int64
	// upstream: choose as upstream does (emptiest open claim first).
	upstream bool
	// minValues is the snapshot's Policy.MinValues.
	minValues MinValuesPolicy
	// byPods orders the claims by their pod count, then creation, for
	// upstream's choice.
	byPods []int
	// memosShared: another plan reads nodeMemos and podMemos at the same
	// time, so they are only read; objects they have no memo for (pods
	// derived by relaxing) get fresh ones, not kept.
	memosShared bool
	// onFirstClaim, if set, is called when the first new claim is made.
	onFirstClaim func()
	// progress counts the pods placed; placed marks them by queue index.
	progress int
	placed   []bool
	// caps, by pool index, bound what a new claim may hold past its first
	// pod (nil: no caps; see claimCaps).
	caps []vec
	// res counts capacity reservations down over the pass (nil: the
	// pools offer none).
	res *reservations
	// deferred: the last place found the pod a reservation-compatible
	// NodePool with every reservation counted down (strict mode), so it
	// waits for the next pass, preferences and all.
	deferred bool
}

// Solve places the snapshot's pending pods: first on existing nodes and
// in-flight claims, then on new NodeClaims from the highest-weight NodePool
// that can run them. Pods are taken largest first (cpu, then memory); a pod
// that fits nowhere has its preferences relaxed one at a time, and if it
// still fits nowhere it is reported with a reason per NodePool. It plans
// the batch's two ways at once (see Planner.Concurrent): a caller that
// runs many Solves side by side makes a Planner instead.
func Solve(ctx context.Context, snap *Snapshot) *Results {
	pl := NewPlanner(snap.NodePools, snap.InstanceTypes, snap.Policy.OverheadDaemonSets(snap.DaemonSets))
	pl.Concurrent = true
	return pl.Solve(ctx, snap)
}

// Planner holds what Solve prepares from NodePools, instance types and
// DaemonSets, so a caller that solves many times over the same ones (the
// disruption simulations, the simulator) prepares them once, and caches
// what it derives from nodes and pods by their content keys: a node's
// Name and Version, a pod's namespace, name and resourceVersion (objects
// without one are remembered for one Solve only). A Planner is safe for
// concurrent use; its Solves run one at a time.
type Planner struct {
	// Concurrent plans a batch's two ways (see Solve) at once, on two
	// goroutines, when it has minConcurrentBatch pods or more: for a host
	// that solves one batch at a time and has a core to spare (the
	// controller, joiner plan); a host that runs many Solves side by side
	// already (the simulator, joiner tune) leaves it off. The plan is the
	// same either way. Set it before the first Solve.
	Concurrent bool

	// minConcurrent is minConcurrentBatch, but for tests.
	minConcurrent int

	mu        sync.Mutex // Solves share the caches below: one at a time
	dims      *dims
	universe  map[string][]string
	nodeMemos *nodeCache[*nodeMemo]
	podMemos  *podCache[*podMemo]
	// caches are Joiner's way's, and upstream's when the two ways run one
	// after the other; altCaches are upstream's when they run at once
	// (made on first need), so that the two never fill one map.
	caches, altCaches *wayCaches
}

// wayCaches are what a way of planning fills as it runs: the NodePools,
// with their instance-type caches, and classes' pool checks and node
// requirements by class key. Each entry is what its key determines, so
// which of two sets a plan uses changes nothing in the plan.
type wayCaches struct {
	pools      []*poolInfo
	poolChecks map[uint64][]*classPool
	reqsByKey  map[uint64]scheduling.Requirements
}

// newCall starts a Solve: caches grown too large start over.
func (c *wayCaches) newCall() {
	if c.poolChecks == nil || len(c.poolChecks) > 1<<12 {
		c.poolChecks = map[uint64][]*classPool{}
		c.reqsByKey = map[uint64]scheduling.Requirements{}
	}
}

// NewPlanner prepares NodePools, their instance types and DaemonSets.
func NewPlanner(pools []*v1.NodePool, instanceTypes map[string][]*cloudprovider.InstanceType, daemonSets []*corev1.Pod) *Planner {
	s := newScheduler(&Snapshot{NodePools: pools, InstanceTypes: instanceTypes, DaemonSets: daemonSets})
	return &Planner{minConcurrent: minConcurrentBatch, dims: s.dims, universe: s.topo.universe, caches: &wayCaches{pools: s.pools},
		nodeMemos: newNodeCache[*nodeMemo](1024), podMemos: newPodCache[*podMemo](1 << 18)}
}

// Solve is the package-level Solve over the planner's NodePools, instance
// types and DaemonSets, with the snapshot's nodes and pods.
//
// Under the default Decisions it plans the batch twice, Joiner's way and
// upstream's (see DecisionsKarpenter), and keeps the plan that places more
// pods, then the cheaper one, then Joiner's: so it never costs more than
// upstream's choices on the same batch. A batch Joiner's way places whole
// without a new node is not planned again: nothing is cheaper; nor is a
// batch of alike pods free of topology (one Deployment scaling up): the
// two ways' orders and choices come to the same there.
//
// When ctx ends, the pods not placed by then are unschedulable with its
// error as the reason.
func (pl *Planner) Solve(ctx context.Context, snap *Snapshot) *Results {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.nodeMemos.NewCall(8 * len(snap.Nodes))
	pl.podMemos.NewCall(0)
	pl.caches.newCall()
	if snap.Policy.Karpenter() {
		return pl.planAs(ctx, snap, DecisionsKarpenter).results()
	}
	if pl.Concurrent && len(snap.Pods) >= pl.minConcurrent {
		return pl.solveBoth(ctx, snap)
	}
	j := pl.planAs(ctx, snap, DecisionsJoiner)
	if j.placedOnExisting() || ctx.Err() != nil {
		return j.results()
	}
	j = pl.refined(ctx, snap, j, memosOwned)
	absorbTail(snap, j)
	if j.alike {
		return j.results()
	}
	if u := pl.planAs(ctx, snap, DecisionsKarpenter); u.better(j) {
		return u.results()
	}
	return j.results()
}

// minConcurrentBatch is the fewest pods a Concurrent Planner plans both
// ways of at once: smaller batches plan one way after the other sooner
// than a second goroutine can begin.
const minConcurrentBatch = 32

// solveBoth is Solve's two ways at once, with the same plan as one after
// the other. Joiner's way adds the nodes and completes the memos of nodes
// and pods first, alone: that meets every resource name of the batch, in
// the order Joiner's way alone meets them, so the dimensions both ways
// share are complete, and the same, before the two run side by side; from
// then on the memos are only read. Upstream's way runs on caches of its
// own. A helper for it starts once it may be needed: at once when there
// is no node to place pods on, else when Joiner's way makes its first new
// claim; if the helper has not begun it by the time Joiner's way ends
// needing it, Solve's goroutine runs it. It is stopped when Joiner's plan
// makes it needless.
func (pl *Planner) solveBoth(ctx context.Context, snap *Snapshot) *Results {
	j := pl.startAs(snap, DecisionsJoiner, pl.caches)
	// Without preferences, the pods' classes are those of pods derived
	// from them: their own class keys would be made for nothing, and say
	// nothing of the batch being alike.
	j.s.completeMemos(snap.Pods, !snap.IgnorePreferences)
	j.s.memosShared = true
	oneClass := snap.IgnorePreferences || j.s.oneClassKey(snap.Pods)
	if oneClass {
		// Likely alike: find out before starting upstream's way.
		if j.finish(snap); j.alike {
			j.run(ctx)
			j = pl.refined(ctx, snap, j, memosOwned)
			absorbTail(snap, j)
			return j.results()
		}
	}
	if pl.altCaches == nil {
		pools := make([]*poolInfo, len(pl.caches.pools))
		for i, p := range pl.caches.pools {
			pools[i] = p.withOwnCaches()
		}
		pl.altCaches = &wayCaches{pools: pools}
	}
	pl.altCaches.newCall()
	upCtx, stop := context.WithCancel(ctx)
	// Upstream's way runs on whichever goroutine takes it first: a helper
	// started when it may be needed, or this one when Joiner's way is done
	// and the helper has not begun (a goroutine can take longer to be
	// scheduled than a small batch takes to plan).
	var taken atomic.Bool
	take := func() bool { return taken.CompareAndSwap(false, true) }
	done := make(chan struct{}) // closed once upstream's way has run
	var u *prepared
	var panicked any
	runUpstream := func() {
		defer close(done)
		defer func() { panicked = recover() }() // raised again below, to Solve's caller
		w := pl.startAs(snap, DecisionsKarpenter, pl.altCaches)
		w.s.memosShared = true
		w.finish(snap)
		w.run(upCtx)
		u = w
	}
	start := func() {
		go func() {
			if take() {
				runUpstream()
			}
		}()
	}
	// However Solve returns, upstream's way has stopped by then: it fills
	// pl.altCaches, which the next Solve uses; taking it here keeps a
	// helper yet to begin from running it.
	defer func() {
		stop()
		if !take() {
			<-done
		}
	}()
	if len(snap.Nodes) == 0 {
		start()
	} else {
		j.s.onFirstClaim = start
	}
	if !oneClass {
		j.finish(snap)
	}
	j.run(ctx)
	if j.placedOnExisting() || ctx.Err() != nil {
		return j.results()
	}
	// Upstream's way may be running beside: the memos are only read.
	j = pl.refined(ctx, snap, j, memosShared)
	absorbTail(snap, j)
	if j.alike {
		return j.results()
	}
	if take() {
		runUpstream()
	}
	if <-done; panicked != nil {
		panic(panicked)
	}
	if u.better(j) {
		return u.results()
	}
	return j.results()
}

// planAs plans the batch upstream's way (pod order, node order, emptiest
// claim first) or Joiner's, as way says, on the planner's first caches.
func (pl *Planner) planAs(ctx context.Context, snap *Snapshot, way Decisions) *prepared {
	w := pl.startAs(snap, way, pl.caches)
	w.finish(snap)
	w.run(ctx)
	return w
}

// prepared is one way of planning a batch in the making: its scheduler,
// the nodes in its order, once finished the pods' classes and the pods in
// its order, and once run what stopped it short.
type prepared struct {
	s       *scheduler
	nodes   []*Node
	pods    []*corev1.Pod
	classOf map[*corev1.Pod]*podClass
	// alike: every pod is of one class that no topology constrains or
	// counts (see bareAndAlike).
	alike bool
	// failed is, per pod, ctx's error if the pass stopped before it.
	failed []error
	// order is Joiner's way's pod order (largestFirst unless replanned).
	order podOrder
}

// startAs starts a plan of the batch upstream's way (pod order, node
// order, emptiest claim first) or Joiner's, as way says, with the caches
// c: the scheduler, with the nodes added as targets.
func (pl *Planner) startAs(snap *Snapshot, way Decisions, c *wayCaches) *prepared {
	s := &scheduler{dims: pl.dims, topo: newTopology(), classes: map[uint64]*podClass{}, volumes: snap.Volumes,
		nodeMemos: pl.nodeMemos, podMemos: pl.podMemos, upstream: way == DecisionsKarpenter, minValues: snap.Policy.MinValues, moving: snap.Moving}
	if snap.Volumes.Empty() {
		// A class's fit to a pool depends on nothing else while the
		// planner's pools and instance types stay the same; its node
		// requirements depend on nothing else at all.
		s.poolChecks, s.reqsByKey = c.poolChecks, c.reqsByKey
	}
	for k, v := range pl.universe {
		s.topo.universe[k] = append([]string(nil), v...)
	}
	for _, p := range c.pools {
		cp := *p
		cp.used = nil
		s.pools = append(s.pools, &cp)
	}
	s.res = newReservations(s.pools, !snap.ReservationFallback)
	s.modelDRA, s.dra = snap.Policy.ModelDRA, newDRA(snap)
	nodes := snap.Nodes
	if s.upstream {
		nodes = upstreamNodeOrder(nodes)
	}
	s.addNodes(nodes)
	return &prepared{s: s, nodes: nodes}
}

// finish adds the pods' classes and puts the pods in the way's order.
func (w *prepared) finish(snap *Snapshot) {
	s := w.s
	w.classOf = s.addClasses(snap, w.nodes)
	w.pods = append([]*corev1.Pod(nil), snap.Pods...)
	if s.upstream {
		sort.SliceStable(w.pods, upstreamPodOrder(w.pods, w.classOf))
	} else {
		sort.SliceStable(w.pods, joinerPodOrder(w.pods, w.classOf))
		if w.order == mixed {
			w.pods = mixedPodOrder(w.pods, w.classOf)
		}
	}
	w.alike = bareAndAlike(w.pods, w.classOf)
}

// run schedules the prepared batch. Its plan is results; pending and
// price compare it with another way's before that.
func (w *prepared) run(ctx context.Context) {
	w.failed = w.s.schedule(ctx, w.pods, w.classOf)
}

// pending is how many pods the plan leaves unschedulable: those it did not
// place (the invalid ones, and those ctx stopped it before, among them).
func (w *prepared) pending() int { return len(w.pods) - w.s.progress }

// price is results' Price, without making the plans of its claims.
func (w *prepared) price() float64 {
	total := 0.0
	for _, cl := range w.s.claims {
		total += cl.price()
	}
	return total
}

// placedOnExisting: the plan places every pod, and on nodes that exist.
func (w *prepared) placedOnExisting() bool { return len(w.s.claims) == 0 && w.pending() == 0 }

// better says plan w places more pods than o, or as many more cheaply.
func (w *prepared) better(o *prepared) bool {
	if a, b := w.pending(), o.pending(); a != b {
		return a < b
	}
	return w.price() < o.price()-1e-9
}

// results is the plan, with reasons for the pods it leaves pending.
func (w *prepared) results() *Results {
	s, pods, classOf, failed := w.s, w.pods, w.classOf, w.failed
	res := &Results{}
	explained := map[*podClass]*PodError{}
	for i, pod := range pods {
		c := classOf[pod]
		switch {
		case c.invalid != nil:
			res.Unschedulable = append(res.Unschedulable, invalidPod(pod, c, s.pools))
		case failed[i] != nil:
			res.Unschedulable = append(res.Unschedulable, &PodError{Pod: pod, Reason: "the scheduling pass stopped before it: " + failed[i].Error()})
		case !s.placed[i]:
			// Nothing changes once the pass ends: a class's reasons are
			// the same for each of its pods.
			e, ok := explained[c]
			if !ok {
				e = s.explain(pod, s.lastRelaxed(c))
				explained[c] = e
			}
			res.Unschedulable = append(res.Unschedulable, &PodError{Pod: pod, ByNodePool: e.ByNodePool, CodeByNodePool: e.CodeByNodePool, Reason: e.Reason})
		}
	}
	for _, e := range s.existing {
		if len(e.added) > 0 {
			res.ExistingNodes = append(res.ExistingNodes, &ExistingNodePlan{Node: e.node, Pods: e.added})
		}
	}
	for _, cl := range s.claims {
		plan, err := s.finalize(cl)
		if err != nil {
			byPool := map[string]string{cl.pool.np.Name: err.Error()}
			codes := map[string]ReasonCode{cl.pool.np.Name: err.Code}
			for _, pod := range cl.pods {
				res.Unschedulable = append(res.Unschedulable, &PodError{Pod: pod, ByNodePool: byPool, CodeByNodePool: codes,
					Reason: fmt.Sprintf("NodePool %q: %s", cl.pool.np.Name, err)})
			}
			continue
		}
		res.NewNodeClaims = append(res.NewNodeClaims, plan)
	}
	return res
}

// bareAndAlike: the pods are all of one class, which no topology group
// constrains, counts or keeps away (so no order of them and of the nodes
// they go to places more of them or fewer).
func bareAndAlike(pods []*corev1.Pod, classOf map[*corev1.Pod]*podClass) bool {
	var only *podClass
	for _, p := range pods {
		c := classOf[p]
		if only == nil {
			only = c
		}
		if c != only {
			return false
		}
	}
	return only != nil && only.invalid == nil && len(only.owned) == 0 && len(only.matchedBy) == 0 && len(only.antiMatchedBy) == 0
}

// schedule places the pods in order, as upstream does: a pod that fits
// nowhere goes to the back of the queue and is tried again while the
// batch makes progress, so a pod whose required affinity target comes
// later in the batch finds it, and pods that must alternate between
// domains do. It returns, per pod, ctx's error if the pass stopped before
// the pod was tried; s.placed says which were placed.
func (s *scheduler) schedule(ctx context.Context, pods []*corev1.Pod, classOf map[*corev1.Pod]*podClass) []error {
	stopped := make([]error, len(pods))
	s.placed = make([]bool, len(pods))
	queue := make([]int, 0, len(pods))
	for i, pod := range pods {
		if classOf[pod].invalid == nil {
			queue = append(queue, i)
		}
	}
	// lastLen[i] is the queue's length when pod i went back into it: met
	// again at that length, the queue went round without progress.
	lastLen := make([]int, len(pods))
	for len(queue) > 0 {
		i := queue[0]
		if lastLen[i] == len(queue) {
			break
		}
		if err := ctx.Err(); err != nil {
			for _, j := range queue {
				stopped[j] = err
			}
			break
		}
		queue = queue[1:]
		if s.try(classOf[pods[i]], pods[i]) {
			s.placed[i] = true
			s.progress++
			continue
		}
		queue = append(queue, i)
		lastLen[i] = len(queue)
	}
	return stopped
}

// try places the pod as its class, or relaxed one preference at a time.
// A class that failed since the last placement fails again: nothing it
// was checked against has changed.
func (s *scheduler) try(c *podClass, pod *corev1.Pod) bool {
	if c.failedAt == s.progress+1 {
		return false
	}
	for r := c; r != nil; r = s.relaxedClass(r) {
		if s.place(r, pod) {
			return true
		}
		if s.deferred {
			break // upstream does not relax a pod a reservation defers
		}
	}
	c.failedAt = s.progress + 1
	return false
}

// lastRelaxed is the class with every preference it can lose relaxed.
func (s *scheduler) lastRelaxed(c *podClass) *podClass {
	for r := s.relaxedClass(c); r != nil; r = s.relaxedClass(c) {
		c = r
	}
	return c
}

// Price is the hourly price of the plan's new NodeClaims.
func (r *Results) Price() float64 {
	total := 0.0
	for _, nc := range r.NewNodeClaims {
		total += nc.Price()
	}
	return total
}

func newScheduler(snap *Snapshot) *scheduler {
	d := newDims()
	for _, its := range snap.InstanceTypes {
		for _, it := range its {
			d.addAll(it.Capacity)
		}
	}
	s := &scheduler{dims: d, topo: newTopology(), classes: map[uint64]*podClass{}, volumes: snap.Volumes, modelDRA: snap.Policy.ModelDRA, dra: newDRA(snap)}
	for _, np := range orderPools(snap.NodePools) {
		p := newPoolInfo(np, snap.InstanceTypes[np.Name], snap.DaemonSets, d)
		s.topo.addPoolDomains(p)
		s.pools = append(s.pools, p)
	}
	return s
}

// prepare adds the snapshot's nodes as targets and its pods' classes (with
// their topology, counted over the nodes' pods), and returns each pod's
// class.
func (s *scheduler) prepare(snap *Snapshot, nodes []*Node) map[*corev1.Pod]*podClass {
	s.addNodes(nodes)
	return s.addClasses(snap, nodes)
}

// addClasses is prepare after the nodes are added.
func (s *scheduler) addClasses(snap *Snapshot, nodes []*Node) map[*corev1.Pod]*podClass {
	classOf := make(map[*corev1.Pod]*podClass, len(snap.Pods))
	for _, p := range snap.Pods {
		if snap.IgnorePreferences {
			classOf[p] = s.derivedClassFor(WithoutPreferences(p), s.podVec(p))
		} else {
			classOf[p] = s.classFor(p)
		}
	}
	s.addNodeDomains()
	for _, c := range s.sortedClasses() {
		s.finishClass(c)
	}
	s.recordExisting(nodes)
	return classOf
}

// addNodes adds existing nodes and in-flight claims as targets.
func (s *scheduler) addNodes(nodes []*Node) {
	d := s.dims
	targets := make([]existingTarget, len(nodes)) // one allocation for all
	for i, n := range nodes {
		e := &targets[i]
		m := s.memoOf(n)
		if m.alloc == nil {
			m.alloc = d.vec(n.Allocatable)
		}
		if m.used == nil && n.Requested != nil {
			m.used = d.vec(n.Requested)
		}
		*e = existingTarget{node: n, memo: m, idx: len(s.existing), alloc: m.alloc, labels: n.Labels, used: m.used}
		if n.Requested == nil {
			for _, p := range n.Pods {
				e.used = e.used.plus(d.vec(scheduling.PodRequests(p)))
			}
		}
		s.existing = append(s.existing, e)
		for _, p := range s.pools {
			if p.hasLimits && n.NodePool == p.np.Name {
				p.consume(d.vec(n.Capacity), d)
			}
		}
	}
}

// classFor returns the pod's class, creating it (and its topology groups).
func (s *scheduler) classFor(pod *corev1.Pod) *podClass { return s.classWith(pod, s.podMemoOf(pod)) }

// derivedClassFor is classFor for a pod derived from another (relaxed, or
// without its preferences), which has its requests: they are not computed
// again, so no plan that shares its memos with another meets a resource
// name anew there.
func (s *scheduler) derivedClassFor(pod *corev1.Pod, requests vec) *podClass {
	pm := s.podMemoOf(pod)
	if pm.vec == nil {
		pm.vec = requests
	}
	return s.classWith(pod, pm)
}

// classWith is classFor with the pod's memo at hand.
func (s *scheduler) classWith(pod *corev1.Pod, pm *podMemo) *podClass {
	// Most pods belong to a class met before: find it by the cached key
	// before computing anything.
	if pm.keyKnown {
		if c, ok := s.classes[pm.key]; ok {
			return c
		}
	}
	requests := s.podVecOf(pod, pm)
	if !pm.keyKnown {
		pm.key, pm.keyKnown = classKey(pod, requests), true
		if c, ok := s.classes[pm.key]; ok {
			return c
		}
	}
	key := pm.key
	reqs, ok := s.reqsByKey[key]
	if !ok {
		reqs = strictRequirements(pod)
		if s.reqsByKey != nil {
			s.reqsByKey[key] = reqs
		}
	}
	affinity, waiting := reqs, ""
	if !s.volumes.Empty() {
		reqs = reqs.Copy()
		waiting = s.volumes.of(pod, reqs)
	}
	c := &podClass{id: len(s.classes), namespace: pod.Namespace, labels: pod.Labels, requests: requests,
		reqs: reqs, affinity: affinity, tolerations: pod.Spec.Tolerations, hostPorts: podHostPorts(pod), spec: pod}
	if s.poolChecks != nil {
		if c.pools = s.poolChecks[key]; c.pools == nil {
			c.pools = make([]*classPool, len(s.pools))
			s.poolChecks[key] = c.pools
		}
	}
	c.owned, c.invalid = s.topo.groupsFor(pod)
	if waiting != "" {
		c.invalid = volumeWait(waiting)
	}
	if !s.modelDRA && podutil.HasDRARequirements(pod) {
		c.invalid = &Reason{Code: ReasonDRA}
	}
	c.ownNode = needsOwnNode(pod)
	c.requiredAnti = s.topo.requiredAntiAffinityGroups(pod)
	s.classes[key] = c
	return c
}

func (s *scheduler) sortedClasses() []*podClass {
	out := make([]*podClass, 0, len(s.classes))
	for _, c := range s.classes {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// finishClass links a class to the groups that select it; all groups must
// exist by then.
func (s *scheduler) finishClass(c *podClass) {
	if c.selected != nil {
		return
	}
	c.selected = map[*topoGroup]bool{}
	c.eligible = map[*topoGroup][]string{}
	keys := map[string]bool{}
	for _, g := range s.topo.ordered {
		if g.selects(c.namespace, c.labels) {
			c.selected[g] = true
			c.matchedBy = append(c.matchedBy, g)
			if g.kind == antiAffinityGroup {
				c.antiMatchedBy = append(c.antiMatchedBy, g)
				keys[g.key] = true
			}
		}
	}
	for _, g := range c.owned {
		keys[g.key] = true
	}
	for k := range keys {
		c.topoKeys = append(c.topoKeys, k)
	}
	sort.Strings(c.topoKeys)
}

func (s *scheduler) relaxedClass(c *podClass) *podClass {
	if !c.relaxedReady {
		c.relaxedReady = true
		if p, ok := relax(c.spec); ok {
			c.relaxed = s.derivedClassFor(p, c.requests)
			s.finishClass(c.relaxed)
		}
	}
	return c.relaxed
}

// recordExisting counts the pods already bound to nodes in the topology.
func (s *scheduler) recordExisting(nodes []*Node) {
	if len(s.topo.ordered) == 0 && !s.anyAntiAffinity() {
		return // nothing to count
	}
	groups := len(s.topo.ordered)
	owned := map[*corev1.Pod][]*topoGroup{}
	for _, n := range nodes {
		for _, p := range n.Pods {
			owned[p] = s.topo.requiredAntiAffinityGroups(p)
		}
	}
	for _, n := range nodes {
		for _, p := range n.Pods {
			c := &podClass{namespace: p.Namespace, labels: p.Labels, owned: owned[p], requiredAnti: owned[p]}
			for _, g := range s.topo.ordered {
				if g.selects(p.Namespace, p.Labels) {
					c.matchedBy = append(c.matchedBy, g)
				}
			}
			s.topo.record(c, existingDomains(n))
		}
	}
	// Groups created above from bound pods select pending classes too.
	if len(s.topo.ordered) == groups {
		return // none was: every class is linked to every group already
	}
	for _, c := range s.sortedClasses() {
		c.selected = nil
		c.matchedBy, c.antiMatchedBy, c.topoKeys = nil, nil, nil
		s.finishClass(c)
	}
}

func existingDomains(n *Node) domainsOf {
	return func(key string) ([]string, bool) {
		if key == v1.LabelHostname {
			if h, ok := n.Labels[key]; ok {
				return []string{h}, true
			}
			return []string{n.Name}, true
		}
		if v, ok := n.Labels[key]; ok {
			return []string{v}, true
		}
		return nil, true
	}
}

// prefilter rejects, in one tight pass, the existing nodes a class can
// never join in this solve: those being deleted and those without room
// (room only shrinks as pods are added). A class met on a cluster whose
// pods are spread thin would otherwise run every check on every node.
func (s *scheduler) prefilter(c *podClass) {
	if c.prefiltered {
		return
	}
	c.prefiltered = true
	n := len(s.existing)
	if n == 0 {
		return
	}
	if s.byFree == nil {
		// Sorted by the room each node has now; from here it only shrinks.
		s.byFree, s.initialFree = make([]int, n), make([]int64, n)
		for i, e := range s.existing {
			s.byFree[i], s.initialFree[i] = i, e.alloc.get(0)-e.used.get(0)
		}
		sort.SliceStable(s.byFree, func(a, b int) bool { return s.initialFree[s.byFree[a]] > s.initialFree[s.byFree[b]] })
	}
	// Reject every existing node, then admit those with room: only nodes
	// that had the class's cpu free at the start can have it now.
	c.rejected.grow(n)
	for w := 0; w < n/64; w++ {
		c.rejected[w] = ^uint64(0)
	}
	for i := n / 64 * 64; i < n; i++ {
		c.rejected.set(i)
	}
	need := c.requests.get(0)
	for _, i := range s.byFree {
		if s.initialFree[i] < need {
			break
		}
		if e := s.existing[i]; !e.node.MarkedForDeletion && sumFitsIn(e.used, c.requests, e.alloc) {
			c.rejected.clear(i)
		}
	}
}

// place puts the pod on the first target that takes it, or on a new claim.
func (s *scheduler) place(c *podClass, pod *corev1.Pod) bool {
	n := len(s.existing) + len(s.claims)
	s.prefilter(c)
	c.rejected.grow(n)
	if s.upstream {
		n = len(s.existing) // claims come after, the emptiest first
	}
	for wi := 0; wi*64 < n; wi++ {
		w := ^c.rejected[wi]
		for w != 0 {
			bit := trailingZeros(w)
			w &= w - 1
			idx := wi*64 + bit
			if idx >= n {
				break
			}
			var err error
			var permanent bool
			if idx < len(s.existing) {
				if s.existing[idx].node.Settling && s.moving[pod] {
					continue
				}
				permanent, err = s.existing[idx].tryAdd(s, c, pod)
			} else {
				permanent, err = s.claims[idx-len(s.existing)].tryAdd(s, c, pod)
			}
			if err == nil {
				return true
			}
			s.reject(c, idx, err, permanent)
		}
	}
	if s.upstream && s.placeUpstream(c, pod) {
		return true
	}
	s.deferred = false
	for pi, p := range s.pools {
		_, err := s.newClaim(p, pi, c, pod)
		if err == nil {
			return true
		}
		if s.res != nil && CodeOf(err) == ReasonReservedCapacity {
			// A NodePool with reserved offerings for the pod is not
			// fallen back from to one of lower weight.
			s.deferred = true
			return false
		}
	}
	return false
}

// reject keeps target idx from class c after a failed check: for good
// when the failure is permanent, or until the pod a required pod affinity
// waits for lands in the target's domain.
func (s *scheduler) reject(c *podClass, idx int, err error, permanent bool) {
	if permanent {
		c.rejected.set(idx)
		return
	}
	// topology.check's errors come unwrapped: no errors.As on this path.
	if te, ok := err.(*topologyError); ok && te.waitFor != "" {
		s.topo.wait(te.group, te.waitFor, c, idx)
	}
}

// invalidPod is the answer for a pod whose constraints cannot be read.
func invalidPod(pod *corev1.Pod, c *podClass, pools []*poolInfo) *PodError {
	e := &PodError{Pod: pod, Reason: c.invalidReason(), ByNodePool: map[string]string{}}
	code := CodeOf(c.invalid)
	if code != ReasonOther {
		e.CodeByNodePool = map[string]ReasonCode{}
	}
	for _, p := range pools {
		e.ByNodePool[p.np.Name] = e.Reason
		if code != ReasonOther {
			e.CodeByNodePool[p.np.Name] = code
		}
	}
	return e
}

// explain builds the per-NodePool reasons for a pod that fits nowhere.
func (s *scheduler) explain(pod *corev1.Pod, c *podClass) *PodError {
	e := &PodError{Pod: pod, ByNodePool: map[string]string{}, CodeByNodePool: map[string]ReasonCode{}}
	var parts []string
	distinct := map[string]bool{}
	for pi, p := range s.pools {
		err := s.whyNoClaim(p, pi, c)
		msg := err.Error()
		if code := CodeOf(err); code != ReasonOther {
			e.CodeByNodePool[p.np.Name] = code
		}
		e.ByNodePool[p.np.Name] = msg
		distinct[msg] = true
		parts = append(parts, fmt.Sprintf("NodePool %q: %s", p.np.Name, msg))
	}
	switch {
	case len(s.pools) == 0:
		e.Reason = "no NodePool exists"
	case len(distinct) == 1 && len(s.pools) > 1:
		e.Reason = "every NodePool: " + e.ByNodePool[s.pools[0].np.Name]
	default:
		e.Reason = strings.Join(parts, "; ")
	}
	return e
}

// finalize turns a claim into a plan, its instance types in price order.
// Which capacity type of those the claim allows is launched is the cloud
// provider's choice, as upstream (reserved, then spot, then on-demand).
//
// Its instance types are the cheapest MaxInstanceTypes of those that fit,
// as upstream truncates them for the launch API; when that leaves a
// minValues requirement short, the claim is not made (its pods say why)
// or, under MinValuesPolicy BestEffort, the minimum is lowered.
func (s *scheduler) finalize(cl *claim) (*NodeClaimPlan, *Reason) {
	reqs := cl.reqs.Copy()
	delete(reqs, v1.LabelHostname)
	if len(cl.reserved) > 0 {
		reservedRequirements(reqs, cl.reserved)
	}
	zone, ct := reqs.Get(v1.LabelZone), reqs.Get(v1.LabelCapacityType)
	rid := reqs.Get(cloudprovider.ReservationIDLabel)
	// Room for every candidate at once: there are hundreds, often.
	its := make([]*cloudprovider.InstanceType, 0, cl.candidates.count())
	var kept []int // their indexes in the pool
	var daemon vec // of the cheapest type
	for _, i := range cl.pool.priceOrder(zone, ct) {
		if cl.candidates.has(i) && (len(cl.reserved) == 0 || slices.ContainsFunc(cl.pool.its[i].it.Offerings, func(o *cloudprovider.Offering) bool {
			return o.Reservation != nil && rid.Has(o.Reservation.ID)
		})) {
			if len(its) == 0 {
				daemon = cl.pool.its[i].daemon
			}
			its = append(its, cl.pool.its[i].it)
			kept = append(kept, i)
		}
	}
	if len(its) == 0 {
		its = nil // as before it was made with room
	}
	relaxed := cl.minRelaxed
	if len(its) > MaxInstanceTypes {
		its, kept = its[:MaxInstanceTypes], kept[:MaxInstanceTypes]
		truncated := newBitset(len(cl.pool.its))
		for _, i := range kept {
			truncated.set(i)
		}
		var lowered bool
		var err error
		if reqs, lowered, err = checkMinValues(reqs, truncated, cl.pool, s.minValues == MinValuesBestEffort); err != nil {
			why := err.(*Reason)
			why.Truncated = MaxInstanceTypes
			return nil, why
		}
		relaxed = relaxed || lowered
	}
	plan := &NodeClaimPlan{NodePool: cl.pool.np, Requirements: reqs, InstanceTypes: its, Pods: cl.pods,
		Requests: s.dims.list(cl.requests.plus(daemon)), Hostname: cl.name, MinValuesRelaxed: relaxed}
	if s.dra != nil {
		plan.DRADrivers = s.dra.driversOf(cl)
	}
	return plan, nil
}

// MaxInstanceTypes is how many instance types a NodeClaim names at most:
// upstream's limit for the launch API, the cheapest first.
const MaxInstanceTypes = 600

// needsOwnNode: a pod with required pod anti-affinity on hostname against
// pods like itself needs a node of its own. Such pods are placed first, so
// the nodes they force exist before the rest is packed around them;
// otherwise first-fit-decreasing would fill a large node with big pods that
// none of them can then join.
func needsOwnNode(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return false
	}
	for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if t.TopologyKey == v1.LabelHostname && selectorMatches(t.LabelSelector, pod.Labels) {
			return true
		}
	}
	return false
}

// anyAntiAffinity reports whether a pod on an existing target has pod
// anti-affinity.
func (s *scheduler) anyAntiAffinity() bool {
	for _, e := range s.existing {
		if hasAnti(e.node, e.memo) {
			return true
		}
	}
	return false
}

// hasAnti reports whether a pod on the node has pod anti-affinity,
// remembered in its memo like its vectors.
func hasAnti(n *Node, m *nodeMemo) bool {
	if m.anti == 0 {
		m.anti = 1
		for _, p := range n.Pods {
			if p.Spec.Affinity != nil && p.Spec.Affinity.PodAntiAffinity != nil {
				m.anti = 2
				break
			}
		}
	}
	return m.anti == 2
}

// memoOf returns the node's memo as the Planner or FilterCache running
// this scheduler keeps it (a fresh one when it keeps none, or when it
// shares them and has none).
func (s *scheduler) memoOf(n *Node) *nodeMemo {
	if s.memosShared {
		return peekIn(s.nodeMemos, n)
	}
	return memoIn(s.nodeMemos, n)
}

// podMemoOf is memoOf for a pod.
func (s *scheduler) podMemoOf(p *corev1.Pod) *podMemo {
	if s.memosShared {
		return peekIn(s.podMemos, p)
	}
	return memoIn(s.podMemos, p)
}

// completeMemos fills in every field a plan reads of the memos of the
// added nodes and of the pods (their class keys only with keys), so that
// plans can then share them, only reading (see memosShared). The pods'
// vectors are made in their order, as addClasses would.
//
// What takes the time, the pods' requests and class keys, is worked out
// on two goroutines (see inParallel); turning requests into vectors, which
// may add dimensions, is done in order on one. A memo that several of the
// pods share is filled once.
func (s *scheduler) completeMemos(pods []*corev1.Pod, keys bool) {
	for _, e := range s.existing {
		hasAnti(e.node, e.memo)
	}
	memos := make([]*podMemo, len(pods))
	var vecs, keyed []int // the pods whose memo lacks its vector, its key
	for i, p := range pods {
		m := s.podMemoOf(p)
		memos[i] = m
		if m.vec == nil {
			vecs = append(vecs, i)
		}
		if keys && !m.keyKnown {
			m.keyKnown = true // taken: the key is made below, once
			keyed = append(keyed, i)
		}
	}
	requests := make([]corev1.ResourceList, len(vecs))
	inParallel(len(vecs), func(k int) { requests[k] = scheduling.PodRequests(pods[vecs[k]]) })
	for k, i := range vecs {
		if memos[i].vec == nil {
			memos[i].vec = s.dims.vec(requests[k])
		}
	}
	inParallel(len(keyed), func(k int) {
		i := keyed[k]
		memos[i].key = classKey(pods[i], memos[i].vec)
	})
}

// inParallel calls f for 0 … n-1 on this goroutine and, when there are
// enough to pay for one, on a helper: each takes the next 64 as it comes
// free, so a helper scheduled late takes fewer, or none. A panic in
// either is raised again here, once all are done.
func inParallel(n int, f func(int)) {
	const chunk = 64
	chunks := int64((n + chunk - 1) / chunk)
	if chunks < 4 {
		for k := 0; k < n; k++ {
			f(k)
		}
		return
	}
	var next, finished atomic.Int64
	allDone := make(chan struct{})
	panics := make(chan any, chunks)
	work := func() {
		for c := next.Add(1) - 1; c < chunks; c = next.Add(1) - 1 {
			func() {
				defer func() {
					if p := recover(); p != nil {
						panics <- p
					}
					if finished.Add(1) == chunks {
						close(allDone)
					}
				}()
				for k := int(c) * chunk; k < min(n, int(c+1)*chunk); k++ {
					f(k)
				}
			}()
		}
	}
	go work()
	work()
	<-allDone
	select {
	case p := <-panics:
		panic(p)
	default:
	}
}

// oneClassKey: every pod has the class key of the first (so the batch
// may be alike; see bareAndAlike).
func (s *scheduler) oneClassKey(pods []*corev1.Pod) bool {
	for _, p := range pods {
		if s.podMemoOf(p).key != s.podMemoOf(pods[0]).key {
			return false
		}
	}
	return true
}

// peekIn is memoIn for caches only read: a fresh memo, not kept, for an
// object the cache has none for.
func peekIn[P comparable, K comparable, M any](c *objcache.Cache[P, K, *M], p P) *M {
	if m, ok := c.Get(p); ok {
		return m
	}
	return new(M)
}

// memoIn returns the memo a cache keeps for an object, putting a fresh one
// there first (and only returning one when the cache is nil).
func memoIn[P comparable, K comparable, M any](c *objcache.Cache[P, K, *M], p P) *M {
	if c == nil {
		return new(M)
	}
	m, ok := c.Get(p)
	if !ok {
		m = new(M)
		c.Put(p, m)
	}
	return m
}

// addNodeDomains adds the existing nodes' values of every topology key in
// use to the domains (only those keys: nodes carry many labels).
func (s *scheduler) addNodeDomains() {
	keys := map[string]bool{}
	for _, g := range s.topo.ordered {
		if g.key != v1.LabelHostname {
			keys[g.key] = true
		}
	}
	for k := range keys {
		for _, e := range s.existing {
			if v, ok := e.labels[k]; ok {
				s.topo.addDomains(k, v)
			}
		}
	}
}

// podVec is the pod's requests as a vector, cached by the pod's content
// key when the planner is reused.
func (s *scheduler) podVec(p *corev1.Pod) vec { return s.podVecOf(p, s.podMemoOf(p)) }

// podVecOf is podVec with the pod's memo at hand.
func (s *scheduler) podVecOf(p *corev1.Pod, m *podMemo) vec {
	if m.vec == nil {
		m.vec = s.dims.vec(scheduling.PodRequests(p))
	}
	return m.vec
}
