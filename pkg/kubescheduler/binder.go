// Package kubescheduler models kube-scheduler's default profile — its
// filters, score plugins and DefaultPreemption — over the nodes a host
// hands it, so pods land where a real kube-scheduler
// would put them. The filters are provisioning's own (provisioning.Filter):
// a pod the planner expects to fit an existing node is one this model binds.
package kubescheduler

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/objcache"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// BindOptions describe the cluster around the nodes a Binder sees.
type BindOptions struct {
	// SpreadSelector returns the selector of the Services, ReplicaSets and
	// StatefulSets that select a pod. kube-scheduler spreads such pods by
	// default (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway) when they
	// have no topologySpreadConstraints of their own. nil, or an empty
	// selector: no default spreading for the pod.
	SpreadSelector func(*corev1.Pod) k8slabels.Selector
	// Rand breaks ties between nodes with the same best score, as
	// kube-scheduler does at random; nil takes the first in node order.
	Rand *rand.Rand
	// PDBs returns the PodDisruptionBudgets, with status.disruptionsAllowed,
	// so preemption prefers victims whose eviction no budget forbids. It
	// is called only when a pod preempts; nil: no budgets.
	PDBs func() []*policyv1.PodDisruptionBudget
	// Volumes returns what the pods' PersistentVolumeClaims require of
	// their node now, as the VolumeBinding and VolumeZone filters read
	// them (a bound volume's node affinity, an unbound
	// WaitForFirstConsumer claim's allowedTopologies), and the claims
	// whose pods no node can take yet (unbound Immediate ones). nil: no
	// pod has volumes.
	Volumes func() provisioning.Volumes
	// DRA returns the device objects a pod's claims are allocated from,
	// as the DynamicResources plugin reads them (published ResourceSlices,
	// the claims' allocations, classes, templates). nil: devices are not
	// modelled, and a pod that asks for some binds nowhere.
	DRA func() *provisioning.DRAObjects
	// DeviceTypes give a node not initialized yet (a planned replacement)
	// its instance type's devices; Moving are pods whose claims are free
	// again, for they move with them. Both only with DRA.
	DeviceTypes map[string][]*cloudprovider.InstanceType
	Moving      map[*corev1.Pod]bool
	// Requests, when set, keeps the pods' requests as scoring counts them
	// beyond this Binder's life: Binders made one after the other over
	// the same pods (a disruption pass's, every pass) work each out once.
	Requests *RequestCache
}

// RequestCache keeps pods' requests as kube-scheduler's scoring counts
// them (missing container requests at its defaults), by the pods' content
// keys. It is safe for concurrent use.
type RequestCache struct {
	mu sync.Mutex
	c  *objcache.Cache[*corev1.Pod, objcache.PodKey, [2]int64]
}

// NewRequestCache returns an empty RequestCache.
func NewRequestCache() *RequestCache {
	return &RequestCache{c: objcache.NewPodCache[[2]int64](1 << 18)}
}

// newCall starts a Binder's life: pods without a content key are
// forgotten, and the cache starts over once it holds too many.
func (r *RequestCache) newCall() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.c.NewCall(0)
}

