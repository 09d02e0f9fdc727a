package sim

import (
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

type nodeState int

const (
	nodeLaunching nodeState = iota
	nodeRegistered
	nodeReady
	nodeDraining
	nodeGone
)

// simNode is one instance: what the cloud and its kubelet know of it.
// Its Node and NodeClaim — taints, conditions, last pod event, deletion —
// are the Store's objects (see syncNode), and its pods are those the Store
// has bound to it (podsOn).
type simNode struct {
	name     string
	claim    *v1.NodeClaim // as the cloud launched it
	pool     *v1.NodePool
	it       *cloudprovider.InstanceType
	offering *cloudprovider.Offering
	// first is the offering it launched as and demoted the offerings it
	// ran as from a time on, when a reservation it was in ended (nil: it
	// never changed).
	first        *cloudprovider.Offering
	demoted      []priced
	state        nodeState
	launched     time.Time
	gone         time.Time
	drainStarted time.Time
	drainReason  string
	// failedAt: when its kubelet stopped reporting (zero: it did not).
	failedAt time.Time
	// appeared: when its Node registered with the API server;
	// kubeletReady: its kubelet reports it Ready (it may still be held
	// for its cohort; nil when it was launched alone).
	appeared     time.Time
	kubeletReady bool
	cohort       *launchCohort
}

// labels are the Node's: its NodeClaim's (the NodePool template, the
// requirements the claim was scheduled with, the instance type's) and its
// hostname.
func (n *simNode) labels() map[string]string {
	l := make(map[string]string, len(n.claim.Labels)+1)
	for k, v := range n.claim.Labels {
		l[k] = v
	}
	l[v1.LabelHostname] = n.name
	return l
}

// The simulated API server: every object the engine reads it gets through
// pkg/state, as a controller gets them through informers. A change is a
// new object with a new resourceVersion, handed to the store.

// nextRV is the API server's next resourceVersion.
func (e *simulation) nextRV() string {
	e.rv++
	return strconv.FormatUint(e.rv, 10)
}

// syncNode publishes what the node's lifecycle says of its NodeClaim and,
// once registered, its Node (or deletes both when it is gone).
func (e *simulation) syncNode(n *simNode) {
	if n.state == nodeGone {
		e.traceNode(n, nil)
		e.st.DeleteNode(n.name)
		e.st.DeleteNodeClaim(n.name)
		return
	}
	e.syncClaim(n)
	if n.state != nodeLaunching {
		e.updateNode(n, nil)
	}
}

// updateNode publishes n's Node after change changed a copy of it: the
// Store's (a new one when it registers, with its NodePool's taints), with
// what its lifecycle says — Ready once its kubelet is and it is let in,
// NodeStatusUnknown and the unreachable taints once its kubelet stopped,
// karpenter.sh/disrupted and the deletion once it drains. What was set on
// it since (taints) is kept: the Store's object is the record.
func (e *simulation) updateNode(n *simNode, change func(*corev1.Node)) {
	var node corev1.Node // a shallow copy: nothing below writes into shared parts
	if cur := e.st.Node(n.name); cur != nil {
		node = *cur
	} else {
		node = corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: n.labels(), CreationTimestamp: n.claim.CreationTimestamp},
			Spec:   corev1.NodeSpec{ProviderID: n.claim.Status.ProviderID, Taints: n.pool.Spec.Template.Spec.Taints},
			Status: corev1.NodeStatus{Allocatable: n.claim.Status.Allocatable, Capacity: n.claim.Status.Capacity}}
	}
	node.ResourceVersion = e.nextRV()
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse}
	if n.state == nodeReady || n.state == nodeDraining {
		ready.Status = corev1.ConditionTrue
	}
	if !n.failedAt.IsZero() {
		ready = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
			Message: "Kubelet stopped posting node status.", LastTransitionTime: metav1.NewTime(n.failedAt)}
		for _, t := range unreachableTaints {
			node.Spec.Taints, _ = scheduling.WithTaint(node.Spec.Taints, t, true)
		}
	}
	node.Status.Conditions = []corev1.NodeCondition{ready}
	if n.state == nodeDraining {
		node.Spec.Taints, _ = scheduling.WithTaint(node.Spec.Taints, v1.DisruptedTaint, true)
		node.DeletionTimestamp = e.deletedAt(n)
	}
	if change != nil {
		change(&node)
	}
	e.st.SetNode(&node)
	e.traceNode(n, &node)
}

// setTaint adds (on) or removes a taint of n's Node, as the controller
// does: nothing before it registers or after it is gone.
func (e *simulation) setTaint(n *simNode, t corev1.Taint, on bool) {
	e.retaint(n, func(taints []corev1.Taint) ([]corev1.Taint, bool) { return scheduling.WithTaint(taints, t, on) })
}

// retaint writes n's Node with the taints with returns, in one update,
// when they change — nothing before it registers or after it is gone.
func (e *simulation) retaint(n *simNode, with func([]corev1.Taint) ([]corev1.Taint, bool)) {
	cur := e.st.Node(n.name)
	if cur == nil || n.state == nodeGone {
		return
	}
	if _, changed := with(cur.Spec.Taints); changed {
		e.updateNode(n, func(node *corev1.Node) { node.Spec.Taints, _ = with(node.Spec.Taints) })
	}
}

// tainted reports whether n's Node carries t.
func (e *simulation) tainted(n *simNode, t corev1.Taint) bool {
	node := e.st.Node(n.name)
	return node != nil && scheduling.HasTaint(node.Spec.Taints, t)
}

