package disruption

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// PriceTolerance is how far apart, relative to the dearer, two hourly
// prices must be to differ: prices are sums of float64s, and 1.088 + 0.544
// exceeds 1.632 by a rounding error, which once let two nodes be replaced
// by one of exactly their price (on the 1,000-pod benchmark a c6g.8xlarge
// and a c6g.4xlarge by a c6g.12xlarge, "saving 0.0000/h", replaced again
// a round later). Relative, because a reserved offering is priced at its
// on-demand price over 10,000,000 (as upstream's), and two of them differ
// by far less than any absolute tolerance a dollar price could take.
const PriceTolerance = 1e-9

// cheaper reports whether price is below limit by more than rounding:
// by more than PriceTolerance of limit.
func cheaper(price, limit float64) bool {
	return price < limit-PriceTolerance*limit
}

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

// disruptionCost orders the surplus nodes of a static NodePool, cheapest to
// disrupt first: the eviction cost of the pods that must move, scaled by
// the fraction of the node's lifetime (expireAfter) still ahead of it, so a
// node about to expire anyway costs little to take now.
func disruptionCost(m *Memo, cand *Candidate, pods []*corev1.Pod, now time.Time) float64 {
	return m.podCosts(cand.Node, pods).sum * lifetimeRemaining(cand, now)
}

// baseDisruptionCost is what draining a node costs with no pod on it
// (upstream's PerNodeBaseDisruptionCost).
const baseDisruptionCost = 1.0

// rescheduleCost is what moving a node's pods costs, as upstream reckons it
// since v1.14 (RescheduleDisruptionCost): the node's base cost plus each pod's
// eviction cost where it is positive. A node costing no more than its base
// is empty — no pod on it, or only pods whose eviction costs nothing (a
// priority or disruption cost low enough) — and consolidation orders its
// candidates by price over this cost, the most saved per disruption first.
func rescheduleCost(m *Memo, cand *Candidate, pods []*corev1.Pod) float64 {
	return baseDisruptionCost + m.podCosts(cand.Node, pods).positive
}

// podCosts are a set of pods' eviction costs summed, all and positive only.
type podCosts struct{ sum, positive float64 }

func evictionCosts(pods []*corev1.Pod) podCosts {
	var c podCosts
	for _, p := range pods {
		e := evictionCost(p)
		c.sum += e
		c.positive += max(0, e)
	}
	return c
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