// of is p's requests, worked out once while p's content stays the same.
func (r *RequestCache) of(p *corev1.Pod) [2]int64 {
	if r == nil {
		return nonZeroRequests(p)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if nz, ok := r.c.Get(p); ok {
		return nz
	}
	nz := nonZeroRequests(p)
	r.c.Put(p, nz)
	return nz
}

// Binder places pending pods on existing nodes the way kube-scheduler's
// default profile does: pods by priority, then in the order given; for
// each, the nodes that pass the filters (taints, node affinity, resources,
// host ports, required topology spread and pod (anti-)affinity — the same
// checks provisioning makes), searched from where the previous pod's search
// ended and stopping at kube-scheduler's adaptive number of feasible nodes;
// then the default score plugins with their weights (TaintToleration 3,
// NodeAffinity 2, PodTopologySpread 2, InterPodAffinity 2,
// NodeResourcesFit least-allocated 1, NodeResourcesBalancedAllocation 1;
// ImageLocality scores every node alike: the nodes it is given say
// nothing of images). A pod that fits nowhere preempts, as DefaultPreemption does:
// see preempt. A Binder keeps its search position and per-node caches
// between calls, so reuse it over the same *Node values while they do not
// change. A Binder is safe for concurrent use; its calls run one at a time.
// Pods with a deletionTimestamp are terminating: they hold their
// room, count for nothing else, and are never chosen as victims again.
type Binder struct {
	mu      sync.Mutex // calls share the state below: one at a time
	opts    BindOptions
	filters *provisioning.FilterCache
	nodes   *objcache.Cache[*provisioning.Node, nodeKey, *nodeFacts]
	next    int
	// spreadIDs interns spread selectors (namespace|selector) as indexes
	// into nodeFacts.counts and the run's added counts.
	spreadIDs map[string]int
	// Pods with the same namespace and labels form a label group; whether
	// a spread selector selects a group is asked once.
	groupOf  *objcache.Cache[*corev1.Pod, objcache.PodKey, int32]
	groupIDs map[string]int32
	groups   []labelGroup
	selected [][]int8 // by spread id, then group: 0 unknown, 1 no, 2 yes
}

// nodeFacts are what scoring needs of a node that do not change while the
// *Node does not.
type nodeFacts struct {
	obj      *corev1.Node
	nonZero  [2]int64 // cpu (m) and memory requested, missing requests counted as kube-scheduler does
	affinity []*corev1.Pod
	counts   []int32 // pods matching a spread selector, by interned id; -1 unknown
	groups   []groupCount
}

// nodeKey is a node's content key: its name and Version.
type nodeKey struct{ name, version string }

func nodeKeyOf(n *provisioning.Node) (nodeKey, bool) {
	return nodeKey{n.Name, n.Version}, n.Version != ""
}

// NewBinder returns a Binder.
func NewBinder(opts BindOptions) *Binder {
	opts.Requests.newCall()
	return &Binder{opts: opts, filters: provisioning.NewFilterCache(),
		nodes:     objcache.New[*provisioning.Node, nodeKey, *nodeFacts](nodeKeyOf, math.MaxInt32),
		spreadIDs: map[string]int{}, groupOf: objcache.NewPodCache[int32](1 << 18), groupIDs: map[string]int32{}}
}

// Results are what a Bind decides.
type Results struct {
	// ExistingNodes are the bindings, per node.
	ExistingNodes []*provisioning.ExistingNodePlan
	// Unschedulable are the pods no node can take now (by Reason alone).
	Unschedulable []*provisioning.PodError
	// Preemptions are pods that fit nowhere, but will fit on a node once
	// the victims, pods of lower priority, are gone from it.
	Preemptions []*Preemption
	// Devices are, per pod bound that asks for devices, its claims'
	// allocations, which the caller persists as the scheduler would.
	Devices map[*corev1.Pod][]provisioning.ClaimAllocation
}

// Preemption is kube-scheduler's answer for a pod that fits nowhere: evict
// the victims from Node, and the pod is nominated to run there.
type Preemption struct {
	Pod     *corev1.Pod
	Node    *provisioning.Node
	Victims []*corev1.Pod
}

// Bind places the pods on the nodes. Results.ExistingNodes holds the
// bindings; pods no node can take now are in Results.Unschedulable.
// InFlight nodes are left out (kube-scheduler sees no Node for them);
// MarkedForDeletion ones take no pods but their pods still count for
// spreading and affinity.
func (b *Binder) Bind(nodes []*provisioning.Node, pods []*corev1.Pod) *Results {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.run(nodes, pods, nil)
}

// Scores returns, for each node that passes the filters for the pod, the
// weighted sum of the default profile's normalized scores — what
// kube-scheduler would rank the nodes by. It changes nothing but the
// search position.
func (b *Binder) Scores(nodes []*provisioning.Node, pod *corev1.Pod) map[string]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]int64{}
	b.run(nodes, []*corev1.Pod{pod}, out)
	return out
}

