// Package podutil answers, once for every host and decision, the questions the
// engine asks of a pod: is it still active, whose is it, must it move when
// its node goes, which PodDisruptionBudgets guard it, how long may it take
// to stop. It imports no client and keeps no state.
package podutil

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// DefaultGracePeriod is terminationGracePeriodSeconds when a pod sets none.
const DefaultGracePeriod = 30 * time.Second

// IsTerminal: the pod has Succeeded or Failed.
func IsTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// IsActive: neither terminal nor terminating.
func IsActive(p *corev1.Pod) bool { return p.DeletionTimestamp == nil && !IsTerminal(p) }

// IsDaemonSetPod: a DaemonSet controls the pod.
func IsDaemonSetPod(p *corev1.Pod) bool {
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.Kind == "DaemonSet"
}

// HasDRARequirements says the pod asks for devices through Dynamic
// Resource Allocation: it names ResourceClaims (or claim templates) of its
// own, or a container or init container asks for one. Upstream's
// pod.HasDRARequirements, pod-level claims included.
func HasDRARequirements(p *corev1.Pod) bool {
	if len(p.Spec.ResourceClaims) > 0 {
		return true
	}
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			if len(cs[i].Resources.Claims) > 0 {
				return true
			}
		}
	}
	return false
}

// IsMirrorPod: a static pod's mirror, owned by its Node; eviction cannot
// remove it.
func IsMirrorPod(p *corev1.Pod) bool {
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return true
	}
	ref := metav1.GetControllerOf(p)
	return ref != nil && ref.Kind == "Node"
}

// IsReschedulable: the pod must find a new place when its node goes —
// active, and neither a DaemonSet's (it belongs to the node) nor a mirror.
// A StatefulSet's terminating pod counts as well, as upstream counts it: its
// controller creates the replacement only once it is gone, so the pod still
// needs the room it will come back to, and a node of only such pods is not
// empty.
func IsReschedulable(p *corev1.Pod) bool {
	return (IsActive(p) || (p.DeletionTimestamp != nil && IsStatefulSetPod(p))) && !IsDaemonSetPod(p) && !IsMirrorPod(p)
}

// IsStatefulSetPod: an apps/v1 StatefulSet owns the pod.
func IsStatefulSetPod(p *corev1.Pod) bool {
	for _, ref := range p.OwnerReferences {
		if ref.Kind == "StatefulSet" && ref.APIVersion == "apps/v1" {
			return true
		}
	}
	return false
}

// ToleratesDisrupted: the pod tolerates karpenter.sh/disrupted:NoSchedule,
// so a drain leaves it where it is.
func ToleratesDisrupted(p *corev1.Pod) bool {
	return scheduling.ToleratesForScheduling([]corev1.Taint{v1.DisruptedTaint}, p.Spec.Tolerations) == nil
}

// GracePeriod is the pod's terminationGracePeriodSeconds, or the default.
func GracePeriod(p *corev1.Pod) time.Duration {
	if p.Spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*p.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return DefaultGracePeriod
}

// Namespace is the object's namespace, "default" when unset (as kubectl
// applies a manifest without one).
func Namespace(m metav1.ObjectMeta) string {
	if m.Namespace == "" {
		return metav1.NamespaceDefault
	}
	return m.Namespace
}

// MatchingPDBs are the PDBs in the pod's namespace whose selector selects
// it. In policy/v1 an empty selector selects every pod of the namespace, a
// null one none.
func MatchingPDBs(p *corev1.Pod, pdbs []*policyv1.PodDisruptionBudget) []*policyv1.PodDisruptionBudget {
	var out []*policyv1.PodDisruptionBudget
	for _, pdb := range pdbs {
		if pdb.Namespace != p.Namespace || pdb.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err == nil && sel.Matches(k8slabels.Set(p.Labels)) {
			out = append(out, pdb)
		}
	}
	return out
}
