package state

import (
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/buffer"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/schedulerconfig"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// Store is the cluster kept up to date one object at a time — from
// informer events, or whatever else a host learns objects from — and the
// snapshots decisions read from it. A node's view (a
// provisioning.Node and what disruption needs of it) is rebuilt only when
// the Node, its NodeClaim or one of its pods changes, and carries a
// Version made of their resourceVersions, so the engine's caches hold
// across decisions exactly while nothing changed.
//
// What a host hands a Store is the Store's: the objects (Nodes, NodeClaims,
// pods, NodePools, instance types, DaemonSets, PDBs, claims, volumes,
// StorageClasses), everything they reach (a pod's labels, a Node's
// status), and the slices and maps they come in. The host never writes
// into any of it afterwards, nor lets anyone else: it changes an object by
// handing over a new one (as informers do), and a list or map by handing
// over a new one.
//
// What a Store hands out is read-only and immutable: provisioning
// snapshots, disruption clusters and their candidates, views, Nodes,
// pending pods, volumes, an Objects, and every node, pod, slice, map and
// resource list they reach. The Store never writes into it again (nor, by
// the rule above, does the host) — a change makes the changed node's view
// anew, in new slices and maps, and leaves the old one to whoever holds
// it — so a host may keep what it was
// given across any number of later changes and rebuilds, read it from any
// goroutine while the Store changes, and find it as it was. It is shared
// (with the Store, with later snapshots while its node does not change,
// with other callers), so nobody writes into it either: whoever needs it
// different makes a copy (disruption copies a node before marking it).
// Only what a call makes anew for its caller is the caller's to change:
// the structs it returns (the *Snapshot, the *disruption.Snapshot and its
// *Candidates, the *Objects, the *Nodes of Nodes()), whose fields a host
// may set (a Snapshot's Decisions, a disruption Snapshot's Planner and
// Memo), and the lists a call makes: a Snapshot's Nodes and Pods, a
// disruption Snapshot's Nodes, Unmanaged and Pending, an Objects's lists but
// its NodePools, DaemonSets and PDBs, and the slices Nodes and
// PendingPods return, which a host may filter or reorder in place. All
// else they hold may be shared.
//
// A Store is safe for concurrent use.
type Store struct {
	mu sync.Mutex

	nodePools     []*v1.NodePool
	instanceTypes map[string][]*cloudprovider.InstanceType
	itGen         int    // counts SetInstanceTypes
	configGen     uint64 // counts SetNodePools, SetInstanceTypes, SetDaemonSets, spread changes
	daemonSets    []*appsv1.DaemonSet
	dsPods        []*corev1.Pod // the DaemonSets as pods, built once per SetDaemonSets
	pdbs          []*policyv1.PodDisruptionBudget
	// untried: see Objects.AssumeUnschedulable.
	untried Untried
	// backlog, quiet and backlogClock: see SetSchedulerBacklog.
	backlog, quiet time.Duration
	backlogClock   clock.PassiveClock
	// lastArrival is when the newest untried pod arrived; every untried pod
	// that arrived at or before releasedUpTo had quiet behind it (see
	// SetSchedulerBacklog).
	lastArrival, releasedUpTo time.Time
	// pinLaunched: see SetPinLaunchedPods.
	pinLaunched bool

	nodes      map[string]*corev1.Node    // by name
	claims     map[string]*v1.NodeClaim   // by name
	claimOf    map[string]string          // providerID → claim name
	nodeOf     map[string]string          // providerID → Node name
	pods       map[podRef]*storedPod      // every pod
	podsOn     map[string]map[podRef]bool // by spec.nodeName
	unbound    map[podRef]time.Time       // pods with no spec.nodeName, by creation
	views      map[entry]*view            // one per claim, and per Node without a claim
	sorted     []*view                    // views by name; nil after a view came or went
	nodeEntry  map[string]entry           // Node name → its entry
	claimEntry map[string]entry           // claim name → its entry
	vol        volumeObjects
	dra        draObjects
	launch     launches // the launch-loop guard (launches.go)
	// spread is kube-scheduler's default topology spread (SetSpreadDefaults);
	// spreadGen counts its changes, and is part of every view's Version.
	spread    SpreadDefaults
	spreadGen int
	// buffers are the CapacityBuffers' virtual pods (SetBufferPods), pending
	// after the real ones; bufferOn counts them by the node the last
	// provisioning pass placed them on (SetBufferPlacement).
	buffers  []*corev1.Pod
	bufferOn map[string]int
}

type podRef struct{ namespace, name string }

func refOf(p *corev1.Pod) podRef { return podRef{podutil.Namespace(p.ObjectMeta), p.Name} }

type storedPod struct {
	// pod is as kube-scheduler schedules it: given, or a copy with the
	// default topology spread constraints (SetSpreadDefaults).
	pod, given *corev1.Pod
	requests   corev1.ResourceList
	// arrived is when the Store first had the pod, on the backlog's clock
	// (zero with the backlog off).
	arrived time.Time
}

// entry names a view: a claim's, or an unmanaged Node's (one without a
// claim yet, or that Joiner does not manage).
type entry struct {
	kind viewKind
	name string
}

// viewKind says what an entry's name names.
type viewKind uint8

const (
	claimView viewKind = iota // a NodeClaim, with its Node once it registers
	nodeView                  // a Node without a claim
)

// view is one node as decisions see it, rebuilt when dirty. What a build
// hands out (built, node's Pods, candidate's slices) is never written into
// again: a rebuild makes new ones, so snapshots holding the old stay as
// they were.
type view struct {
	key   entry
	node  Node
	dirty bool
	built *provisioning.Node
	// candidate is the node as disruption sees it, but for Price (priced
	// at pricedAt, the instance types' generation) and NodeClassDrift.
	candidate disruption.Candidate
	price     float64
	pricedAt  int
	// unlaunched: a claim without a size of its own yet, sized from the
	// instance types (rebuilt when they change).
	unlaunched bool
}

// Untried says what a Store makes of an unbound pod no scheduler has
// tried yet (no PodScheduled condition): see Objects.AssumeUnschedulable.
type Untried bool

const (
	// WaitForScheduler: such a pod is not provisioned for until
	// kube-scheduler gives up on it, as upstream waits (a controller).
	WaitForScheduler Untried = false
	// AssumeUnschedulable: such a pod is provisioned for at once
	// (manifests that never met a cluster, the simulator).
	AssumeUnschedulable Untried = true
)

// NewStore returns an empty Store that treats untried pods as untried says.
func NewStore(untried Untried) *Store {
	return &Store{untried: untried,
		nodes: map[string]*corev1.Node{}, claims: map[string]*v1.NodeClaim{}, claimOf: map[string]string{}, nodeOf: map[string]string{},
		pods: map[podRef]*storedPod{}, podsOn: map[string]map[podRef]bool{}, unbound: map[podRef]time.Time{},
		views: map[entry]*view{}, nodeEntry: map[string]entry{}, claimEntry: map[string]entry{}}
}

// SetNodePools replaces the NodePools.
func (s *Store) SetNodePools(pools []*v1.NodePool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodePools = pools
	s.configGen++
	s.specChanged()
}

// SetInstanceTypes replaces what the cloud offers each NodePool.
func (s *Store) SetInstanceTypes(its map[string][]*cloudprovider.InstanceType) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.instanceTypes = its
	s.itGen++
	s.configGen++
	s.unlaunchedDirty()
}

