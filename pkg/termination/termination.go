// Package termination decides, step by step, how a node is drained and
// removed: evict pods through the Eviction API in order (non-critical
// before critical, DaemonSet pods after the others of their kind, larger
// pods first within each), honouring PodDisruptionBudgets and each
// pod's grace period, and after the NodeClaim's terminationGracePeriod
// delete whatever remains. Pure code with an injected time; the host
// performs the evictions, deletions and the final instance and Node delete.
package termination

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// Drain is a node being terminated.
type Drain struct {
	// Started is when deletion of the NodeClaim began.
	Started time.Time
	// GracePeriod is the NodeClaim's terminationGracePeriod; nil waits for
	// evictions indefinitely.
	GracePeriod *time.Duration
	// Pods still on the node (terminating ones included).
	Pods []*corev1.Pod
	PDBs []*policyv1.PodDisruptionBudget
}

// Step is what to do now.
type Step struct {
	// Evict through the Eviction API (PDBs are honoured by it, and here).
	Evict []*corev1.Pod
	// Delete outright: the terminationGracePeriod leaves no more time.
	Delete []*corev1.Pod
	// Waiting lists pods that may not be evicted yet, with the reason.
	Waiting map[*corev1.Pod]string
	// Done: the node is empty (of pods that matter); delete the instance,
	// then the Node, then drop the finalizer.
	Done bool
}

// group orders eviction, lower first, as upstream: non-critical pods, then
// non-critical DaemonSet pods, then critical pods, then critical DaemonSet
// pods.
func group(p *corev1.Pod) int {
	g := 0
	if podutil.IsDaemonSetPod(p) {
		g++
	}
	if isCritical(p) {
		g += 2
	}
	return g
}

// sortForEviction puts pods in the order they are evicted: by group, and
// within a group the larger first (cpu, then memory), then by namespace and
// name. Each evicted pod's replacement reaches kube-scheduler about when
// the pod goes, so this is also the order kube-scheduler places them in:
// largest first, the order least-allocated scoring packs best in — the
// large pods take the emptiest nodes (a replacement) before the small
// ones spread there. Upstream evicts a group in no set order; disruption's
// placement check binds the moved pods in this one (EvictionOrder).
func sortForEviction(pods []*corev1.Pod) {
	type key struct {
		group    int
		cpu, mem int64
	}
	keys := make(map[*corev1.Pod]key, len(pods))
	for _, p := range pods {
		r := scheduling.PodRequests(p)
		keys[p] = key{group(p), r.Cpu().MilliValue(), r.Memory().Value()}
	}
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := keys[pods[i]], keys[pods[j]]
		switch {
		case a.group != b.group:
			return a.group < b.group
		case a.cpu != b.cpu:
			return a.cpu > b.cpu
		case a.mem != b.mem:
			return a.mem > b.mem
		case pods[i].Namespace != pods[j].Namespace:
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
}

// EvictionOrder is pods (a copy) in the order a drain evicts them.
func EvictionOrder(pods []*corev1.Pod) []*corev1.Pod {
	out := append([]*corev1.Pod(nil), pods...)
	sortForEviction(out)
	return out
}

func isCritical(p *corev1.Pod) bool {
	return p.Spec.PriorityClassName == "system-cluster-critical" || p.Spec.PriorityClassName == "system-node-critical"
}

// stuckTerminating: past its deletion timestamp by more than a minute, a
// pod no longer holds the node (its kubelet is likely gone).
const stuckTerminating = time.Minute

// holdsDrain: the pod must leave before the node can go — not finished,
// not stuck terminating, not a mirror pod, not one the drain leaves alone.
func holdsDrain(p *corev1.Pod, now time.Time) bool {
	switch {
	case podutil.IsTerminal(p), podutil.IsMirrorPod(p), podutil.ToleratesDisrupted(p):
		return false
	case p.DeletionTimestamp != nil && now.After(p.DeletionTimestamp.Add(stuckTerminating)):
		return false
	}
	return true
}

// Next computes the step for now.
func Next(d Drain, now time.Time) Step {
	st := Step{Waiting: map[*corev1.Pod]string{}}
	var live []*corev1.Pod
	for _, p := range d.Pods {
		if holdsDrain(p, now) {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		st.Done = true
		return st
	}
	// With a grace period, a pod is deleted early enough that its own
	// terminationGracePeriodSeconds ends by the node's deadline.
	if d.GracePeriod != nil {
		deadline := d.Started.Add(*d.GracePeriod)
		var rest []*corev1.Pod
		for _, p := range live {
			if p.DeletionTimestamp != nil {
				rest = append(rest, p)
				continue
			}
			if !now.Before(deadline.Add(-podutil.GracePeriod(p))) {
				st.Delete = append(st.Delete, p)
			} else {
				rest = append(rest, p)
			}
		}
		live = rest
	}
	sortForEviction(live)
	if len(live) == 0 {
		return st
	}
	// Evict only the first group still present; later groups wait for it.
	first := group(live[0])
	allowed := map[*policyv1.PodDisruptionBudget]int32{}
	for _, pdb := range d.PDBs {
		allowed[pdb] = pdb.Status.DisruptionsAllowed
	}
	for _, p := range live {
		switch {
		case p.DeletionTimestamp != nil:
			st.Waiting[p] = "terminating"
		case group(p) != first:
			st.Waiting[p] = "waiting for pods evicted before it (non-critical before critical, DaemonSet pods last)"
		case v1.DoNotDisruptAt(p, now):
			st.Waiting[p] = "annotated " + v1.AnnotationDoNotDisrupt + " (deleted at the terminationGracePeriod)"
		default:
			if pdb := blockingPDB(p, d.PDBs, allowed); pdb != nil {
				st.Waiting[p] = "PodDisruptionBudget " + pdb.Name + " allows no eviction now"
				continue
			}
			for _, pdb := range podutil.MatchingPDBs(p, d.PDBs) {
				allowed[pdb]--
			}
			st.Evict = append(st.Evict, p)
		}
	}
	return st
}

func blockingPDB(p *corev1.Pod, pdbs []*policyv1.PodDisruptionBudget, allowed map[*policyv1.PodDisruptionBudget]int32) *policyv1.PodDisruptionBudget {
	for _, pdb := range podutil.MatchingPDBs(p, pdbs) {
		if allowed[pdb] <= 0 {
			return pdb
		}
	}
	return nil
}