type bindRun struct {
	b       *Binder
	f       *provisioning.Filter
	nodes   []*provisioning.Node // in node-tree order; the Filter's indexes
	facts   []*nodeFacts
	classes map[uint64]*scoreClass // by the whole pod's class key
	// per target, what this run added: non-zero requests, and pods
	// matching each spread selector seen so far (by namespace|selector).
	addedNonZero [][2]int64
	addedCounts  [][]int32 // by target, then interned spread id; -1 unknown
	spreads      []softSpread
	nonZero      map[provisioning.Class][2]int64
	nominated    map[*corev1.Pod]bool // preemptors: room taken, not bound
	victims      map[*corev1.Pod]bool // pods preempted in this run
	pdbs         []*policyv1.PodDisruptionBudget
	lowest       int32 // lowest priority of a pod on any node, once known
	lowestKnown  bool
	domains      map[string][]string // per topology key, each node's value ("" when unlabelled)
	hasDomain    map[string][]bool
	// devices allocates device claims (nil: not modelled); allocs holds,
	// per target, what the last search found for the pod being placed.
	devices *provisioning.DeviceAllocator
	allocs  map[int]*provisioning.DeviceAllocation
}

// domainsOf returns each target's value of a topology key, read once per run.
func (r *bindRun) domainsOf(key string) ([]string, []bool) {
	if d, ok := r.domains[key]; ok {
		return d, r.hasDomain[key]
	}
	d, has := make([]string, len(r.nodes)), make([]bool, len(r.nodes))
	for i, n := range r.nodes {
		d[i], has[i] = n.Labels[key]
	}
	r.domains[key], r.hasDomain[key] = d, has
	return d, has
}

// pendingPod is a pod of a Bind call as the run handles it.
type pendingPod struct {
	pod   *corev1.Pod
	class provisioning.Class // the filters' view: preferences stripped
	key   uint64             // the whole pod's class key, for its scores
	aff   scheduling.NodeAffinity
	multi bool
	// devices: the pod asks for devices, and they are modelled.
	devices bool
}

func (b *Binder) run(nodes []*provisioning.Node, pods []*corev1.Pod, scoresOut map[string]int64) *Results {
	run, list := b.newRun(nodes, pods)
	res := &Results{}
	toFind := numFeasibleNodesToFind(len(run.nodes))
	// failedAt remembers, per class, how many pods had been placed when a
	// pod of it fit nowhere: until another is placed, none of it will fit.
	failedAt := map[provisioning.Class]int{}
	placed := 0
	for _, p := range list {
		c := p.class
		if err := selectorsError(p.pod); err != nil { // preferences too, which the class lacks
			res.Unschedulable = append(res.Unschedulable, &provisioning.PodError{Pod: p.pod, Reason: "its constraints cannot be read: " + err.Error()})
			continue
		}
		if w := c.Waiting(); w != "" { // VolumeBinding's PreFilter
			res.Unschedulable = append(res.Unschedulable, &provisioning.PodError{Pod: p.pod, Reason: "its volumes are not ready: " + w})
			continue
		}
		if podutil.HasDRARequirements(p.pod) {
			if run.devices == nil { // DynamicResources' PreFilter, with no device modelled
				res.Unschedulable = append(res.Unschedulable, &provisioning.PodError{Pod: p.pod, Reason: draUnmodelled})
				continue
			}
			p.devices = true
		}
		if n, ok := failedAt[c]; ok && n == placed {
			res.Unschedulable = append(res.Unschedulable, &provisioning.PodError{Pod: p.pod, Reason: "no existing node can run it"})
			continue
		}
		feasible, lastErr := run.feasible(p, toFind)
		if len(feasible) == 0 {
			if scoresOut == nil && !p.devices { // preemption does not weigh devices here
				if pre := run.preempt(p.pod, c, p.aff, p.multi); pre != nil {
					res.Preemptions = append(res.Preemptions, pre)
					placed++
					continue
				}
			}
			if lastErr == nil {
				lastErr = errors.New("no node passes the filters")
			}
			res.Unschedulable = append(res.Unschedulable, &provisioning.PodError{Pod: p.pod, Reason: "no existing node can run it: " + lastErr.Error()})
			failedAt[c] = placed
			continue
		}
		best := feasible[0]
		if len(feasible) > 1 || scoresOut != nil {
			scores := run.score(p.pod, p.key, feasible)
			if scoresOut != nil {
				for i, idx := range feasible {
					scoresOut[run.nodes[idx].Name] = scores[i]
				}
				return res
			}
			best = b.pick(feasible, scores)
		}
		run.place(p.pod, c, best)
		if p.devices {
			al := run.allocs[best]
			run.devices.Commit(run.nodes[best].Name, al)
			if res.Devices == nil {
				res.Devices = map[*corev1.Pod][]provisioning.ClaimAllocation{}
			}
			res.Devices[p.pod] = al.Claims()
		}
		placed++
	}
	res.ExistingNodes = run.bindings()
	return res
}