// unlaunchedDirty marks the views of claims that have not launched: their
// size comes from the instance types (see leastOf).
func (s *Store) unlaunchedDirty() {
	for _, v := range s.views {
		if v.unlaunched {
			v.dirty = true
		}
	}
}

// SetDaemonSets replaces the DaemonSets.
func (s *Store) SetDaemonSets(dss []*appsv1.DaemonSet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.daemonSets = dss
	s.dsPods = (&Objects{DaemonSets: dss}).DaemonSetPods()
	s.configGen++
	s.specChanged()
}

// SetNodePoolsAndTypes replaces the NodePools and their instance types at
// once, so no snapshot sees one without the other.
func (s *Store) SetNodePoolsAndTypes(pools []*v1.NodePool, its map[string][]*cloudprovider.InstanceType) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodePools, s.instanceTypes = pools, its
	s.itGen++
	s.configGen++
	s.unlaunchedDirty()
	s.specChanged()
}

// ConfigVersion changes whenever the NodePools, instance types or
// DaemonSets do: a host may keep a provisioning Planner while it stays.
func (s *Store) ConfigVersion() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.configGen
}

// SetPDBs replaces the PodDisruptionBudgets (with their live status).
func (s *Store) SetPDBs(pdbs []*policyv1.PodDisruptionBudget) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pdbs = pdbs
}

// SetNode adds or replaces a Node.
func (s *Store) SetNode(n *corev1.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.detachNode(n.Name)
	if old, ok := s.nodes[n.Name]; ok && old.Spec.ProviderID != n.Spec.ProviderID && s.nodeOf[old.Spec.ProviderID] == n.Name {
		delete(s.nodeOf, old.Spec.ProviderID)
	}
	s.nodes[n.Name] = n
	if n.Spec.ProviderID != "" {
		s.nodeOf[n.Spec.ProviderID] = n.Name
	}
	s.attachNode(n)
}

// DeleteNode forgets a Node (its claim, if any, stays until deleted).
func (s *Store) DeleteNode(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.detachNode(name)
	if n, ok := s.nodes[name]; ok && s.nodeOf[n.Spec.ProviderID] == name {
		delete(s.nodeOf, n.Spec.ProviderID)
	}
	delete(s.nodes, name)
}

// SetNodeClaim adds or replaces a NodeClaim.
func (s *Store) SetNodeClaim(nc *v1.NodeClaim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setNodeClaimLocked(nc)
}

// AddNodeClaim adds a NodeClaim the host has just created — the copy its
// Create returned — unless the Store has it already. The watch may have
// delivered the claim, launched even, before the Create's caller hands it
// in; that copy is never older than the Create's, and replacing it would
// make a launched claim unlaunched again and part it from its Node until
// its next event.
func (s *Store) AddNodeClaim(nc *v1.NodeClaim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.claims[nc.Name]; ok {
		return
	}
	s.setNodeClaimLocked(nc)
}

