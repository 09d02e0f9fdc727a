package disruption

import (
	"fmt"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/kubescheduler"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
	"github.com/joiner-autoscaler/joiner/pkg/termination"
)

// placed checks a consolidation command the way the cluster will carry it
// out, in Joiner's decisions: the moved pods are bound by kube-scheduler
// (its filters and its scores: least-allocated first, spread), not by the
// packer whose simulation found the command, so a pod the simulation put
// on the replacement may land on another node and leave the next one
// without room. A command under which kube-scheduler's model leaves a
// moved pod pending is refused — upstream takes it and then launches a
// NodeClaim for that pod, which a later round consolidates again: the
// churn of a constant workload. The replacement is tried in each zone its
// cheapest type is offered in, cheapest first, and pinned to the first
// that holds every pod.
//
// It returns why not ("" when the command stands); cmd's replacement may
// be narrowed to one zone.
func (p *pass) placed(cands []*Candidate, cmd *Command) string {
	if p.c.Policy.Karpenter() {
		return ""
	}
	removed := map[*Candidate]bool{}
	var pods []*corev1.Pod
	moved := func(cands []*Candidate, copyOf func(*corev1.Pod) *corev1.Pod) {
		for _, cand := range cands {
			removed[cand] = true
			for _, pod := range p.podsOf(cand) {
				cp := copyOf(pod)
				cp.Spec.NodeName = ""
				pods = append(pods, cp)
			}
		}
	}
	moved(cands, func(pod *corev1.Pod) *corev1.Pod { cp := *pod; return &cp })
	if len(pods) == 0 {
		return ""
	}
	// The pass's batched commands go at the same time: kube-scheduler
	// binds their pods too, with their replacements there.
	for _, other := range p.batch {
		moved(other.Candidates, func(pod *corev1.Pod) *corev1.Pod { cp := *pod; return &cp })
	}
	var nodes []*provisioning.Node
	for _, cand := range p.c.Nodes {
		switch {
		case removed[cand]:
		case cand.Disrupting && !cand.Node.MarkedForDeletion:
			n := *cand.Node
			n.MarkedForDeletion = true
			nodes = append(nodes, &n)
		default:
			nodes = append(nodes, cand.Node)
		}
	}
	nodes = append(nodes, p.batchNodes(false)...)
	nodes = append(nodes, p.c.Unmanaged...)
	if len(cmd.Replacements) == 0 {
		if n := p.unplaced(nodes, pods); n > 0 {
			return fmt.Sprintf("kube-scheduler would leave %d of the moved pods pending (it spreads them by least-allocated; the simulation packed them)", n)
		}
		return ""
	}
	r := cmd.Replacements[0]
	it := r.InstanceTypes[0]
	offerings := append(cloudprovider.Offerings(nil), it.Offerings...)
	sort.SliceStable(offerings, func(i, j int) bool {
		if offerings[i].Price != offerings[j].Price {
			return offerings[i].Price < offerings[j].Price
		}
		return offerings[i].Zone < offerings[j].Zone
	})
	tried := map[string]bool{}
	least := len(pods)
	for _, o := range offerings {
		if !o.Available || tried[o.Zone] || !r.Requirements.Get(v1.LabelZone).Has(o.Zone) || !r.Requirements.Get(v1.LabelCapacityType).Has(o.CapacityType) {
			continue
		}
		tried[o.Zone] = true
		n := p.unplaced(append(nodes[:len(nodes):len(nodes)], replacementNode(r, it, o)), pods)
		if n == 0 {
			if r.Requirements.Get(v1.LabelZone).Len() > 1 {
				pinned := *r
				pinned.Requirements = r.Requirements.Copy()
				pinned.Requirements[v1.LabelZone] = scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, o.Zone)
				cmd.Replacements = []*provisioning.NodeClaimPlan{&pinned}
			}
			return ""
		}
		least = min(least, n)
	}
	return fmt.Sprintf("kube-scheduler would leave %d of the moved pods pending beside a %s replacement in any zone (it spreads them by least-allocated; the simulation packed them)", least, it.Name)
}

