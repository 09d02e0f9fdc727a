package kubescheduler

// The default profile's score plugins, as the Binder runs them.

import (
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

type labelGroup struct {
	namespace string
	labels    k8slabels.Set
}

type groupCount struct{ group, n int32 }

// group returns the pod's label group.
func (b *Binder) group(p *corev1.Pod) int32 {
	if g, ok := b.groupOf.Get(p); ok {
		return g
	}
	keys := make([]string, 0, len(p.Labels))
	for k := range p.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	sb.WriteString(p.Namespace)
	for _, k := range keys {
		sb.WriteByte(0)
		sb.WriteString(k)
		sb.WriteByte(0)
		sb.WriteString(p.Labels[k])
	}
	g, ok := b.groupIDs[sb.String()]
	if !ok {
		g = int32(len(b.groups))
		b.groupIDs[sb.String()] = g
		b.groups = append(b.groups, labelGroup{namespace: p.Namespace, labels: p.Labels})
	}
	b.groupOf.Put(p, g)
	return g
}

// selects says whether a spread constraint's selector selects a group.
func (b *Binder) selects(sp softSpread, g int32) bool {
	for len(b.selected) <= sp.idx {
		b.selected = append(b.selected, nil)
	}
	row := b.selected[sp.idx]
	for len(row) <= int(g) {
		row = append(row, 0)
	}
	b.selected[sp.idx] = row
	if row[g] == 0 {
		row[g] = 1
		if lg := b.groups[g]; lg.namespace == sp.namespace && sp.selector.Matches(lg.labels) {
			row[g] = 2
		}
	}
	return row[g] == 2
}

// scoreClass is what scoring knows of one pod class in one run.
type scoreClass struct {
	pod        *corev1.Pod
	nonZero    [2]int64
	requested  [2]int64
	bestEffort bool
	tolerPNS   []corev1.Toleration // what may tolerate PreferNoSchedule taints
	preferred  *nodeaffinity.PreferredSchedulingTerms
	required   scheduling.NodeAffinity
	// hasRequired: a nodeSelector or required node affinity to honour.
	hasRequired bool
	spread      []softSpread
	requireAll  bool
	// zone counts per spread constraint (not for hostname), over all
	// included nodes, kept current as pods are placed.
	spreadCounts []map[string]int
	// inter-pod affinity score per topology key and value.
	affinity       map[string]map[string]int64
	prefAffinity   []weightedTerm
	prefAnti       []weightedTerm
	allPods        bool // the pod has preferred terms: every pod counts
	affinityFilled bool
}

type softSpread struct {
	namespace   string
	key         string
	maxSkew     int32
	selector    k8slabels.Selector
	id          string // namespace|selector
	idx         int    // id interned by the Binder
	honorAff    bool
	honorTaints bool
}

type weightedTerm struct {
	weight     int64
	key        string
	namespaces map[string]bool // nil: all
	selector   k8slabels.Selector
}

func (t weightedTerm) matches(p *corev1.Pod) bool {
	return (t.namespaces == nil || t.namespaces[p.Namespace]) && t.selector.Matches(k8slabels.Set(p.Labels))
}

func termsOf(pod *corev1.Pod, terms []corev1.WeightedPodAffinityTerm) []weightedTerm {
	var out []weightedTerm
	for _, w := range terms {
		out = append(out, weightedTerm{weight: int64(w.Weight), key: w.PodAffinityTerm.TopologyKey,
			namespaces: scheduling.TermNamespaces(pod, w.PodAffinityTerm), selector: termSelector(w.PodAffinityTerm.LabelSelector)})
	}
	return out
}

func termSelector(sel *metav1.LabelSelector) k8slabels.Selector {
	if sel == nil {
		return k8slabels.Nothing()
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return k8slabels.Nothing()
	}
	return s
}

func (r *bindRun) scoreClassOf(pod *corev1.Pod, key uint64) *scoreClass {
	if sc, ok := r.classes[key]; ok {
		return sc
	}
	sc := &scoreClass{pod: pod, nonZero: nonZeroRequests(pod), required: scheduling.NewNodeAffinity(pod),
		hasRequired: len(pod.Spec.NodeSelector) > 0 || (pod.Spec.Affinity != nil && pod.Spec.Affinity.NodeAffinity != nil &&
			pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil)}
	req := scheduling.PodRequests(pod)
	sc.requested = [2]int64{req.Cpu().MilliValue(), req.Memory().Value()}
	sc.bestEffort = sc.requested[0] == 0 && sc.requested[1] == 0
	sc.tolerPNS = pod.Spec.Tolerations
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		sc.preferred, _ = nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	sc.spread, sc.requireAll = softSpreads(pod, r.b.opts.SpreadSelector)
	r.internSpreads(sc.spread)
	if a := pod.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			sc.prefAffinity = termsOf(pod, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		if a.PodAntiAffinity != nil {
			sc.prefAnti = termsOf(pod, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		}
	}
	sc.allPods = len(sc.prefAffinity)+len(sc.prefAnti) > 0
	r.classes[key] = sc
	return sc
}

// softSpreads are the ScheduleAnyway constraints kube-scheduler scores:
// the pod's own, or the system defaults when it has none.
func softSpreads(pod *corev1.Pod, selectorOf func(*corev1.Pod) k8slabels.Selector) ([]softSpread, bool) {
	var out []softSpread
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		for _, t := range pod.Spec.TopologySpreadConstraints {
			if t.WhenUnsatisfiable != corev1.ScheduleAnyway {
				continue
			}
			sel := termSelector(t.LabelSelector)
			if t.LabelSelector == nil {
				sel = k8slabels.Everything()
			}
			for _, k := range t.MatchLabelKeys {
				if v, ok := pod.Labels[k]; ok {
					if req, err := k8slabels.NewRequirement(k, "=", []string{v}); err == nil {
						sel = sel.Add(*req)
					}
				}
			}
			out = append(out, softSpread{namespace: pod.Namespace, key: t.TopologyKey, maxSkew: t.MaxSkew, selector: sel, id: pod.Namespace + "|" + sel.String(),
				honorAff:    t.NodeAffinityPolicy == nil || *t.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor,
				honorTaints: t.NodeTaintsPolicy != nil && *t.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor})
		}
		return out, true
	}
	if selectorOf == nil {
		return nil, false
	}
	sel := selectorOf(pod)
	if sel == nil || sel.Empty() {
		return nil, false
	}
	id := pod.Namespace + "|" + sel.String()
	return []softSpread{
		{namespace: pod.Namespace, key: v1.LabelHostname, maxSkew: 3, selector: sel, id: id, honorAff: true},
		{namespace: pod.Namespace, key: v1.LabelZone, maxSkew: 5, selector: sel, id: id, honorAff: true},
	}, false
}

// included says whether a node counts for a spread constraint
// (nodeAffinityPolicy / nodeTaintsPolicy, and all keys present when the
// pod's own constraints are scored).
func (sc *scoreClass) included(r *bindRun, idx int, n *provisioning.Node, sp softSpread) bool {
	if sc.requireAll {
		for _, o := range sc.spread {
			if _, has := r.domainsOf(o.key); !has[idx] {
				return false
			}
		}
	}
	if sp.honorAff && sc.hasRequired && !sc.required.MatchesNode(n.Labels) {
		return false
	}
	if sp.honorTaints && scheduling.ToleratesForScheduling(n.Taints, sc.pod.Spec.Tolerations) != nil {
		return false
	}
	return true
}

// matching counts the pods on target idx a spread selector selects.
func (r *bindRun) matching(idx int, sp softSpread) int {
	f := r.facts[idx]
	id := sp.idx
	if len(f.counts) <= id {
		f.counts = growUnknown(f.counts, id)
	}
	if f.counts[id] < 0 {
		cnt := int32(0)
		for _, gc := range f.groups {
			if r.b.selects(sp, gc.group) {
				cnt += gc.n
			}
		}
		f.counts[id] = cnt
	}
	if len(r.addedCounts[idx]) <= id {
		r.addedCounts[idx] = growUnknown(r.addedCounts[idx], id)
	}
	if r.addedCounts[idx][id] < 0 {
		added := int32(0)
		for _, p := range r.f.Placed(idx) {
			if r.b.selects(sp, r.b.group(p)) {
				added++
			}
		}
		r.addedCounts[idx][id] = added
	}
	return int(f.counts[id] + r.addedCounts[idx][id])
}

// growUnknown extends counts to hold index id, new entries unknown (-1).
func growUnknown(counts []int32, id int) []int32 {
	for len(counts) <= id {
		counts = append(counts, -1)
	}
	return counts
}

// internSpreads gives the class's spread selectors their interned ids.
func (r *bindRun) internSpreads(spreads []softSpread) {
	for i := range spreads {
		id, ok := r.b.spreadIDs[spreads[i].id]
		if !ok {
			id = len(r.b.spreadIDs)
			r.b.spreadIDs[spreads[i].id] = id
		}
		spreads[i].idx = id
		for len(r.spreads) <= id {
			r.spreads = append(r.spreads, softSpread{})
		}
		r.spreads[id] = spreads[i]
	}
}

func (sc *scoreClass) fillSpread(r *bindRun) {
	if sc.spreadCounts != nil {
		return
	}
	sc.spreadCounts = make([]map[string]int, len(sc.spread))
	for i, sp := range sc.spread {
		m := map[string]int{}
		sc.spreadCounts[i] = m
		if sp.key == v1.LabelHostname {
			continue
		}
		vals, has := r.domainsOf(sp.key)
		for idx, n := range r.nodes {
			if !has[idx] || !sc.included(r, idx, n, sp) {
				continue
			}
			m[vals[idx]] += r.matching(idx, sp)
		}
	}
}

func (sc *scoreClass) fillAffinity(r *bindRun) {
	if sc.affinityFilled {
		return
	}
	sc.affinityFilled = true
	sc.affinity = map[string]map[string]int64{}
	for idx, n := range r.nodes {
		pods := r.facts[idx].affinity
		if sc.allPods {
			pods = n.Pods
		}
		for _, p := range pods {
			sc.addAffinity(p, n)
		}
		for _, p := range r.f.Placed(idx) {
			if sc.allPods || hasPodAffinity(p) {
				sc.addAffinity(p, n)
			}
		}
	}
}

// addAffinity is kube-scheduler's processExistingPod: the incoming pod's
// preferred terms against the existing pod, and the existing pod's
// required affinity (weight 1) and preferred terms against the incoming one.
func (sc *scoreClass) addAffinity(existing *corev1.Pod, n *provisioning.Node) {
	if len(n.Labels) == 0 {
		return
	}
	add := func(key string, w int64) {
		v, ok := n.Labels[key]
		if !ok {
			return
		}
		m := sc.affinity[key]
		if m == nil {
			m = map[string]int64{}
			sc.affinity[key] = m
		}
		m[v] += w
	}
	for _, t := range sc.prefAffinity {
		if t.matches(existing) {
			add(t.key, t.weight)
		}
	}
	for _, t := range sc.prefAnti {
		if t.matches(existing) {
			add(t.key, -t.weight)
		}
	}
	a := existing.Spec.Affinity
	if a == nil {
		return
	}
	if a.PodAffinity != nil {
		for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			wt := weightedTerm{weight: 1, key: t.TopologyKey, namespaces: scheduling.TermNamespaces(existing, t), selector: termSelector(t.LabelSelector)}
			if wt.matches(sc.pod) {
				add(wt.key, 1)
			}
		}
		for _, t := range termsOf(existing, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) {
			if t.matches(sc.pod) {
				add(t.key, t.weight)
			}
		}
	}
	if a.PodAntiAffinity != nil {
		for _, t := range termsOf(existing, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) {
			if t.matches(sc.pod) {
				add(t.key, -t.weight)
			}
		}
	}
}

