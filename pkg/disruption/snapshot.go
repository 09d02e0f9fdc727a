package disruption

import (
	"encoding/json"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/kubescheduler"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// Snapshot is the cluster disruption decides over, at one moment: Now is
// the injected clock.
type Snapshot struct {
	Now           time.Time
	NodePools     []*v1.NodePool
	InstanceTypes map[string][]*cloudprovider.InstanceType
	// Nodes are the nodes Joiner manages, each with its NodeClaim.
	Nodes []*Candidate
	// Unmanaged nodes take rescheduled pods but are never disrupted.
	Unmanaged  []*provisioning.Node
	PDBs       []*policyv1.PodDisruptionBudget
	DaemonSets []*corev1.Pod
	// Pending are the pods waiting for capacity. As upstream, every
	// method's scheduling simulation places them too, with the pods of the
	// nodes already being disrupted, so no command takes away room they
	// need; that they may not fit is not held against a command.
	Pending []*corev1.Pod
	// BufferPods counts, by node name, the CapacityBuffers' virtual pods
	// the last provisioning pass placed on the node (they are in Pending
	// too): as upstream, emptiness leaves such a node alone — its free room
	// is the buffer.
	BufferPods map[string]int
	// Volumes are what the pods' claims require of their nodes (see
	// provisioning.Volumes): a pod whose volume is bound in one zone moves
	// only within it.
	Volumes provisioning.Volumes
	// DRA are the device objects pods' claims are allocated from, read
	// when the Policy models DRA (see provisioning.DRAObjects).
	DRA *provisioning.DRAObjects
	// Planner, when set, is a provisioning planner prepared for these
	// NodePools, instance types and DaemonSets; simulations reuse it.
	Planner *provisioning.Planner
	// Memo, when set, keeps what passes learn about nodes that do not
	// change between them (callers reuse the same *provisioning.Node while
	// a node and its pods stay the same).
	Memo *Memo
	// Policy is the scheduling simulations' (see provisioning.Policy).
	Policy provisioning.Policy
}

// A Memo is safe for concurrent use.
//
// Memo remembers, per node, which of its pods asks not to be disrupted,
// whether its labels satisfy its NodePool's requirements, and what
// evicting its pods costs. It keys what it keeps by the node's Name and
// Version (and the requirements' own key): a node without a Version is
// never remembered. It also remembers the answers of scheduling
// simulations, keyed by everything they depend on (see simKey).
type Memo struct {
	mu           sync.Mutex // passes may share a Memo
	doNotDisrupt map[memoKey]protection
	satisfied    map[satisfiedKey]bool
	evictions    map[memoKey]podCosts
	simulations  map[simScope]map[string]simAnswer
	scopes       []simScope // simulations' scopes, oldest first
	// requests are the pods' requests as kube-scheduler's model scores
	// them, for every pass's check (see unplaced).
	requests *kubescheduler.RequestCache
}

type memoKey struct{ name, version string }

// keyOf is the node's content key; false when the node has no Version.
func keyOf(n *provisioning.Node) (memoKey, bool) { return memoKey{n.Name, n.Version}, n.Version != "" }

type satisfiedKey struct {
	node memoKey
	reqs string // the requirements' CacheKey
}

// protection is what a node's do-not-disrupt pods ask: why (the pod that
// protects longest; "" for none), and until when (permanent: for good).
type protection struct {
	why       BlockReason
	until     time.Time
	permanent bool
}

func (p protection) at(now time.Time) BlockReason {
	if !p.why.None() && (p.permanent || now.Before(p.until)) {
		return p.why
	}
	return BlockReason{}
}

// NewMemo returns an empty Memo.
func NewMemo() *Memo {
	return &Memo{doNotDisrupt: map[memoKey]protection{}, satisfied: map[satisfiedKey]bool{}, evictions: map[memoKey]podCosts{},
		simulations: map[simScope]map[string]simAnswer{}, requests: kubescheduler.NewRequestCache()}
}

// remembered returns what compute says of node n, kept in m under n's key
// (a nil Memo, or a node without a Version, remembers nothing). m starts
// over once it holds more than limit answers.
func remembered[K comparable, V any](mm *Memo, m *map[K]V, k K, keyed bool, limit int, compute func() V) V {
	if mm == nil || !keyed {
		return compute()
	}
	mm.mu.Lock()
	if v, ok := (*m)[k]; ok {
		mm.mu.Unlock()
		return v
	}
	mm.mu.Unlock()
	v := compute()
	mm.mu.Lock()
	if len(*m) > limit {
		*m = map[K]V{}
	}
	(*m)[k] = v
	mm.mu.Unlock()
	return v
}

// podCosts are the eviction costs of the pods that must move if the node
// goes: their sum, and the sum of the positive ones.
func (m *Memo) podCosts(n *provisioning.Node, pods []*corev1.Pod) podCosts {
	k, keyed := keyOf(n)
	var evictions *map[memoKey]podCosts
	if m != nil {
		evictions = &m.evictions
	}
	return remembered(m, evictions, k, keyed, 1<<16, func() podCosts { return evictionCosts(pods) })
}

// satisfies reports whether the node's labels meet the requirements
// (reqsKey is their CacheKey).
func (m *Memo) satisfies(n *provisioning.Node, reqs scheduling.Requirements, reqsKey string) bool {
	k, keyed := keyOf(n)
	var satisfied *map[satisfiedKey]bool
	if m != nil {
		satisfied = &m.satisfied
	}
	return remembered(m, satisfied, satisfiedKey{k, reqsKey}, keyed, 1<<16, func() bool { return reqs.MatchesLabels(n.Labels) })
}

// Candidate is a managed node as disruption sees it.
type Candidate struct {
	Node         *provisioning.Node
	NodeClaim    *v1.NodeClaim
	NodePool     string
	InstanceType string
	Zone         string
	CapacityType string
	// Price is what the node costs per hour now.
	Price float64
	// Initialized is false while the node is still starting.
	Initialized bool
	// Disrupting is set on nodes already being disrupted or deleted.
	Disrupting bool
	// NotReady nodes count against budgets like disrupting ones.
	NotReady bool
	// Registered: a Node has joined the claim; Conditions are its status
	// conditions, which node repair reads.
	Registered bool
	Conditions []corev1.NodeCondition
	// NodeClassDrift is the cloud provider's drift reason ("" for none).
	NodeClassDrift cloudprovider.DriftReason
	// Reschedulable, when set, lists the pods that must move if the node
	// goes (no DaemonSet or finished pods); otherwise it is derived.
	Reschedulable []*corev1.Pod
}

// TemplateHash is a stable hash of what a NodePool's nodes are built from:
// the template's labels, annotations, taints, startup taints, node class,
// expiry and grace period. Requirements are compared separately (a change
// there drifts only the nodes it rules out), and disruption settings do
// not drift nodes at all.
func TemplateHash(np *v1.NodePool) string {
	t := np.Spec.Template.DeepCopy()
	t.Spec.Requirements = nil
	b, _ := json.Marshal(t)
	h := fnv.New64a()
	_, _ = h.Write(b)
	return strconv.FormatUint(h.Sum64(), 10)
}

// reschedulable are the pods that must find a new place when the node goes.
func reschedulable(n *provisioning.Node) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range n.Pods {
		if podutil.IsReschedulable(p) {
			out = append(out, p)
		}
	}
	return out
}