func (s *Store) setNodeClaimLocked(nc *v1.NodeClaim) {
	if old, ok := s.claims[nc.Name]; ok && old.Status.ProviderID != nc.Status.ProviderID {
		s.deleteClaimLocked(nc.Name)
	}
	s.claims[nc.Name] = nc
	k := entry{claimView, nc.Name}
	v := s.views[k]
	if v == nil {
		v = &view{key: k}
		s.views[k] = v
		s.claimEntry[nc.Name] = k
		s.sorted = nil
	}
	v.node.NodeClaim = nc
	v.dirty = true
	if id := nc.Status.ProviderID; id != "" {
		s.claimOf[id] = nc.Name
		if name, ok := s.nodeOf[id]; ok && s.nodeEntry[name] != k {
			s.detachNode(name)
			s.attachNode(s.nodes[name])
		}
	}
}

// DeleteNodeClaim forgets a NodeClaim; its Node, if still there, is then
// a node Joiner does not manage.
func (s *Store) DeleteNodeClaim(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if nc, ok := s.claims[name]; ok {
		if _, ok := initializedSince(nc); ok {
			s.settleLocked(name) // its pods had their chance
		}
	}
	delete(s.launch.planned, name)
	s.deleteClaimLocked(name)
}

func (s *Store) deleteClaimLocked(name string) {
	nc, ok := s.claims[name]
	if !ok {
		return
	}
	k := s.claimEntry[name]
	var node *corev1.Node
	if v := s.views[k]; v != nil {
		node = v.node.Node
	}
	delete(s.views, k)
	delete(s.claimEntry, name)
	delete(s.claims, name)
	if id := nc.Status.ProviderID; id != "" && s.claimOf[id] == name {
		delete(s.claimOf, id)
	}
	s.sorted = nil
	if node != nil {
		delete(s.nodeEntry, node.Name)
		s.attachNode(node)
	}
}

// attachNode joins a Node to the claim with its providerID, or makes it a
// view of its own.
func (s *Store) attachNode(n *corev1.Node) {
	k := entry{nodeView, n.Name}
	if claim, ok := s.claimOf[n.Spec.ProviderID]; ok && n.Spec.ProviderID != "" {
		k = s.claimEntry[claim]
	}
	v := s.views[k]
	if v == nil {
		v = &view{key: k}
		s.views[k] = v
		s.sorted = nil
	}
	v.node.Node = n
	v.dirty = true
	s.nodeEntry[n.Name] = k
}

// detachNode takes a Node off its view (dropping the view if it was the
// Node's own).
func (s *Store) detachNode(name string) {
	k, ok := s.nodeEntry[name]
	if !ok {
		return
	}
	delete(s.nodeEntry, name)
	v := s.views[k]
	if v == nil {
		return
	}
	if k.kind == nodeView {
		delete(s.views, k)
		s.sorted = nil
		return
	}
	v.node.Node = nil
	v.dirty = true
}

// SpreadDefaults is kube-scheduler's podTopologySpread.defaultConstraints
// (schedulerconfig) and the host's way of deducing a pod's selector for
// them.
type SpreadDefaults struct {
	Constraints []corev1.TopologySpreadConstraint
	// Selector is the selector kube-scheduler gives the pod's defaults
	// (schedulerconfig.DefaultSelector over the Services and controller
	// that select it), nil when there is none. It is called with the
	// Store locked, and must not call the Store.
	Selector func(*corev1.Pod) *metav1.LabelSelector
}

// SetSpreadDefaults makes every pod with no topology spread constraints
// of its own, from now on, one with the defaults (schedulerconfig.Apply):
// in snapshots, views, pending pods and Pod. The pods stored already are
// applied to again (Respread).
func (s *Store) SetSpreadDefaults(d SpreadDefaults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spread = d
	s.respreadLocked()
}

// Respread applies the spread defaults to every pod again: the host calls
// it when a selector may have changed (a Service, ReplicaSet,
// StatefulSet or ReplicationController did).
func (s *Store) Respread() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.respreadLocked()
}

func (s *Store) respreadLocked() {
	s.spreadGen++
	s.configGen++
	for _, sp := range s.pods {
		sp.pod = s.spreadPod(sp.given)
	}
	for _, v := range s.views {
		v.dirty = true
	}
}

// spreadPod is p under the spread defaults.
func (s *Store) spreadPod(p *corev1.Pod) *corev1.Pod {
	if len(s.spread.Constraints) == 0 || s.spread.Selector == nil || len(p.Spec.TopologySpreadConstraints) > 0 {
		return p
	}
	return schedulerconfig.Apply(p, s.spread.Constraints, s.spread.Selector(p))
}

