package disruption

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// evictionCost is what evicting one pod costs, as upstream Karpenter
// reckons it: 1, plus its disruption cost over 2^27, plus its priority over
// 2^25, clamped to [-10, 10]. The disruption cost is the 32-bit integer of
// the karpenter.sh/disruption-cost annotation, or, on a pod without it, of
// controller.kubernetes.io/pod-deletion-cost (upstream's fallback while its
// PodDeletionCostManagement gate is off, the default); a value that is not
// such an integer counts as unset.
func evictionCost(p *corev1.Pod) float64 {
	cost := 1.0
	s, ok := p.Annotations[v1.AnnotationDisruptionCost]
	if !ok {
		s, ok = p.Annotations[corev1.PodDeletionCost]
	}
	if ok {
		if v, err := strconv.ParseInt(s, 10, 32); err == nil {
			cost += float64(v) / (1 << 27)
		}
	}
	if p.Spec.Priority != nil {
		cost += float64(*p.Spec.Priority) / (1 << 25)
	}
	return min(max(cost, -10), 10)
}

// disruptionCost orders consolidation candidates as upstream does, cheapest
// to disrupt first: the eviction cost of the pods that must move, scaled by
// the fraction of the node's lifetime (expireAfter) still ahead of it, so a
// node about to expire anyway costs little to take now.
func disruptionCost(m *Memo, cand *Candidate, pods []*corev1.Pod, now time.Time) float64 {
	return m.evictionCost(cand.Node, pods) * lifetimeRemaining(cand, now)
}

func podsEvictionCost(pods []*corev1.Pod) float64 {
	cost := 0.0
	for _, p := range pods {
		cost += evictionCost(p)
	}
	return cost
}

func lifetimeRemaining(cand *Candidate, now time.Time) float64 {
	nc := cand.NodeClaim
	if nc == nil || nc.Spec.ExpireAfter.Duration == nil || *nc.Spec.ExpireAfter.Duration <= 0 {
		return 1
	}
	total := nc.Spec.ExpireAfter.Duration.Seconds()
	left := total - now.Sub(nc.CreationTimestamp.Time).Seconds()
	return min(max(left/total, 0), 1)
}