// placed updates the class's running counts for a pod bound to idx.
func (sc *scoreClass) placed(r *bindRun, pod *corev1.Pod, idx int) {
	n := r.nodes[idx]
	if sc.spreadCounts != nil {
		for i, sp := range sc.spread {
			if sp.key == v1.LabelHostname || !r.b.selects(sp, r.b.group(pod)) {
				continue
			}
			if vals, has := r.domainsOf(sp.key); has[idx] && sc.included(r, idx, n, sp) {
				sc.spreadCounts[i][vals[idx]]++
			}
		}
	}
	if sc.affinityFilled && (sc.allPods || hasPodAffinity(pod)) {
		sc.addAffinity(pod, n)
	}
}

// score returns the weighted, normalized total for each feasible target.
func (r *bindRun) score(pod *corev1.Pod, key uint64, feasible []int) []int64 {
	sc := r.scoreClassOf(pod, key)
	total := make([]int64, len(feasible))
	raw := make([]int64, len(feasible))

	// TaintToleration (3): fewer untolerated PreferNoSchedule taints.
	for i, idx := range feasible {
		raw[i] = int64(scheduling.UntoleratedPreferNoSchedule(r.nodes[idx].Taints, sc.tolerPNS))
	}
	normalize(raw, lowerIsBetter)
	addWeighted(total, raw, 3)

	// NodeAffinity (2): sum of matched preferred terms' weights.
	if sc.preferred != nil {
		for i, idx := range feasible {
			raw[i] = sc.preferred.Score(r.facts[idx].obj)
		}
		normalize(raw, higherIsBetter)
		addWeighted(total, raw, 2)
	}

	// NodeResourcesFit, least allocated (1), and balanced allocation (1).
	for i, idx := range feasible {
		alloc, used := r.f.Resources(idx)
		nz := r.facts[idx].nonZero
		nz[0] += r.addedNonZero[idx][0]
		nz[1] += r.addedNonZero[idx][1]
		var least, weights int64
		for k := 0; k < 2; k++ {
			if alloc[k] == 0 {
				continue
			}
			least += leastRequested(nz[k]+sc.nonZero[k], alloc[k])
			weights++
		}
		if weights > 0 {
			total[i] += least / weights
		}
		if !sc.bestEffort {
			with := balance([2]int64{used[0] + sc.requested[0], used[1] + sc.requested[1]}, alloc)
			without := balance(used, alloc)
			total[i] += 50 + (50+with-without)/2
		}
	}

	// PodTopologySpread (2).
	if len(sc.spread) > 0 {
		r.spreadScores(sc, feasible, raw)
		addWeighted(total, raw, 2)
	}

	// InterPodAffinity (2).
	sc.fillAffinity(r)
	if len(sc.affinity) > 0 {
		minS, maxS := int64(math.MaxInt64), int64(math.MinInt64)
		for i, idx := range feasible {
			var s int64
			for key, vals := range sc.affinity {
				if v, ok := r.nodes[idx].Labels[key]; ok {
					s += vals[v]
				}
			}
			raw[i] = s
			minS, maxS = min(minS, s), max(maxS, s)
		}
		for i := range raw {
			if maxS > minS {
				raw[i] = int64(100 * (float64(raw[i]-minS) / float64(maxS-minS)))
			} else {
				raw[i] = 0
			}
		}
		addWeighted(total, raw, 2)
	}
	return total
}