// disrupting: n's Node is tainted karpenter.sh/disrupted (a command's
// candidate, or draining).
func (e *simulation) disrupting(n *simNode) bool { return e.tainted(n, v1.DisruptedTaint) }

// taints are n's Node's (none before it registers).
func (e *simulation) taints(n *simNode) []corev1.Taint {
	if node := e.st.Node(n.name); node != nil {
		return node.Spec.Taints
	}
	return nil
}

// syncClaim publishes n's NodeClaim after change changed a copy of it: the
// Store's (the cloud's, without conditions, when it launches), deleted
// once n drains.
func (e *simulation) syncClaim(n *simNode) { e.updateClaim(n, nil) }

func (e *simulation) updateClaim(n *simNode, change func(*v1.NodeClaim)) {
	if n.state == nodeGone {
		return
	}
	var nc v1.NodeClaim // a shallow copy: nothing below writes into shared parts
	if cur := e.st.NodeClaim(n.name); cur != nil {
		nc = *cur
	} else {
		nc = *n.claim
		nc.Status.Conditions = nil
	}
	nc.ResourceVersion = e.nextRV()
	if n.state == nodeDraining {
		nc.DeletionTimestamp = e.deletedAt(n)
	}
	if change != nil {
		change(&nc)
	}
	e.st.SetNodeClaim(&nc)
	e.traceClaim(n, &nc)
}

// podEvent is a pod bound to n or leaving it: its claim's
// status.lastPodEventTime, as the controller records it.
func (e *simulation) podEvent(n *simNode) {
	e.updateClaim(n, func(nc *v1.NodeClaim) {
		t, _ := disruption.PodEvent(nc.Status.LastPodEventTime.Time, e.clk.now)
		nc.Status.LastPodEventTime = metav1.NewTime(t)
	})
}

// initialized are the conditions of a claim whose node turned Ready at:
// a node no pod was bound to counts its consolidateAfter from then.
func initialized(at time.Time) []v1.Condition {
	t := metav1.NewTime(at)
	return []v1.Condition{
		{Type: v1.ConditionLaunched, Status: metav1.ConditionTrue, LastTransitionTime: t},
		{Type: v1.ConditionRegistered, Status: metav1.ConditionTrue, LastTransitionTime: t},
		{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue, LastTransitionTime: t},
	}
}

func (e *simulation) deletedAt(n *simNode) *metav1.Time {
	t := metav1.NewTime(n.drainStarted)
	return &t
}

// setPod publishes a pod after change changed a copy of it.
func (e *simulation) setPod(p *simPod, change func(*corev1.Pod)) {
	cp := *p.pod
	if change != nil {
		change(&cp)
	}
	cp.ResourceVersion = e.nextRV()
	p.pod = &cp
	e.st.SetPod(p.pod)
	e.pods[keyOf(p.pod)] = p
	e.tracePod(p)
}

// deletePod deletes a pod from the API server.
func (e *simulation) deletePod(p *simPod) {
	e.st.DeletePod(p.pod.Namespace, p.pod.Name)
	delete(e.pods, keyOf(p.pod))
}

// podKey is a pod's namespace and name.
type podKey struct{ namespace, name string }

func keyOf(p *corev1.Pod) podKey { return podKey{podutil.Namespace(p.ObjectMeta), p.Name} }

// nodeOf is the node the Store has p bound to (nil: pending, or deleted).
func (e *simulation) nodeOf(p *simPod) *simNode {
	sp := e.st.Pod(p.pod.Namespace, p.pod.Name)
	if sp == nil || sp.Spec.NodeName == "" {
		return nil
	}
	return e.byName[sp.Spec.NodeName]
}

// podsOn are the pods the Store has bound to n, in the order they were
// bound.
func (e *simulation) podsOn(n *simNode) []*simPod {
	given := e.st.PodsOn(n.name)
	out := make([]*simPod, 0, len(given))
	for _, p := range given {
		if sp := e.pods[keyOf(p)]; sp != nil {
			out = append(out, sp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].bound < out[j].bound })
	return out
}

// view is the node as the engine sees it now.
func (e *simulation) view(n *simNode) *provisioning.Node { return e.st.View(n.name) }

// simPod is one pod from creation to end: what its controller and kubelet
// know of it beside the API object.
type simPod struct {
	// pod is the object last written to the Store (setPod), never a copy
	// of its own: kept so a pod can be named once it is deleted.
	pod     *corev1.Pod
	owner   *workload
	created time.Time
	// queued is the pod's turn in kube-scheduler's queue among those
	// created at the same instant — the order they were made (an evicted
	// node's replacements: the drain's order).
	queued uint64
	// bound is its turn among the pods bound to a node: the order a
	// node's pods started (its node is the Store's: see nodeOf).
	bound    uint64
	running  time.Time
	finished bool
	reason   string // last unschedulable reason
	// tried: kube-scheduler has tried it (bound it, or found no room —
	// the verdict provisioning waits for).
	tried bool
	// nominated: the node this pod preempted pods on and waits for.
	nominated *simNode
	// spread: a bare pod's default spreading selector (from Services).
	spread k8slabels.Selector
	// launchNodes: ready nodes launched for it that it did not bind to;
	// loop, once there are maxLaunchRounds of them, why: provisioning
	// launches no more for it.
	launchNodes []string
	loop        string
}