// SetPod adds or replaces a pod.
func (s *Store) SetPod(p *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ref := refOf(p)
	prev := s.pods[ref]
	s.unlinkPod(ref)
	sp := &storedPod{pod: s.spreadPod(p), given: p, requests: scheduling.PodRequests(p)}
	if prev != nil {
		sp.arrived = prev.arrived
	} else if s.backlog > 0 {
		sp.arrived = s.backlogClock.Now()
		if s.awaitsVerdict(p) {
			s.arrive(sp.arrived)
		}
	}
	s.pods[ref] = sp
	if p.Spec.NodeName != "" {
		s.launch.forgetPod(ref)
	}
	if p.Spec.NodeName == "" {
		s.unbound[ref] = p.CreationTimestamp.Time
		if hasClaims(p) {
			s.vol.built = nil // its claims may be missing
		}
		return
	}
	on := s.podsOn[p.Spec.NodeName]
	if on == nil {
		on = map[podRef]bool{}
		s.podsOn[p.Spec.NodeName] = on
	}
	on[ref] = true
	s.touchNode(p.Spec.NodeName)
}

// DeletePod forgets a pod.
func (s *Store) DeletePod(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ref := podRef{namespace, name}
	if namespace == "" {
		ref.namespace = corev1.NamespaceDefault
	}
	s.unlinkPod(ref)
	delete(s.pods, ref)
	s.launch.forgetPod(ref)
}

func (s *Store) unlinkPod(ref podRef) {
	old, ok := s.pods[ref]
	if !ok {
		return
	}
	if node := old.pod.Spec.NodeName; node != "" {
		delete(s.podsOn[node], ref)
		if len(s.podsOn[node]) == 0 {
			delete(s.podsOn, node)
		}
		s.touchNode(node)
	} else {
		delete(s.unbound, ref)
		if hasClaims(old.pod) {
			s.vol.built = nil
		}
	}
}

func (s *Store) touchNode(name string) {
	if k, ok := s.nodeEntry[name]; ok {
		s.views[k].dirty = true
	}
}

// Pod returns the stored pod, or nil.
func (s *Store) Pod(namespace, name string) *corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	if namespace == "" {
		namespace = corev1.NamespaceDefault
	}
	if sp := s.pods[podRef{namespace, name}]; sp != nil {
		return sp.pod
	}
	return nil
}

// Node returns the Node of that name, or nil: the object the host handed
// over, read-only (see Store).
func (s *Store) Node(name string) *corev1.Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nodes[name]
}

// NodeClaim returns the claim of that name, or nil: the object the host
// handed over, read-only (see Store).
func (s *Store) NodeClaim(name string) *v1.NodeClaim {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k, ok := s.claimEntry[name]; ok {
		return s.views[k].node.NodeClaim
	}
	return nil
}

// refsOn are the pods bound to the Node of that name, by namespace and name.
func (s *Store) refsOn(node string) []podRef {
	refs := make([]podRef, 0, len(s.podsOn[node]))
	for ref := range s.podsOn[node] {
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].namespace != refs[j].namespace {
			return refs[i].namespace < refs[j].namespace
		}
		return refs[i].name < refs[j].name
	})
	return refs
}

// PodsOn returns the pods bound to the Node of that name (spec.nodeName),
// by namespace and name: the objects the host handed over, read-only, in
// a new slice.
func (s *Store) PodsOn(node string) []*corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	refs := s.refsOn(node)
	pods := make([]*corev1.Pod, len(refs))
	for i, ref := range refs {
		pods[i] = s.pods[ref].given
	}
	return pods
}

// build brings every dirty view up to date and returns them by name.
func (s *Store) build() []*view {
	if s.sorted == nil {
		s.sorted = make([]*view, 0, len(s.views))
		for _, v := range s.views {
			s.sorted = append(s.sorted, v)
		}
		sort.Slice(s.sorted, func(i, j int) bool {
			a, b := s.sorted[i], s.sorted[j]
			if an, bn := a.node.Name(), b.node.Name(); an != bn {
				return an < bn
			}
			return a.key.kind < b.key.kind
		})
	}
	for _, v := range s.sorted {
		if v.dirty {
			s.rebuild(v)
		}
	}
	return s.sorted
}

