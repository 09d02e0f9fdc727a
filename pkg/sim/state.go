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
)

type nodeState int

const (
	nodeLaunching nodeState = iota
	nodeRegistered
	nodeReady
	nodeDraining
	nodeGone
)

// simNode is one instance and, once registered, its Node.
type simNode struct {
	name     string
	claim    *v1.NodeClaim // as the cloud launched it
	pool     *v1.NodePool
	it       *cloudprovider.InstanceType
	offering *cloudprovider.Offering
	// first is the offering it launched as and demoted the offerings it
	// ran as from a time on, when a reservation it was in ended (nil: it
	// never changed).
	first    *cloudprovider.Offering
	demoted  []priced
	state    nodeState
	launched time.Time
	gone     time.Time
	taints   []corev1.Taint
	// disrupting: tainted karpenter.sh/disrupted and draining, or about to.
	disrupting bool
	// leaving: consolidation expects to take it in a later round; it
	// carries disruption.ConsolidatingTaint.
	leaving      bool
	drainStarted time.Time
	drainReason  string
	// lastPodEvent is its claim's status.lastPodEventTime: zero until a
	// pod is bound to it, then recorded as the controller does.
	lastPodEvent time.Time
	// conditions are its claim's once it is Ready: Initialized then.
	conditions []v1.Condition
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

// syncNode publishes the node's NodeClaim and, once registered, its Node
// (or deletes both when it is gone).
func (e *simulation) syncNode(n *simNode) {
	if n.state == nodeGone {
		e.traceNode(n, nil)
		e.st.DeleteNode(n.name)
		e.st.DeleteNodeClaim(n.name)
		return
	}
	e.syncClaim(n)
	if n.state == nodeLaunching {
		return
	}
	taints := append([]corev1.Taint(nil), n.taints...)
	if n.disrupting {
		taints = append(taints, v1.DisruptedTaint)
	}
	if n.leaving {
		taints = append(taints, disruption.ConsolidatingTaint)
	}
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse}
	if n.state == nodeReady || n.state == nodeDraining {
		ready.Status = corev1.ConditionTrue
	}
	if !n.failedAt.IsZero() {
		ready = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
			Message: "Kubelet stopped posting node status.", LastTransitionTime: metav1.NewTime(n.failedAt)}
		taints = append(taints, unreachableTaints...)
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: n.labels(), ResourceVersion: e.nextRV(), CreationTimestamp: n.claim.CreationTimestamp},
		Spec:       corev1.NodeSpec{ProviderID: n.claim.Status.ProviderID, Taints: taints},
		Status: corev1.NodeStatus{Allocatable: n.claim.Status.Allocatable, Capacity: n.claim.Status.Capacity,
			Conditions: []corev1.NodeCondition{ready}},
	}
	if n.state == nodeDraining {
		node.DeletionTimestamp = e.deletedAt(n)
	}
	e.st.SetNode(node)
	e.traceNode(n, node)
}

// syncClaim publishes the node's NodeClaim: the cloud's, with the
// lifecycle conditions, the last pod event and its deletion.
func (e *simulation) syncClaim(n *simNode) {
	if n.state == nodeGone {
		return
	}
	nc := *n.claim // a shallow copy: nothing below writes into shared parts
	nc.ResourceVersion = e.nextRV()
	nc.Status.LastPodEventTime = metav1.NewTime(n.lastPodEvent)
	nc.Status.Conditions = nil
	if n.state == nodeReady || n.state == nodeDraining {
		nc.Status.Conditions = n.conditions
	}
	if n.state == nodeDraining {
		nc.DeletionTimestamp = e.deletedAt(n)
	}
	e.st.SetNodeClaim(&nc)
	e.traceClaim(n, &nc)
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

// simPod is one pod from creation to end.
type simPod struct {
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