// draUnmodelled is why a pod that asks for devices binds nowhere: the
// binder knows no node's devices, so, as kube-scheduler with no
// ResourceSlice published, it allocates none of its claims.
const draUnmodelled = "its ResourceClaims cannot be allocated: no node's devices are modelled (Dynamic Resource Allocation)"

// newRun prepares a call: the nodes in kube-scheduler's node-tree order,
// the filters over them, and the pods by priority, highest first.
func (b *Binder) newRun(nodes []*provisioning.Node, pods []*corev1.Pod) (*bindRun, []pendingPod) {
	ordered := nodeTreeOrder(nodes)
	b.prune(ordered)
	filterPods := make([]provisioning.FilterPod, len(pods))
	for i, p := range pods {
		stripped, multi := requiredOnly(p)
		filterPods[i] = provisioning.FilterPod{Pod: stripped, AnyTerm: multi}
	}
	var volumes provisioning.Volumes
	if b.opts.Volumes != nil {
		volumes = b.opts.Volumes()
	}
	f, classes := b.filters.NewFilter(ordered, filterPods, volumes)
	run := &bindRun{b: b, f: f, nodes: ordered, classes: map[uint64]*scoreClass{},
		addedNonZero: make([][2]int64, len(ordered)), addedCounts: make([][]int32, len(ordered)),
		nonZero: map[provisioning.Class][2]int64{}, nominated: map[*corev1.Pod]bool{}, victims: map[*corev1.Pod]bool{}, domains: map[string][]string{}, hasDomain: map[string][]bool{}}
	for _, n := range ordered {
		run.facts = append(run.facts, b.factsOf(n))
	}
	if b.opts.DRA != nil {
		run.devices, run.allocs = provisioning.NewDeviceAllocator(b.opts.DRA(), b.opts.DeviceTypes, b.opts.Moving), map[int]*provisioning.DeviceAllocation{}
	}
	list := make([]pendingPod, len(pods))
	for i, p := range pods {
		list[i] = pendingPod{pod: p, class: classes[i], key: f.ClassKey(p), aff: scheduling.NewNodeAffinity(p), multi: filterPods[i].AnyTerm}
	}
	sort.SliceStable(list, func(i, j int) bool { return priority(list[i].pod) > priority(list[j].pod) })
	return run, list
}