func (s *Store) rebuild(v *view) {
	v.dirty = false
	v.node.Pods = nil // never [:0]: Nodes() handed the last build's out
	var requests []corev1.ResourceList
	if n := v.node.Node; n != nil {
		refs := s.refsOn(n.Name)
		v.node.Pods = make([]*corev1.Pod, 0, len(refs))
		for _, ref := range refs {
			sp := s.pods[ref]
			v.node.Pods = append(v.node.Pods, sp.pod)
			if !podutil.IsTerminal(sp.pod) {
				requests = append(requests, sp.requests)
			}
		}
	}
	v.built = v.node.schedulingWith(scheduling.Add(requests...))
	v.built.Version = version(&v.node)
	if v.built.Version != "" && s.spreadGen > 0 {
		v.built.Version += "/s" + strconv.Itoa(s.spreadGen) // the pods' defaults changed, not their resourceVersions
	}
	v.unlaunched = len(v.built.Allocatable) == 0 && v.node.NodeClaim != nil
	if v.unlaunched {
		// A claim not launched yet will be one of its instance types: it
		// holds at least what the least of them holds. Without that, a
		// pass before the launch would find no room on it for the pods it
		// was made for, and make another claim for them.
		v.built.Allocatable, v.built.Capacity = s.leastOf(v.node.NodeClaim)
		if v.built.Version != "" {
			v.built.Version += "/" + strconv.Itoa(s.itGen)
		}
	}
	// A new slice each build, never the last one's [:0]: the candidates
	// of disruption clusters handed out before hold that one. Not nil when
	// empty (nil asks disruption to derive it); clipped, so a reader's
	// append makes a slice of its own.
	reschedulable := make([]*corev1.Pod, 0, len(v.built.Pods))
	for _, p := range v.built.Pods {
		if podutil.IsReschedulable(p) {
			reschedulable = append(reschedulable, p)
		}
	}
	n, labels := &v.node, v.built.Labels
	v.candidate = disruption.Candidate{Node: v.built, NodeClaim: n.NodeClaim, NodePool: n.NodePool(),
		InstanceType: labels[v1.LabelInstanceType], Zone: labels[v1.LabelZone], CapacityType: labels[v1.LabelCapacityType],
		Initialized: n.Initialized(), Disrupting: n.Disrupting(), NotReady: n.Node != nil && !n.Ready(),
		Reschedulable: slices.Clip(reschedulable), Registered: n.Node != nil}
	if n.Node != nil {
		v.candidate.Conditions = n.Node.Status.Conditions
	}
	v.pricedAt = -1
}

// leastOf is, resource by resource, the least allocatable and capacity
// among the instance types a claim allows (its NodePool's that its
// requirements admit); nil when none is known.
func (s *Store) leastOf(nc *v1.NodeClaim) (allocatable, capacity corev1.ResourceList) {
	reqs := scheduling.FromNodeSelectorRequirements(nc.Spec.Requirements)
	least := func(acc, l corev1.ResourceList) corev1.ResourceList {
		if acc == nil {
			return l.DeepCopy()
		}
		for name, q := range acc {
			if other, ok := l[name]; !ok {
				delete(acc, name)
			} else if other.Cmp(q) < 0 {
				acc[name] = other.DeepCopy()
			}
		}
		return acc
	}
	for _, it := range s.instanceTypes[nc.Labels[v1.LabelNodePool]] {
		if !reqs.Get(v1.LabelInstanceType).Has(it.Name) {
			continue
		}
		allocatable, capacity = least(allocatable, it.Allocatable()), least(capacity, it.Capacity)
	}
	return allocatable, capacity
}

// version is a hash of the resourceVersions the node's view is made of, or
// "" when one of them has none (the view is then never cached).
func version(n *Node) string {
	h := fnv.New64a()
	write := func(parts ...string) bool {
		for _, p := range parts {
			if p == "" {
				return false
			}
			_, _ = h.Write([]byte(p))
			_, _ = h.Write([]byte{0})
		}
		return true
	}
	if n.Node != nil && !write("node", n.Node.Name, n.Node.ResourceVersion) {
		return ""
	}
	if n.NodeClaim != nil && !write("claim", n.NodeClaim.Name, n.NodeClaim.ResourceVersion) {
		return ""
	}
	for _, p := range n.Pods {
		if !write(p.Namespace, p.Name, p.ResourceVersion) {
			return ""
		}
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

// Nodes are the Nodes joined to their NodeClaims, with their pods, by
// name (see Objects.StateNodes).
func (s *Store) Nodes() []*Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	views := s.build()
	out := make([]*Node, len(views))
	for i, v := range views {
		n := v.node
		out[i] = &n
	}
	return out
}

// View returns the node (by Node name, or claim name before it registers)
// as provisioning sees it, or nil: read-only, and kept as it is when the
// node changes (see Store).
func (s *Store) View(name string) *provisioning.Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.nodeEntry[name]
	if !ok {
		if k, ok = s.claimEntry[name]; !ok {
			return nil
		}
	}
	v := s.views[k]
	if v.dirty {
		s.rebuild(v)
	}
	return v.built
}

// SetSchedulerBacklog makes an unbound pod of kube-scheduler's
// (schedulerName default-scheduler) that it has not tried within after of
// the pod's creation provisionable, as if it had found the pod no room:
// kube-scheduler behind a burst of pods (on a 2-core control plane it
// tried 1,000 new pods over 14 s, 5,000 over a minute and more) would
// otherwise hold each provisioning batch to the pods it has reached, and a
// scale-out planned in pieces costs more and starts later. A pod it tries
// within after is left to its verdict, as upstream leaves every pod.
//
// A burst that has ended is not waited for so long: once no untried pod
// has arrived for quiet (0: never), every untried pod that had arrived by
// then is provisionable, and stays so. A 1,000-pod burst is created in
// about 2 s and tried by kube-scheduler over 9 s; its pods' backlog held
// its first provisioning pass to 5 s after the last pod's creation.
//
// The host wakes provisioning when a backlog or a quiet runs out
// (BacklogDue), and a batch takes every pod provisionable when it ends.
// after 0 turns both off; clk tells the time.
func (s *Store) SetSchedulerBacklog(after, quiet time.Duration, clk clock.PassiveClock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if clk == nil {
		clk = clock.RealClock{}
	}
	s.backlog, s.quiet, s.backlogClock = after, quiet, clk
}

