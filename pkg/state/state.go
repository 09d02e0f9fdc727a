// Package state is the cluster as a decision sees it, built from the API
// objects a host holds — an informer cache in the controller, a `kubectl get
// -o yaml` dump for plan — and the one place that turns them into a
// provisioning snapshot and a disruption cluster. Nodes are joined to their
// NodeClaims by providerID; an in-flight NodeClaim without a Node yet is a
// node too, labelled from its requirements. It reads what it is given and
// writes into none of it.
//
// A Store keeps the cluster up to date one object at a time. Objects a
// host hands it are the Store's from then on: the host never writes into
// one again, and changes an object by handing over a new one. What the
// Store hands out (snapshots, disruption clusters, candidates, views, and
// everything they reach) is immutable: read-only for everyone, never
// changed by the Store, and safe to keep across later changes and
// rebuilds. See Store for the details.
package state

import (
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/overlay"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// Objects is what a host knows of a cluster, as lists of its objects. An
// Objects is not safe for concurrent use while a host changes it; its
// methods only read it. What they return
// shares its objects (each method builds a Store of them, see Store): a
// host that writes into one rather than replacing it changes what it took
// before.
type Objects struct {
	NodePools  []*v1.NodePool
	NodeClaims []*v1.NodeClaim
	Nodes      []*corev1.Node
	Pods       []*corev1.Pod
	DaemonSets []*appsv1.DaemonSet
	// PDBs with their live status.disruptionsAllowed.
	PDBs []*policyv1.PodDisruptionBudget
	// InstanceTypes the cloud offers each NodePool, by NodePool name.
	InstanceTypes map[string][]*cloudprovider.InstanceType
	// NodeOverlays read from manifests or a cluster, not yet applied to
	// InstanceTypes (plan.Run applies them).
	NodeOverlays []*v1alpha1.NodeOverlay
	// AppliedOverlays, when set, is what overlays InstanceTypes already
	// carry did (a simulated cluster's), for plans and explanations to
	// name them.
	AppliedOverlays *overlay.Result
	// AssumeUnschedulable treats an unbound pod that no scheduler has tried
	// yet (no PodScheduled condition) as unschedulable: manifests that never
	// met a cluster. A controller leaves it false and, as upstream, waits
	// for kube-scheduler to give up on a pod first.
	AssumeUnschedulable bool
	// PersistentVolumeClaims, PersistentVolumes and StorageClasses say
	// where the pods' volumes let them run (see provisioning.Volumes).
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
	// DRA are the device objects pods' claims are allocated from (read
	// when the Policy models DRA).
	DRA *provisioning.DRAObjects
	// VolumesComplete: those are all the cluster has, so a claim, volume
	// or class not among them holds its pods back, as upstream's; without
	// it (manifests that list none) one not among them asks nothing.
	VolumesComplete bool
	// BufferPods are the CapacityBuffers' virtual pods (pkg/buffer), and
	// BufferPlacement how many of them a provisioning pass placed on each
	// node (Store.SetBufferPods, Store.SetBufferPlacement).
	BufferPods      []*corev1.Pod
	BufferPlacement map[string]int
	// Drifted is the cloud provider's drift check of a claim ("" for
	// none), when the host has a cloud to ask (the simulator's EC2); nil
	// when it has not, and only NodePool drift is seen.
	Drifted func(*v1.NodeClaim) cloudprovider.DriftReason
}

// Node is a Node and its NodeClaim, joined by providerID. Node is nil while
// the claim has not registered; NodeClaim is nil for a node Joiner does
// not manage.
type Node struct {
	Node      *corev1.Node
	NodeClaim *v1.NodeClaim
	// Pods bound to the node, in the order the cluster lists them.
	Pods []*corev1.Pod
}

// Name is the Node's name, or the claim's before it registers.
func (n *Node) Name() string {
	if n.Node != nil {
		return n.Node.Name
	}
	return n.NodeClaim.Name
}

// Managed: the node has a NodeClaim.
func (n *Node) Managed() bool { return n.NodeClaim != nil }

// NodePool names the node's NodePool ("" for unmanaged nodes).
func (n *Node) NodePool() string {
	if n.NodeClaim != nil {
		return n.NodeClaim.Labels[v1.LabelNodePool]
	}
	return ""
}

// Initialized: a registered node whose claim (if any) says Initialized.
func (n *Node) Initialized() bool {
	if n.Node == nil {
		return false
	}
	if n.NodeClaim == nil {
		return true
	}
	return conditionTrue(n.NodeClaim.Status.Conditions, v1.ConditionInitialized) || n.Node.Labels[v1.LabelNodeInitialized] == "true"
}

// MarkedForDeletion: the Node or its claim is being deleted.
func (n *Node) MarkedForDeletion() bool {
	return (n.Node != nil && n.Node.DeletionTimestamp != nil) || (n.NodeClaim != nil && n.NodeClaim.DeletionTimestamp != nil)
}

// Labels are the Node's, or, before it registers, what its claim promises:
// the claim's labels, each requirement pinned to one value, and its name as
// hostname.
func (n *Node) Labels() map[string]string {
	if n.Node != nil {
		return n.Node.Labels
	}
	out := scheduling.FromNodeSelectorRequirements(n.NodeClaim.Spec.Requirements).Labels()
	for k, v := range n.NodeClaim.Labels {
		out[k] = v
	}
	out[v1.LabelHostname] = n.NodeClaim.Name
	return out
}

// ephemeralTaints come and go while a node starts.
var ephemeralTaints = []corev1.Taint{
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
	{Key: "node.cloudprovider.kubernetes.io/uninitialized", Effect: corev1.TaintEffectNoSchedule},
	v1.UnregisteredTaint,
}

// Taints that keep pods off the node. Until it is initialized, as upstream,
// its startup taints and the ephemeral taints of a starting node do not
// count: they are expected to go.
func (n *Node) Taints() []corev1.Taint {
	var taints []corev1.Taint
	switch {
	case n.Node != nil:
		taints = n.Node.Spec.Taints
	default:
		taints = n.NodeClaim.Spec.Taints
	}
	if n.Initialized() || n.NodeClaim == nil {
		return taints
	}
	var out []corev1.Taint
	for _, t := range taints {
		if !matchesAny(t, ephemeralTaints) && !matchesAny(t, n.NodeClaim.Spec.StartupTaints) {
			out = append(out, t)
		}
	}
	return out
}

func matchesAny(t corev1.Taint, in []corev1.Taint) bool {
	for i := range in {
		if t.MatchTaint(&in[i]) {
			return true
		}
	}
	return false
}

// Allocatable is the Node's, or its claim's before the Node reports one.
func (n *Node) Allocatable() corev1.ResourceList {
	if n.Node != nil && len(n.Node.Status.Allocatable) > 0 {
		return n.Node.Status.Allocatable
	}
	if n.NodeClaim != nil {
		return n.NodeClaim.Status.Allocatable
	}
	return nil
}

// Capacity is the Node's, or its claim's before the Node reports one.
func (n *Node) Capacity() corev1.ResourceList {
	if n.Node != nil && len(n.Node.Status.Capacity) > 0 {
		return n.Node.Status.Capacity
	}
	if n.NodeClaim != nil {
		return n.NodeClaim.Status.Capacity
	}
	return nil
}

// Ready: the Node reports Ready True.
func (n *Node) Ready() bool {
	if n.Node == nil {
		return false
	}
	for _, c := range n.Node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Disrupting: the node carries Joiner's disrupted taint or is going.
func (n *Node) Disrupting() bool {
	if n.MarkedForDeletion() {
		return true
	}
	return n.Node != nil && matchesAny(v1.DisruptedTaint, n.Node.Spec.Taints)
}

// schedulingWith is the node as provisioning sees it, its pods' requests
// summed to requested. A Store's snapshots share it while the node stays
// the same, so its Pods are clipped: a reader's append copies them.
func (n *Node) schedulingWith(requested corev1.ResourceList) *provisioning.Node {
	pods := make([]*corev1.Pod, 0, len(n.Pods))
	for _, p := range n.Pods {
		if !podutil.IsTerminal(p) {
			pods = append(pods, p)
		}
	}
	return &provisioning.Node{Name: n.Name(), NodePool: n.NodePool(), Labels: n.Labels(), Taints: n.Taints(),
		Allocatable: n.Allocatable(), Capacity: n.Capacity(), Pods: slices.Clip(pods), Requested: requested,
		InFlight: n.Managed() && !n.Initialized(), MarkedForDeletion: n.MarkedForDeletion()}
}

// Store is a Store holding the cluster's objects.
func (c *Objects) Store() *Store {
	s := NewStore(Untried(c.AssumeUnschedulable))
	s.SetNodePools(c.NodePools)
	s.SetInstanceTypes(c.InstanceTypes)
	s.SetDaemonSets(c.DaemonSets)
	s.SetPDBs(c.PDBs)
	for _, pvc := range c.PersistentVolumeClaims {
		s.SetPersistentVolumeClaim(pvc)
	}
	for _, pv := range c.PersistentVolumes {
		s.SetPersistentVolume(pv)
	}
	for _, sc := range c.StorageClasses {
		s.SetStorageClass(sc)
	}
	s.SetVolumesComplete(c.VolumesComplete)
	if c.DRA != nil {
		for _, o := range c.DRA.Claims {
			s.SetResourceClaim(o)
		}
		for _, o := range c.DRA.Templates {
			s.SetResourceClaimTemplate(o)
		}
		for _, o := range c.DRA.Classes {
			s.SetDeviceClass(o)
		}
		for _, o := range c.DRA.Slices {
			s.SetResourceSlice(o)
		}
	}
	for _, nc := range c.NodeClaims {
		s.SetNodeClaim(nc)
	}
	for _, n := range c.Nodes {
		s.SetNode(n)
	}
	for _, p := range c.Pods {
		s.SetPod(p)
	}
	s.SetBufferPods(c.BufferPods)
	s.SetBufferPlacement(c.BufferPlacement)
	return s
}

// StateNodes joins the Nodes to their NodeClaims by providerID (a claim
// without one yet, or whose Node has not registered, stands alone) and
// their pods by nodeName; sorted by name.
func (c *Objects) StateNodes() []*Node { return c.Store().Nodes() }

// PendingPods are the pods provisioning should find room for, as upstream
// picks them: unbound, active, not nominated to a node (kube-scheduler is
// preempting for them), neither a DaemonSet's nor a mirror, and reported
// unschedulable by kube-scheduler (or never tried, with
// AssumeUnschedulable).
func (c *Objects) PendingPods() []*corev1.Pod { return c.Store().PendingPods() }

// Provisionable: the pod is one provisioning should find room for (see
// Objects.PendingPods); untried says what a pod no scheduler has tried is.
func Provisionable(p *corev1.Pod, untried Untried) bool {
	if p.Spec.NodeName != "" || p.Status.NominatedNodeName != "" || !podutil.IsActive(p) || podutil.IsDaemonSetPod(p) || podutil.IsMirrorPod(p) {
		return false
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodScheduled {
			return cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable
		}
	}
	return untried == AssumeUnschedulable
}

// DaemonSetPods are the DaemonSets' pod templates as pods of their
// namespace, owned by them: what a new node would run.
func (c *Objects) DaemonSetPods() []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(c.DaemonSets))
	for _, ds := range c.DaemonSets {
		yes := true
		p := &corev1.Pod{ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(), Spec: *ds.Spec.Template.Spec.DeepCopy()}
		p.Name, p.Namespace = ds.Name, podutil.Namespace(ds.ObjectMeta)
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: &yes}}
		scheduling.DefaultRequestsFromLimits(&p.Spec)
		out = append(out, p)
	}
	return out
}

// ProvisioningSnapshot is what provisioning plans over: every node and
// in-flight claim, the DaemonSets, and the pending pods.
func (c *Objects) ProvisioningSnapshot() *provisioning.Snapshot {
	return c.Store().ProvisioningSnapshot()
}

// DisruptionSnapshot is what disruption decides over at now (see
// Store.DisruptionSnapshot).
func (c *Objects) DisruptionSnapshot(now time.Time, drifted func(*v1.NodeClaim) cloudprovider.DriftReason) *disruption.Snapshot {
	return c.Store().DisruptionSnapshot(now, drifted)
}

func conditionTrue(conds []v1.Condition, t string) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