// feasible searches the nodes from where the last search ended for up to
// toFind that pass the filters for the pod, as kube-scheduler does; the
// last filter error says why the others did not.
func (r *bindRun) feasible(p pendingPod, toFind int) (feasible []int, lastErr error) {
	b, c, n := r.b, p.class, len(r.nodes)
	processed := 0
	r.f.Prefilter(c)
	for i := 0; i < n && len(feasible) < toFind; i++ {
		idx := (b.next + i) % n
		processed++
		if c.Rejected(idx) {
			continue
		}
		if p.multi && !p.aff.MatchesNode(r.nodes[idx].Labels) {
			c.Reject(idx)
			continue
		}
		permanent, err := r.f.Check(c, idx)
		if err != nil {
			lastErr = err
			if permanent {
				c.Reject(idx)
			}
			continue
		}
		if p.devices { // the DynamicResources filter
			al, err := r.devices.Fits(r.nodes[idx], p.pod)
			if err != nil {
				lastErr = err
				continue
			}
			r.allocs[idx] = al
		}
		feasible = append(feasible, idx)
	}
	if n > 0 {
		b.next = (b.next + processed) % n
	}
	return feasible, lastErr
}

// bindings are the pods the run bound, by node (preemptors, nominated
// only, are not among them).
func (r *bindRun) bindings() []*provisioning.ExistingNodePlan {
	var out []*provisioning.ExistingNodePlan
	for idx, n := range r.nodes {
		var pods []*corev1.Pod
		for _, p := range r.f.Placed(idx) {
			if !r.nominated[p] {
				pods = append(pods, p)
			}
		}
		if len(pods) > 0 {
			out = append(out, &provisioning.ExistingNodePlan{Node: n, Pods: pods})
		}
	}
	return out
}

// pick is kube-scheduler's selectHost: the best score, ties at random.
func (b *Binder) pick(feasible []int, scores []int64) int {
	best, bestScore, ties := feasible[0], scores[0], 1
	for i := 1; i < len(feasible); i++ {
		switch {
		case scores[i] > bestScore:
			best, bestScore, ties = feasible[i], scores[i], 1
		case scores[i] == bestScore:
			ties++
			if b.opts.Rand != nil && b.opts.Rand.Intn(ties) == 0 {
				best = feasible[i]
			}
		}
	}
	return best
}

// numFeasibleNodesToFind is kube-scheduler's adaptive search bound: every
// node below 100, else 50 % less 1 % per 125 nodes (at least 5 %, at least
// 100 nodes).
func numFeasibleNodesToFind(all int) int {
	if all < 100 {
		return all
	}
	pct := 50 - all/125
	if pct < 5 {
		pct = 5
	}
	return max(all*pct/100, 100)
}

// nodeTreeOrder lists nodes as kube-scheduler's node tree does: zones in
// order of first appearance, taking one node from each in turn.
func nodeTreeOrder(nodes []*provisioning.Node) []*provisioning.Node {
	var zones []string
	byZone := map[string][]*provisioning.Node{}
	for _, n := range nodes {
		if n.InFlight {
			continue
		}
		z := n.Labels[v1.LabelZone]
		if _, ok := byZone[z]; !ok {
			zones = append(zones, z)
		}
		byZone[z] = append(byZone[z], n)
	}
	out := make([]*provisioning.Node, 0, len(nodes))
	for i := 0; len(out) < cap(out); i++ {
		added := false
		for _, z := range zones {
			if i < len(byZone[z]) {
				out = append(out, byZone[z][i])
				added = true
			}
		}
		if !added {
			break
		}
	}
	return out
}

// prune starts a call: it forgets the last call's objects without content
// keys, and drops cached facts of nodes no longer passed in.
func (b *Binder) prune(nodes []*provisioning.Node) {
	b.groupOf.NewCall(0)
	b.nodes.NewCall(0)
	if b.nodes.Len() <= 2*len(nodes)+64 {
		return
	}
	b.nodes.Retain(nodes)
	b.filters.Retain(nodes)
}