// arrive records an untried pod's arrival at now: the quiet after the
// previous arrival, if it was long enough, released the pods before it.
func (s *Store) arrive(now time.Time) {
	if s.quietAfter(s.lastArrival, now) {
		s.releasedUpTo = s.lastArrival
	}
	s.lastArrival = now
}

// ReleaseBacklog makes every untried pod that has arrived provisionable
// now, as a quiet after the last would (SetSchedulerBacklog): the host
// calls it when a provisioning batch ended at its max with pods still
// arriving. The batch was the wait; a burst that outlasts it is planned
// whole rather than split at the backlog's age — at 5,000 pods created
// over 11 s, a first pass at the 10 s limit took the 2,474 pods then 5 s
// old and a second pass 9 s later the other 2,526, whose nodes came 13 s
// after the first pass's (docs/scale.md, session 34).
func (s *Store) ReleaseBacklog() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.backlog > 0 && s.lastArrival.After(s.releasedUpTo) {
		s.releasedUpTo = s.lastArrival
	}
}

// quietAfter: arrival was followed by quiet by now (false for no arrival).
func (s *Store) quietAfter(arrival, now time.Time) bool {
	return s.quiet > 0 && !arrival.IsZero() && now.Sub(arrival) >= s.quiet
}

// SetPinLaunchedPods keeps each pending pod a claim was launched for on
// that claim in provisioning snapshots until the launch settles (see
// pinLocked); off, as upstream, every pass plans every pending pod again.
func (s *Store) SetPinLaunchedPods(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pinLaunched = on
}

// provisionable: provisioning should find room for the pod (see
// Objects.PendingPods and SetSchedulerBacklog).
func (s *Store) provisionable(p *corev1.Pod) bool {
	if Provisionable(p, s.untried) {
		return true
	}
	if s.backlog <= 0 || !s.awaitsVerdict(p) {
		return false
	}
	now := s.backlogClock.Now()
	if now.Sub(p.CreationTimestamp.Time) >= s.backlog {
		return true
	}
	sp := s.pods[refOf(p)]
	if sp == nil || sp.arrived.IsZero() {
		return false
	}
	return !sp.arrived.After(s.releasedUpTo) || (!sp.arrived.After(s.lastArrival) && s.quietAfter(s.lastArrival, now))
}

// AwaitsVerdict: the pod, as given, is pending for kube-scheduler, which
// has not tried it yet (see SetSchedulerBacklog; false with the backlog
// off).
func (s *Store) AwaitsVerdict(p *corev1.Pod) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.backlog > 0 && s.awaitsVerdict(p)
}

// awaitsVerdict: the pod is pending for kube-scheduler (schedulerName
// default-scheduler; another scheduler's verdict is never late), which has
// not tried it yet.
func (s *Store) awaitsVerdict(p *corev1.Pod) bool {
	if Provisionable(p, s.untried) || !Provisionable(p, AssumeUnschedulable) {
		return false // tried, or not an untried pod
	}
	if p.Spec.SchedulerName != "" && p.Spec.SchedulerName != corev1.DefaultSchedulerName {
		return false
	}
	return !p.CreationTimestamp.IsZero()
}

// IsProvisionable: provisioning should find room for the pod now (see
// SetSchedulerBacklog), the pod as given, not as the Store has it.
func (s *Store) IsProvisionable(p *corev1.Pod) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.provisionable(p)
}

// BacklogDue: the backlog of an unbound pod kube-scheduler has not tried,
// or the quiet after the last such pod's arrival, ran out in (after, upTo]
// — a pod became provisionable then with no event of its own
// (SetSchedulerBacklog). False with the backlog off.
func (s *Store) BacklogDue(after, upTo time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.backlog <= 0 {
		return false
	}
	if due := s.lastArrival.Add(s.quiet); s.quiet > 0 && !s.lastArrival.IsZero() && due.After(after) && !due.After(upTo) {
		for ref := range s.unbound {
			if s.awaitsVerdict(s.pods[ref].pod) {
				return true // the burst's quiet ran out with an untried pod pending
			}
		}
	}
	for ref, created := range s.unbound {
		if created.IsZero() {
			continue
		}
		// The time first: a host asks often, over every unbound pod.
		if due := created.Add(s.backlog); due.After(after) && !due.After(upTo) && s.awaitsVerdict(s.pods[ref].pod) {
			return true // not tried (a verdict is its own event), and pending
		}
	}
	return false
}

// PendingPods are the pods provisioning should find room for (see
// Objects.PendingPods), oldest first, then by namespace and name.
func (s *Store) PendingPods() []*corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pendingLocked()
}

func (s *Store) pendingLocked() []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(s.unbound))
	for ref := range s.unbound {
		if p := s.pods[ref].pod; s.provisionable(p) && s.launch.givenUp[ref] == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return append(out, s.buffers...)
}