func (r *bindRun) spreadScores(sc *scoreClass, feasible []int, out []int64) {
	sc.fillSpread(r)
	ignored := make([]bool, len(feasible))
	nIgnored := 0
	if sc.requireAll {
		for i, idx := range feasible {
			for _, sp := range sc.spread {
				if _, has := r.domainsOf(sp.key); !has[idx] {
					ignored[i] = true
				}
			}
			if ignored[i] {
				nIgnored++
			}
		}
	}
	// Domains are those of the feasible nodes.
	weights := make([]float64, len(sc.spread))
	present := make([]map[string]bool, len(sc.spread))
	for k, sp := range sc.spread {
		if sp.key == v1.LabelHostname {
			weights[k] = math.Log(float64(len(feasible) - nIgnored + 2))
			continue
		}
		present[k] = map[string]bool{}
		vals, _ := r.domainsOf(sp.key)
		for i, idx := range feasible {
			if !ignored[i] {
				present[k][vals[idx]] = true
			}
		}
		weights[k] = math.Log(float64(len(present[k]) + 2))
	}
	minS, maxS := int64(math.MaxInt64), int64(0)
	for i, idx := range feasible {
		if ignored[i] {
			out[i] = -1
			continue
		}
		var s float64
		for k, sp := range sc.spread {
			vals, has := r.domainsOf(sp.key)
			if !has[idx] {
				continue
			}
			var cnt int
			if sp.key == v1.LabelHostname {
				cnt = r.matching(idx, sp)
			} else if present[k][vals[idx]] {
				cnt = sc.spreadCounts[k][vals[idx]]
			}
			s += float64(cnt)*weights[k] + float64(sp.maxSkew-1)
		}
		out[i] = int64(math.Round(s))
		minS, maxS = min(minS, out[i]), max(maxS, out[i])
	}
	for i := range out {
		switch {
		case out[i] == -1:
			out[i] = 0
		case maxS == 0:
			out[i] = 100
		default:
			out[i] = 100 * (maxS + minS - out[i]) / maxS
		}
	}
}