// blocker says why a node may not be voluntarily disrupted (the zero
// BlockReason when it may). As
// upstream, every pod on the node that is still active counts, DaemonSet
// pods too: an active do-not-disrupt annotation blocks (a mirror pod's as
// well), and so does a PDB that allows no eviction of a pod that eviction
// would take (not a mirror pod, not one that tolerates the disrupted taint
// and stays). Terminal and terminating pods never block.
func (c *Snapshot) blocker(cand *Candidate) BlockReason {
	if cand.Node.Labels == nil {
		return BlockReason{}
	}
	if v, ok := nodeAnnotation(cand, v1.AnnotationDoNotDisrupt); ok && v == "true" {
		return BlockReason{Code: BlockNodeDoNotDisrupt}
	}
	if why := c.podAsksNotToBeDisrupted(cand.Node).at(c.Now); !why.None() {
		return why
	}
	if len(c.PDBs) == 0 {
		return BlockReason{}
	}
	for _, p := range cand.Node.Pods {
		if !podutil.IsActive(p) || podutil.IsMirrorPod(p) || podutil.ToleratesDisrupted(p) {
			continue
		}
		if pdb := c.blockingPDB(p); pdb != nil {
			return BlockReason{Code: BlockPDB, PDB: pdb.Namespace + "/" + pdb.Name, Pod: p.Namespace + "/" + p.Name}
		}
	}
	return BlockReason{}
}

// podAsksNotToBeDisrupted is what the node's pods annotated do-not-disrupt
// ask ("true" for good, a duration from the pod's start). It depends on the
// node's pods only, so the Memo keeps it per node; the time is applied by
// the caller.
func (c *Snapshot) podAsksNotToBeDisrupted(n *provisioning.Node) protection {
	k, keyed := keyOf(n)
	var memo *map[memoKey]protection
	if c.Memo != nil {
		memo = &c.Memo.doNotDisrupt
	}
	return remembered(c.Memo, memo, k, keyed, 4*len(c.Nodes)+1024, func() protection { return doNotDisruptOf(n) })
}

func doNotDisruptOf(n *provisioning.Node) protection {
	var pr protection
	for _, p := range n.Pods {
		if !podutil.IsActive(p) {
			continue
		}
		until, permanent, protected := v1.DoNotDisruptUntil(p)
		if !protected || pr.permanent || (!permanent && !pr.why.None() && !until.After(pr.until)) {
			continue
		}
		pr = protection{why: BlockReason{Code: BlockPodDoNotDisrupt, Pod: p.Namespace + "/" + p.Name}, until: until, permanent: permanent}
		if !permanent {
			pr.why.Value, pr.why.Until = p.Annotations[v1.AnnotationDoNotDisrupt], until.UTC().Format(time.RFC3339)
		}
	}
	return pr
}

func nodeAnnotation(cand *Candidate, key string) (string, bool) {
	if cand.NodeClaim != nil {
		if v, ok := cand.NodeClaim.Annotations[key]; ok {
			return v, true
		}
	}
	return "", false
}

// blockingPDB returns a PDB that selects the pod and currently allows no
// disruption.
func (c *Snapshot) blockingPDB(p *corev1.Pod) *policyv1.PodDisruptionBudget {
	for _, pdb := range podutil.MatchingPDBs(p, c.PDBs) {
		if pdb.Status.DisruptionsAllowed <= 0 {
			return pdb
		}
	}
	return nil
}

// requirementsOf are the pool's requirements, for requirement drift.
func requirementsOf(np *v1.NodePool) scheduling.Requirements {
	return scheduling.FromNodePool(np)
}