func (b *Binder) factsOf(n *provisioning.Node) *nodeFacts {
	if f, ok := b.nodes.Get(n); ok {
		return f
	}
	f := &nodeFacts{obj: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels}}}
	for _, p := range n.Pods {
		if p.DeletionTimestamp == nil {
			g := b.group(p)
			found := false
			for i := range f.groups {
				if f.groups[i].group == g {
					f.groups[i].n++
					found = true
					break
				}
			}
			if !found {
				f.groups = append(f.groups, groupCount{group: g, n: 1})
			}
		}
		nz := b.opts.Requests.of(p)
		f.nonZero[0] += nz[0]
		f.nonZero[1] += nz[1]
		if hasPodAffinity(p) {
			f.affinity = append(f.affinity, p)
		}
	}
	b.nodes.Put(n, f)
	return f
}

// nonZeroDefaults are kube-scheduler's requests for containers that set
// none, used when it scores by least-allocated resources.
var nonZeroDefaults = corev1.ResourceList{
	corev1.ResourceCPU:    *resource.NewMilliQuantity(100, resource.DecimalSI),
	corev1.ResourceMemory: *resource.NewQuantity(200<<20, resource.BinarySI),
}

// nonZeroRequests are a pod's cpu (m) and memory requests with containers
// that request none counted at kube-scheduler's defaults (100m, 200 MiB).
func nonZeroRequests(p *corev1.Pod) [2]int64 {
	r := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{NonMissingContainerRequests: nonZeroDefaults, UseStatusResources: true})
	return [2]int64{r.Cpu().MilliValue(), r.Memory().Value()}
}

func hasPodAffinity(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	return a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil)
}

func priority(p *corev1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// requiredOnly is the pod as kube-scheduler's filters see it: preferences
// (preferred node and pod affinity, ScheduleAnyway spreads) removed. The
// boolean says it has several required node-affinity terms, which the
// filters OR (provisioning classes carry one at a time).
func requiredOnly(pod *corev1.Pod) (*corev1.Pod, bool) {
	a := pod.Spec.Affinity
	multi := a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil &&
		len(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) > 1
	return provisioning.WithoutPreferences(pod), multi
}

// place binds the pod to target idx and updates what later scores read.
func (r *bindRun) place(pod *corev1.Pod, c provisioning.Class, idx int) {
	r.f.Add(c, idx, pod)
	nz, ok := r.nonZero[c]
	if !ok {
		nz = nonZeroRequests(pod)
		r.nonZero[c] = nz
	}
	r.addedNonZero[idx][0] += nz[0]
	r.addedNonZero[idx][1] += nz[1]
	g := r.b.group(pod)
	for id, n := range r.addedCounts[idx] {
		if n >= 0 && r.b.selects(r.spreads[id], g) {
			r.addedCounts[idx][id] = n + 1
		}
	}
	for _, sc := range r.classes {
		sc.placed(r, pod, idx)
	}
}

// selectorsError is the first of a pod's spread and pod (anti-)affinity
// selectors, required or preferred, that cannot be read.
func selectorsError(pod *corev1.Pod) error {
	check := func(what string, sel *metav1.LabelSelector) error {
		if sel == nil {
			return nil
		}
		if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			return fmt.Errorf("%s selector: %w", what, err)
		}
		return nil
	}
	for _, tsc := range pod.Spec.TopologySpreadConstraints {
		if err := check("topology spread", tsc.LabelSelector); err != nil {
			return err
		}
	}
	a := pod.Spec.Affinity
	if a == nil {
		return nil
	}
	var terms []corev1.PodAffinityTerm
	var weighted []corev1.WeightedPodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		weighted = append(weighted, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		weighted = append(weighted, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
	}
	for _, w := range weighted {
		terms = append(terms, w.PodAffinityTerm)
	}
	for _, t := range terms {
		if err := check("pod affinity", t.LabelSelector); err != nil {
			return err
		}
		if err := check("pod affinity namespace", t.NamespaceSelector); err != nil {
			return err
		}
	}
	return nil
}