// SetBufferPods replaces the CapacityBuffers' virtual pods (see
// pkg/buffer): from now on they are pending in every provisioning
// snapshot and disruption cluster, after the real pods, and never bind.
func (s *Store) SetBufferPods(pods []*corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buffers = slices.Clone(pods)
	if len(pods) == 0 {
		s.bufferOn = nil // no pass need place them again to free their nodes
	}
}

// SetBufferPlacement records how many virtual pods the last provisioning
// pass placed on each existing node (buffer.Place): disruption's
// emptiness leaves those nodes alone.
func (s *Store) SetBufferPlacement(onNodes map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bufferOn = maps.Clone(onNodes)
}

// ProvisioningSnapshot is what provisioning plans over: every node and
// in-flight claim, the DaemonSets, and the pending pods — with pinning on
// (SetPinLaunchedPods), a pod awaiting the claim launched for it is on
// that claim instead of pending. It never changes (see Store): its Nodes
// are shared with later snapshots while they do not change, so callers
// must not write into them.
func (s *Store) ProvisioningSnapshot() *provisioning.Snapshot {
	snap, _ := s.ProvisioningSnapshots()
	return snap
}

// ProvisioningSnapshots is ProvisioningSnapshot and, when that pinned any
// pod to its claim, the snapshot without pins, every pending pod to place
// again (else nil): the pins are one way kube-scheduler may bind what is
// pending, the first pass's, and where it has already bound other pods
// onto the pins' claims a repack may find room the pins do not (see
// decide.Decider.ProvisionPinned).
func (s *Store) ProvisioningSnapshots() (snap, repacked *provisioning.Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	views := s.build()
	all := s.pendingLocked()
	pending, pinned := s.pinLocked(all)
	vols, dra := s.volumesLocked(), s.draLocked()
	snapshot := func(pods []*corev1.Pod, pinned map[*view]*provisioning.Node) *provisioning.Snapshot {
		snap := &provisioning.Snapshot{NodePools: s.nodePools, InstanceTypes: s.instanceTypes, DaemonSets: s.dsPods,
			Pods: pods, Nodes: make([]*provisioning.Node, 0, len(views)), Volumes: vols, DRA: dra}
		for _, v := range views {
			if n := pinned[v]; n != nil {
				snap.Nodes = append(snap.Nodes, n)
				continue
			}
			snap.Nodes = append(snap.Nodes, v.built)
		}
		return snap
	}
	snap = snapshot(pending, pinned)
	if len(pinned) > 0 {
		repacked = snapshot(slices.Clone(all), nil)
	}
	return snap, repacked
}

// pinLocked keeps each pending pod a claim was launched for, and whose
// launch has not settled yet (LaunchedFor), on that claim: the pod is
// taken out of pending and put on a copy of the claim's node, as if bound
// there, while it fits beside what the node holds (its requests against
// the node's allocatable, as provisioning counts an existing node's room).
// A pass that comes while kube-scheduler is still binding a scale-out
// would otherwise plan those pods again, largest first over the launched
// nodes, and an earlier pass's tighter plan does not survive the repack:
// on a 1,000-pod scale-out a second pass planned a c6g.8xlarge for 55
// pods the first batch's nodes were already on their way for, and the
// hold then consolidated it away. A pod that no longer fits (kube-scheduler
// put other pods on its node), whose node has a taint it does not
// tolerate, or whose claim is being deleted, stays pending. The pods keep their pending order.
func (s *Store) pinLocked(pending []*corev1.Pod) ([]*corev1.Pod, map[*view]*provisioning.Node) {
	if !s.pinLaunched || len(s.launch.planned) == 0 {
		return pending, nil
	}
	awaiting := map[podRef][]string{}
	for _, claim := range slices.Sorted(maps.Keys(s.launch.planned)) {
		for _, ref := range s.launch.planned[claim] {
			awaiting[ref] = append(awaiting[ref], claim)
		}
	}
	pinned := map[*view]*provisioning.Node{}
	kept := make([]*corev1.Pod, 0, len(pending))
	for _, p := range pending {
		if !s.pinOnto(pinned, p, awaiting[refOf(p)]) {
			kept = append(kept, p)
		}
	}
	return kept, pinned
}

// pinOnto puts the pod on the first of the claims (launched for it, by
// name) that is not being deleted and where it fits, copying the claim's
// node into pinned the first time; false when none takes it.
func (s *Store) pinOnto(pinned map[*view]*provisioning.Node, p *corev1.Pod, claims []string) bool {
	if len(claims) == 0 || buffer.IsVirtual(p) {
		return false
	}
	requests := s.pods[refOf(p)].requests
	for _, claim := range claims {
		v := s.views[s.claimEntry[claim]]
		if v == nil || v.node.MarkedForDeletion() || len(v.built.Allocatable) == 0 {
			continue
		}
		// A taint kube-scheduler will not bind the pod past, besides those
		// of a node still starting (Node.Taints), keeps it off the node
		// for good: a pin there would only hold the pod until the launch
		// settles. CI met a registered Node whose unregistered taint a
		// stale patch put back.
		if scheduling.ToleratesForScheduling(v.built.Taints, p.Spec.Tolerations) != nil {
			continue
		}
		n := pinned[v]
		if n == nil {
			// A view's Pods are clipped, so the first append copies them,
			// and its Requested is always summed (rebuild).
			cp := *v.built
			cp.Version = "" // not the node any memo knows
			n = &cp
		}
		used := scheduling.Add(n.Requested, requests)
		if scheduling.Fits(used, n.Allocatable) != nil {
			continue
		}
		n.Pods = append(n.Pods, p)
		n.Requested = used
		pinned[v] = n
		return true
	}
	return false
}