// unplaced is how many of the pods kube-scheduler's model leaves unbound
// on the nodes, in the worse of two orders: the drain's (larger first, see
// termination.EvictionOrder: each evicted pod's replacement reaches
// kube-scheduler about when the pod goes), and smallest first — the order
// least-allocated scoring does worst in (the small pods spread over the
// emptiest nodes, the replacement first, before the large ones come),
// for a drain a PodDisruptionBudget or a slow controller reorders.
func (p *pass) unplaced(nodes []*provisioning.Node, pods []*corev1.Pod) int {
	opts := kubescheduler.BindOptions{SpreadSelector: ownerSpread, Volumes: func() provisioning.Volumes { return p.c.Volumes }}
	if p.c.Memo != nil {
		opts.Requests = p.c.Memo.requests
	}
	binder := p.binder
	if p.c.Policy.ModelDRA {
		// The moved pods' devices are free to move: a Binder of their own.
		moving := make(map[*corev1.Pod]bool, len(pods))
		for _, pod := range pods {
			moving[pod] = true
		}
		opts.DRA, opts.DeviceTypes, opts.Moving = func() *provisioning.DRAObjects { return p.c.DRA }, p.c.InstanceTypes, moving
		binder = kubescheduler.NewBinder(opts)
	} else if binder == nil {
		// Its options are the pass's, the same in every check: the
		// nodes' facts (requests, spread counts) are made once, and each
		// Bind adds its own pods on top of them.
		binder = kubescheduler.NewBinder(opts)
		p.binder = binder
	}
	bind := func(pods []*corev1.Pod) int {
		res := binder.Bind(nodes, pods)
		return len(res.Unschedulable) + len(res.Preemptions)
	}
	n := bind(termination.EvictionOrder(pods))
	if n > 0 || len(pods) < 2 {
		return n
	}
	cpu := make(map[*corev1.Pod]int64, len(pods))
	for _, pod := range pods {
		r := scheduling.PodRequests(pod)
		cpu[pod] = r.Cpu().MilliValue()
	}
	smallFirst := slices.Clone(pods)
	sort.SliceStable(smallFirst, func(i, j int) bool { return cpu[smallFirst[i]] < cpu[smallFirst[j]] })
	return bind(smallFirst)
}

// ownerSpread is the selector kube-scheduler's default soft spread
// (hostname maxSkew 3, zone 5) takes for a pod a ReplicaSet, StatefulSet or
// ReplicationController owns: its owner's selector, which the pods of one
// template match as they match their own labels but for those that differ
// from pod to pod (notOwnerSelected). The Services that select a pod are
// not in the disruption's view; a pod that only a Service selects is bound
// without default spread.
func ownerSpread(pod *corev1.Pod) k8slabels.Selector {
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil || len(pod.Labels) == 0 {
		return nil
	}
	switch owner.Kind {
	case "ReplicaSet", "StatefulSet", "ReplicationController":
		set := k8slabels.Set{}
		for k, v := range pod.Labels {
			if !notOwnerSelected[k] {
				set[k] = v
			}
		}
		return k8slabels.SelectorFromSet(set)
	}
	return nil
}

// notOwnerSelected are the labels a bound pod of a ReplicaSet or
// StatefulSet may carry that its owner's selector never has: the zone
// and region the PodTopologyLabels admission plugin (beta and on by
// default since Kubernetes 1.35) copies from the node at binding, and a
// StatefulSet's per-pod name, index and revision. Taken from a pod's own
// labels, the zone made its selector match only the pods of the zone its
// node was in: kube-scheduler's default spread then looked satisfied on
// every node of the other zones, placed's model sent the moved pods there,
// and a replacement it judged to hold the rest left them pending —
// kube-scheduler put the unconstrained pods on the replacement, and the
// zone-spread ones found no room (at 1,000 pods three replacements in a
// row, each followed by a NodeClaim for the pods left pending).
var notOwnerSelected = map[string]bool{
	corev1.LabelTopologyZone:              true,
	corev1.LabelTopologyRegion:            true,
	appsv1.StatefulSetPodNameLabel:        true,
	appsv1.PodIndexLabel:                  true,
	appsv1.ControllerRevisionHashLabelKey: true,
}

// replacementNode is the node a replacement plan would be as kube-scheduler
// sees it once registered: the type's labels and the plan's, in the
// offering's zone and capacity type, its NodePool's taints, and what the
// DaemonSets take of it already taken.
func replacementNode(r *provisioning.NodeClaimPlan, it *cloudprovider.InstanceType, o *cloudprovider.Offering) *provisioning.Node {
	labels := map[string]string{}
	for _, reqs := range []scheduling.Requirements{it.Requirements, r.Requirements} {
		for k, req := range reqs {
			if vs := req.Values(); len(vs) == 1 {
				labels[k] = vs[0]
			}
		}
	}
	name := "replacement-" + it.Name + "-" + o.Zone
	labels[v1.LabelInstanceType] = it.Name
	labels[v1.LabelZone] = o.Zone
	labels[v1.LabelCapacityType] = o.CapacityType
	labels[v1.LabelHostname] = name
	labels[v1.LabelNodePool] = r.NodePool.Name
	var podReqs []corev1.ResourceList
	for _, pod := range r.Pods {
		podReqs = append(podReqs, scheduling.PodRequests(pod))
	}
	daemons := scheduling.Subtract(r.Requests, scheduling.Add(podReqs...))
	taints := append([]corev1.Taint(nil), r.NodePool.Spec.Template.Spec.Taints...)
	alloc := it.Allocatable()
	for k, q := range daemons {
		if a, ok := alloc[k]; ok && q.Sign() > 0 {
			a.Sub(q)
			alloc[k] = a
		}
	}
	return &provisioning.Node{Name: name, NodePool: r.NodePool.Name, Labels: labels, Taints: taints, Allocatable: alloc, Capacity: it.Capacity}
}
