package sim

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
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
	name      string
	claim     *v1.NodeClaim
	pool      *v1.NodePool
	it        *cloudprovider.InstanceType
	offering  *cloudprovider.Offering
	state     nodeState
	launched  time.Time
	gone      time.Time
	taints    []corev1.Taint
	pods      []*simPod
	requested corev1.ResourceList
	// disrupting: tainted karpenter.sh/disrupted and draining, or about to.
	disrupting   bool
	drainStarted time.Time
	drainReason  string
	lastPodEvent time.Time
	// version counts changes; asNode is cached for one version, so the
	// scheduler sees the same *Node (and its caches hit) until it changes.
	version    int
	cachedAt   int
	cachedNode *provisioning.Node
	movable    []*corev1.Pod // pods that move if the node goes, for cachedAt
	// plannedFor: the pods provisioning launched the node for, until its
	// first bind pass (see checkPlannedFor).
	plannedFor []*simPod
}

// reschedulable lists the node's pods that would move if it went.
func (n *simNode) reschedulable() []*corev1.Pod {
	n.asNode()
	if n.movable == nil {
		n.movable = []*corev1.Pod{}
		for _, p := range n.pods {
			if !podutil.IsDaemonSetPod(p.pod) {
				n.movable = append(n.movable, p.pod)
			}
		}
	}
	return n.movable
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

// asNode is the node as the scheduler sees it. Callers must not modify it.
func (n *simNode) asNode() *provisioning.Node {
	if n.cachedNode != nil && n.cachedAt == n.version {
		return n.cachedNode
	}
	n.cachedNode, n.cachedAt = n.buildNode(), n.version
	n.movable = nil
	return n.cachedNode
}

func (n *simNode) buildNode() *provisioning.Node {
	pods := make([]*corev1.Pod, 0, len(n.pods))
	for _, p := range n.pods {
		pods = append(pods, p.pod)
	}
	taints := append([]corev1.Taint(nil), n.taints...)
	if n.disrupting {
		taints = append(taints, v1.DisruptedTaint)
	}
	return &provisioning.Node{
		Name: n.name, NodePool: n.pool.Name, Labels: n.labels(), Taints: taints,
		Allocatable: n.it.Allocatable(), Capacity: n.it.Capacity, Pods: pods, Requested: n.requested,
		InFlight:          n.state == nodeLaunching || n.state == nodeRegistered,
		MarkedForDeletion: n.state == nodeDraining || n.state == nodeGone,
	}
}

// simPod is one pod from creation to end.
type simPod struct {
	pod      *corev1.Pod
	owner    *workload
	created  time.Time
	node     *simNode
	running  time.Time
	finished bool
	reason   string // last unschedulable reason
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