// scoreOrder says whether a raw score's best is its highest or lowest
// (DefaultNormalizeScore's reverse).
type scoreOrder bool

const (
	higherIsBetter scoreOrder = false
	lowerIsBetter  scoreOrder = true
)

// normalize is kube-scheduler's DefaultNormalizeScore to 0–100, the best
// raw score (as order says) becoming 100.
func normalize(s []int64, order scoreOrder) {
	reverse := order == lowerIsBetter
	var m int64
	for _, x := range s {
		m = max(m, x)
	}
	for i := range s {
		switch {
		case m == 0 && reverse:
			s[i] = 100
		case m == 0:
		default:
			s[i] = 100 * s[i] / m
			if reverse {
				s[i] = 100 - s[i]
			}
		}
	}
}

func addWeighted(total, s []int64, w int64) {
	for i := range total {
		total[i] += s[i] * w
	}
}

func leastRequested(requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * 100 / capacity
}

// balance is kube-scheduler's balancedResourceScore for cpu and memory.
func balance(requested, alloc [2]int64) int64 {
	var fr []float64
	for k := 0; k < 2; k++ {
		if alloc[k] == 0 {
			continue
		}
		fr = append(fr, math.Min(1, float64(requested[k])/float64(alloc[k])))
	}
	std := 0.0
	if len(fr) == 2 {
		std = math.Abs((fr[0] - fr[1]) / 2)
	}
	return int64((1 - std) * 100)
}
