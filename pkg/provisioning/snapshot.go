// Package provisioning turns a batch of pending pods into the cheapest set of
// NodeClaims that lets every one of them run, with upstream Karpenter's
// semantics, as pure code over a cluster-state snapshot: no API client, no
// clock, no randomness. Every host — controller, plan, simulator — calls Solve.
package provisioning

import (
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// Snapshot is everything one scheduling decision looks at.
type Snapshot struct {
	NodePools []*v1.NodePool
	// InstanceTypes lists, per NodePool name, what the cloud offers it.
	InstanceTypes map[string][]*cloudprovider.InstanceType
	// Nodes are existing nodes and in-flight NodeClaims, filled first.
	Nodes []*Node
	// DaemonSets holds one pod template per DaemonSet; those that would
	// land on a new node count as its overhead.
	DaemonSets []*corev1.Pod
	// Pods are the pending pods to place.
	Pods []*corev1.Pod
	// Volumes are what the pods' PersistentVolumeClaims require of their
	// node, and which claims hold their pods back.
	Volumes Volumes
	// IgnorePreferences plans every pod as if it had no preferences
	// (WithoutPreferences), as upstream's operator option
	// PreferencePolicy=Ignore does; the default respects them, relaxing
	// them one at a time where they cannot be met.
	IgnorePreferences bool
	// NoClaimCaps plans Joiner's way without claim caps (see claimCaps):
	// for a consolidation's simulation, which may replace with one node.
	NoClaimCaps bool
	// Moving are the pods a consolidation simulation moves off its
	// candidates. As upstream since v1.14, none may land on a Settling
	// node; pending pods and the pods of deleting nodes may.
	Moving map[*corev1.Pod]bool
	// ReservationFallback plans without provisioning's strict use of
	// capacity reservations (see reservations): a pod may go to on-demand
	// or spot though a compatible reservation's count is used up in the
	// pass, as upstream's disruption simulations do.
	ReservationFallback bool
	// Policy: whose choices to make where Joiner and upstream differ
	// (DecisionsJoiner, the default, or DecisionsKarpenter), and the
	// minValues policy — MinValuesStrict (the default) leaves a pod a
	// NodePool's minValues cannot be met for to the next NodePool;
	// MinValuesBestEffort lowers the minimum to what the types that fit
	// allow and marks the claim.
	Policy Policy
	// DRA are the Dynamic Resource Allocation objects pods' device claims
	// are allocated from, read when Policy.ModelDRA (see dra).
	DRA *DRAObjects
}

// Node is an existing node, or an in-flight NodeClaim that will become one.
type Node struct {
	Name string
	// Version, when set, says the node's content: two Nodes with the same
	// Name and Version are alike in every field, so what a Planner, a
	// FilterCache (a kubescheduler.Binder's) or a disruption Memo derived
	// from one holds for the other (pkg/state sets it from the
	// resourceVersions of the Node, its NodeClaim and its pods). A Node
	// without one is never remembered past one call.
	Version     string
	NodePool    string // "" for nodes Joiner does not manage
	Labels      map[string]string
	Taints      []corev1.Taint
	Allocatable corev1.ResourceList
	// Capacity counts against the NodePool's limits.
	Capacity corev1.ResourceList
	// Pods bound to the node: their requests are used, their labels count
	// for topology, their host ports are taken.
	Pods []*corev1.Pod
	// Requested, when set, is the sum of the Pods' requests, so callers that
	// solve many times over the same nodes need not recompute it.
	Requested corev1.ResourceList
	// InFlight marks a NodeClaim that has not registered yet: it takes pods,
	// and Joiner's own unregistered taint does not keep them off.
	InFlight bool
	// MarkedForDeletion nodes take no new pods but still count for limits.
	MarkedForDeletion bool
	// Settling nodes are inside their NodePool's consolidateAfter since
	// their last pod event: they take no pod of Snapshot.Moving.
	Settling bool
}

// nodeMemo is what a Planner or FilterCache derives from a node alone: its
// resource vectors and whether a pod on it has pod anti-affinity. One memo
// per node spares one cache lookup per fact.
type nodeMemo struct {
	alloc, used vec
	anti        int8 // 0: not looked at yet; 1: no pod with anti-affinity; 2: some
}

// podMemo is what a Planner or FilterCache derives from a pod alone: its
// requests as a vector and its class key (see classKey).
type podMemo struct {
	vec      vec
	key      uint64
	keyKnown bool
}

// Results is the decision: new NodeClaims, pods for existing nodes, and
// the pods that could not be placed, with reasons.
type Results struct {
	NewNodeClaims []*NodeClaimPlan
	ExistingNodes []*ExistingNodePlan
	Unschedulable []*PodError
}

// NodeClaimPlan is one NodeClaim to create.
type NodeClaimPlan struct {
	NodePool     *v1.NodePool
	Requirements scheduling.Requirements
	// InstanceTypes are the types that can hold the pods, cheapest first,
	// so the cloud can fall back.
	InstanceTypes []*cloudprovider.InstanceType
	Pods          []*corev1.Pod
	// Requests of the pods plus the DaemonSet overhead.
	Requests corev1.ResourceList
	// Hostname is the placeholder the plan was scheduled under (for
	// hostname topology); the real node name comes at launch.
	Hostname string
	// MinValuesRelaxed: MinValuesPolicy BestEffort lowered a minValues of
	// Requirements; the NodeClaim is annotated so, as upstream's.
	MinValuesRelaxed bool
	// DRADrivers are the drivers whose devices the pods' claims were
	// allocated from (sorted; none without DRA): the NodeClaim waits for
	// them to publish before it is Initialized, as upstream's.
	DRADrivers []string
}

// NodeClaimRequirements are the plan's requirements with the instance
// types narrowed to the ones that fit, as the NodeClaim carries them.
func (p *NodeClaimPlan) NodeClaimRequirements() scheduling.Requirements {
	names := make([]string, len(p.InstanceTypes))
	for i, it := range p.InstanceTypes {
		names[i] = it.Name
	}
	out := p.Requirements.Copy()
	out.Add(scheduling.NewRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, names...))
	return out
}

// Price is the hourly price of the cheapest available offering the plan
// allows.
func (p *NodeClaimPlan) Price() float64 {
	if len(p.InstanceTypes) == 0 {
		return 0
	}
	return p.InstanceTypes[0].CheapestPrice(p.Requirements)
}

// ExistingNodePlan lists the pods that go to an existing node or in-flight claim.
type ExistingNodePlan struct {
	Node *Node
	Pods []*corev1.Pod
}

// PodError says why a pod could not be placed, per NodePool.
type PodError struct {
	Pod *corev1.Pod
	// ByNodePool maps a NodePool name to the reason it cannot take the pod,
	// CodeByNodePool to that reason's code (ReasonOther left out).
	ByNodePool     map[string]string
	CodeByNodePool map[string]ReasonCode
	// Reason is a one-line summary over all NodePools.
	Reason string
}

func (e *PodError) Error() string { return e.Reason }

// Deferred says the pod waits for the next pass, not for a change of the
// cluster: a NodePool could launch it into a capacity reservation this
// pass used up (ReasonReservedCapacity). Upstream tells no one of it.
func (e *PodError) Deferred() bool {
	for _, c := range e.CodeByNodePool {
		if c == ReasonReservedCapacity {
			return true
		}
	}
	return false
}