// DisruptionSnapshot is what disruption decides over at now: every managed
// node (in-flight claims too, as capacity pods may move to) as a
// candidate, and the Nodes Joiner does not manage. drifted, when set, is
// the cloud provider's drift check of a claim ("" for none). It never
// changes (see Store): a pass may hold its candidates throughout.
func (s *Store) DisruptionSnapshot(now time.Time, drifted func(*v1.NodeClaim) cloudprovider.DriftReason) *disruption.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	views := s.build()
	dc := &disruption.Snapshot{Now: now, NodePools: s.nodePools, InstanceTypes: s.instanceTypes, PDBs: s.pdbs,
		DaemonSets: s.dsPods, Pending: s.pendingLocked(), Volumes: s.volumesLocked(), DRA: s.draLocked(), BufferPods: s.bufferOn}
	for _, v := range views {
		n := &v.node
		if !n.Managed() {
			if n.Node != nil {
				dc.Unmanaged = append(dc.Unmanaged, v.built)
			}
			continue
		}
		cand := v.candidate // a copy: the caller may change it
		if v.pricedAt != s.itGen {
			v.price, v.pricedAt = price(s.instanceTypes, &cand), s.itGen
		}
		cand.Price = v.price
		if drifted != nil {
			cand.NodeClassDrift = drifted(n.NodeClaim)
		}
		dc.Nodes = append(dc.Nodes, &cand)
	}
	return dc
}

// price is what the node's offering costs now (0 when the cloud no longer
// lists it).
func price(its map[string][]*cloudprovider.InstanceType, cand *disruption.Candidate) float64 {
	for _, it := range its[cand.NodePool] {
		if it.Name != cand.InstanceType {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == cand.Zone && o.CapacityType == cand.CapacityType {
				return o.Price
			}
		}
	}
	return 0
}

// DaemonSetPods are the DaemonSets as pods (see Objects.DaemonSetPods).
func (s *Store) DaemonSetPods() []*corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dsPods
}

// Objects is a copy of what the Store holds, as an Objects: for a host that
// hands its state to code reading an Objects (plan and explain over a
// simulated cluster at a moment of a run). Objects are listed by name
// (pods by namespace, then name) and shared with the Store: read-only
// (see Store).
func (s *Store) Objects() *Objects {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &Objects{NodePools: s.nodePools, DaemonSets: s.daemonSets, PDBs: s.pdbs, InstanceTypes: s.instanceTypes,
		AssumeUnschedulable: s.untried == AssumeUnschedulable, VolumesComplete: s.vol.complete,
		BufferPods: slices.Clone(s.buffers), BufferPlacement: maps.Clone(s.bufferOn), DRA: s.draLocked()}
	for _, pvc := range s.vol.claims {
		c.PersistentVolumeClaims = append(c.PersistentVolumeClaims, pvc)
	}
	sort.Slice(c.PersistentVolumeClaims, func(i, j int) bool {
		a, b := c.PersistentVolumeClaims[i], c.PersistentVolumeClaims[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	for _, pv := range s.vol.volumes {
		c.PersistentVolumes = append(c.PersistentVolumes, pv)
	}
	sort.Slice(c.PersistentVolumes, func(i, j int) bool { return c.PersistentVolumes[i].Name < c.PersistentVolumes[j].Name })
	for _, sc := range s.vol.classes {
		c.StorageClasses = append(c.StorageClasses, sc)
	}
	sort.Slice(c.StorageClasses, func(i, j int) bool { return c.StorageClasses[i].Name < c.StorageClasses[j].Name })
	for _, nc := range s.claims {
		c.NodeClaims = append(c.NodeClaims, nc)
	}
	sort.Slice(c.NodeClaims, func(i, j int) bool { return c.NodeClaims[i].Name < c.NodeClaims[j].Name })
	for _, n := range s.nodes {
		c.Nodes = append(c.Nodes, n)
	}
	sort.Slice(c.Nodes, func(i, j int) bool { return c.Nodes[i].Name < c.Nodes[j].Name })
	refs := make([]podRef, 0, len(s.pods))
	for ref := range s.pods {
		refs = append(refs, ref)
	}
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].namespace != refs[j].namespace {
			return refs[i].namespace < refs[j].namespace
		}
		return refs[i].name < refs[j].name
	})
	for _, ref := range refs {
		c.Pods = append(c.Pods, s.pods[ref].pod)
	}
	return c
}
