package kubescheduler

import (
	"math"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/joiner-autoscaler/joiner/pkg/podutil"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// preemptCandidate is a node where the pod fits once victims leave.
type preemptCandidate struct {
	idx        int
	victims    []*corev1.Pod
	violations int
}

// preempt is kube-scheduler's DefaultPreemption for a pod no node can take:
// on every node whose taints and node affinity allow the pod, take away
// all pods of lower priority; if the pod then fits, give back as many of
// them as still leave it room — most important first (priority, then
// earliest start), those a PodDisruptionBudget protects before the rest.
// Of the nodes left, choose the one with the fewest budget violations, then
// the lowest highest victim priority, the smallest sum of victim
// priorities, the fewest victims, the latest start of the most important
// victims, and then node order. The pod takes the room at once (it is
// nominated there; nothing of lower priority may use it meanwhile).
// Like kube-scheduler, the filters run with the victims gone: a victim
// is given back only if resources and topology (spread, pod affinity and
// anti-affinity) still allow the pod.
func (r *bindRun) preempt(pod *corev1.Pod, c provisioning.Class, aff scheduling.NodeAffinity, multi bool) *Preemption {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == corev1.PreemptNever {
		return nil
	}
	prio := priority(pod)
	if prio <= r.lowestPriority() {
		return nil // nothing anywhere has lower priority
	}
	if r.pdbs == nil && r.b.opts.PDBs != nil {
		r.pdbs = r.b.opts.PDBs()
	}
	var best *preemptCandidate
	for idx, n := range r.nodes {
		if n.MarkedForDeletion || n.InFlight || scheduling.ToleratesForScheduling(n.Taints, pod.Spec.Tolerations) != nil {
			continue
		}
		if multi && !aff.MatchesNode(n.Labels) || !multi && !c.Requirements().MatchesLabels(n.Labels) {
			continue
		}
		if cand := r.candidate(c, idx, prio); cand != nil && (best == nil || better(cand, best)) {
			best = cand
		}
	}
	if best == nil {
		return nil
	}
	r.f.Evict(best.idx, best.victims)
	for _, q := range best.victims {
		r.victims[q] = true // gone already, for the rest of this run
	}
	r.place(pod, c, best.idx)
	r.nominated[pod] = true // not bound yet: left out of the bindings
	return &Preemption{Pod: pod, Node: r.nodes[best.idx], Victims: best.victims}
}

// lowestPriority is the lowest priority of a pod on any node, found once
// per run.
func (r *bindRun) lowestPriority() int32 {
	if !r.lowestKnown {
		r.lowestKnown, r.lowest = true, math.MaxInt32
		for _, n := range r.nodes {
			for _, q := range n.Pods {
				r.lowest = min(r.lowest, priority(q))
			}
		}
	}
	return r.lowest
}

// candidate is node idx as a place to preempt on for a pod of class c and
// priority prio: the fewest of its lower-priority pods whose going lets
// the pod pass the filters, or nil when even all of them do not.
func (r *bindRun) candidate(c provisioning.Class, idx int, prio int32) *preemptCandidate {
	var lower []*corev1.Pod
	for _, q := range r.nodes[idx].Pods {
		if q.DeletionTimestamp == nil && !r.victims[q] && priority(q) < prio {
			lower = append(lower, q)
		}
	}
	if len(lower) == 0 {
		return nil
	}
	// Filters run with the victims gone (and see whatever is not evicted
	// below put back).
	trial, ok := r.f.Try(c, idx, lower)
	if !ok {
		return nil
	}
	defer trial.End() // only a candidate so far
	sort.SliceStable(lower, func(i, j int) bool { return moreImportant(lower[i], lower[j]) })
	cand := &preemptCandidate{idx: idx}
	budgets := newPDBBudgets(r.pdbs)
	var protected, free []*corev1.Pod
	for _, q := range lower {
		if budgets.wouldViolate(q) {
			protected = append(protected, q)
		} else {
			free = append(free, q)
		}
	}
	reprieve := func(q *corev1.Pod, violating bool) {
		if trial.GiveBack(q) {
			return
		}
		cand.victims = append(cand.victims, q)
		if violating {
			cand.violations++
		}
	}
	for _, q := range protected {
		reprieve(q, true)
	}
	for _, q := range free {
		reprieve(q, false)
	}
	return cand
}

// better orders preemption candidates as kube-scheduler picks among them.
func better(a, b *preemptCandidate) bool {
	if a.violations != b.violations {
		return a.violations < b.violations
	}
	ha, hb := highest(a.victims), highest(b.victims)
	if ha != hb {
		return ha < hb
	}
	sa, sb := prioritySum(a.victims), prioritySum(b.victims)
	if sa != sb {
		return sa < sb
	}
	if len(a.victims) != len(b.victims) {
		return len(a.victims) < len(b.victims)
	}
	// The node whose most important victims started latest loses the least.
	return earliestStart(a.victims).After(earliestStart(b.victims))
}

// moreImportant is kube-scheduler's MoreImportantPod: higher priority,
// then the one that started earlier (a pod not started yet counts as now,
// i.e. after every started one).
func moreImportant(a, b *corev1.Pod) bool {
	if pa, pb := priority(a), priority(b); pa != pb {
		return pa > pb
	}
	sa, sb := a.Status.StartTime, b.Status.StartTime
	switch {
	case sa == nil:
		return false
	case sb == nil:
		return true
	}
	return sa.Before(sb)
}

// earliestStart is when the earliest of the highest-priority victims
// started; victims not started yet count as started last.
func earliestStart(victims []*corev1.Pod) time.Time {
	top := highest(victims)
	earliest := time.Time{}
	for _, v := range victims {
		if priority(v) != top || v.Status.StartTime == nil {
			continue
		}
		if earliest.IsZero() || v.Status.StartTime.Time.Before(earliest) {
			earliest = v.Status.StartTime.Time
		}
	}
	if earliest.IsZero() {
		return time.Unix(1<<40, 0) // not started: as late as can be
	}
	return earliest
}

func highest(pods []*corev1.Pod) int32 {
	h := int32(math.MinInt32)
	for _, p := range pods {
		h = max(h, priority(p))
	}
	return h
}

// prioritySum offsets each priority to be positive, as kube-scheduler does.
func prioritySum(pods []*corev1.Pod) int64 {
	var sum int64
	for _, p := range pods {
		sum += int64(priority(p)) + math.MaxInt32 + 1
	}
	return sum
}

// pdbBudgets tracks, within one preemption decision, how many more pods
// each budget lets go.
type pdbBudgets struct {
	pdbs      []*policyv1.PodDisruptionBudget
	remaining map[*policyv1.PodDisruptionBudget]int32
}

func newPDBBudgets(pdbs []*policyv1.PodDisruptionBudget) *pdbBudgets {
	b := &pdbBudgets{pdbs: pdbs, remaining: map[*policyv1.PodDisruptionBudget]int32{}}
	for _, pdb := range pdbs {
		b.remaining[pdb] = pdb.Status.DisruptionsAllowed
	}
	return b
}

// wouldViolate counts the pod against every budget that selects it and
// reports whether one of them had nothing left.
func (b *pdbBudgets) wouldViolate(p *corev1.Pod) bool {
	violated := false
	for _, pdb := range podutil.MatchingPDBs(p, b.pdbs) {
		b.remaining[pdb]--
		violated = violated || b.remaining[pdb] < 0
	}
	return violated
}
