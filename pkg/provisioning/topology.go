package provisioning

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

type groupKind int

const (
	spreadGroup groupKind = iota
	affinityGroup
	antiAffinityGroup
)

func (k groupKind) String() string {
	return [...]string{"topology spread", "pod affinity", "pod anti-affinity"}[k]
}

// topoGroup counts, per topology domain, the pods a selector selects. Pods
// with the same constraint share one group.
type topoGroup struct {
	kind       groupKind
	key        string
	namespaces map[string]bool // nil: every namespace
	selector   k8slabels.Selector
	maxSkew    int
	minDomains int
	// honorAffinity: only domains the pod's node affinity allows count for
	// the spread minimum (nodeAffinityPolicy Honor, the default).
	honorAffinity bool
	// honorTaints: only domains of nodes whose taints the pod tolerates
	// count (nodeTaintsPolicy Honor; the default is Ignore).
	honorTaints bool
	// counts is conservative: a pod on a claim whose domain is not decided
	// yet counts in every domain it may get. exact counts only decided ones.
	counts map[string]int
	exact  map[string]int
	total  int
	// owners: for anti-affinity, the domains its own pods may be in.
	owners map[string]int
	desc   string
	// waiting: for pod affinity, per domain, the targets in it that
	// classes were refused for lack of a pod there, until one comes.
	waiting map[string][]waiter
}

// waiter is a target (by index) a class waits to be allowed on.
type waiter struct {
	c   *podClass
	idx int
}

func (g *topoGroup) selects(namespace string, labels map[string]string) bool {
	if g.namespaces != nil && !g.namespaces[namespace] {
		return false
	}
	return g.selector.Matches(k8slabels.Set(labels))
}

// topology holds every group of one Solve and the domains each key has.
type topology struct {
	groups   map[string]*topoGroup
	ordered  []*topoGroup
	universe map[string][]string // sorted domains per topology key (not hostname)
}

func newTopology() *topology {
	return &topology{groups: map[string]*topoGroup{}, universe: map[string][]string{}}
}

func (t *topology) addDomains(key string, values ...string) {
	cur := t.universe[key]
	for _, v := range values {
		i := sort.SearchStrings(cur, v)
		if i < len(cur) && cur[i] == v {
			continue
		}
		cur = append(cur, "")
		copy(cur[i+1:], cur[i:])
		cur[i] = v
	}
	t.universe[key] = cur
}

// groupsFor returns the groups a pod's own constraints define, creating
// them as needed. Preferred terms and ScheduleAnyway spreads count as
// required: relaxation removes them from the pod when they cannot be met.
func (t *topology) groupsFor(pod *corev1.Pod) ([]*topoGroup, error) {
	var out []*topoGroup
	for _, tsc := range pod.Spec.TopologySpreadConstraints {
		g, err := t.spreadGroupFor(pod, tsc)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	a := pod.Spec.Affinity
	if a == nil {
		return out, nil
	}
	if a.PodAffinity != nil {
		gs, err := t.termGroups(pod, affinityGroup, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		if err != nil {
			return nil, err
		}
		out = append(out, gs...)
	}
	if a.PodAntiAffinity != nil {
		gs, err := t.termGroups(pod, antiAffinityGroup, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		if err != nil {
			return nil, err
		}
		out = append(out, gs...)
	}
	return out, nil
}

// spreadGroupFor is the group of one of the pod's topology spread
// constraints (its taint-honouring twin under nodeTaintsPolicy Honor).
func (t *topology) spreadGroupFor(pod *corev1.Pod, tsc corev1.TopologySpreadConstraint) (*topoGroup, error) {
	minDomains := 0
	if tsc.MinDomains != nil {
		minDomains = int(*tsc.MinDomains)
	}
	honor := tsc.NodeAffinityPolicy == nil || *tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	g, err := t.group(spreadGroup, tsc.TopologyKey, map[string]bool{pod.Namespace: true}, spreadSelector(pod, tsc), int(tsc.MaxSkew), minDomains, honor)
	if err != nil {
		return nil, err
	}
	if tsc.NodeTaintsPolicy != nil && *tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor {
		return t.withTaintsHonored(g)
	}
	return g, nil
}

// spreadSelector is the constraint's label selector with its matchLabelKeys
// added as the pod's own values for them.
func spreadSelector(pod *corev1.Pod, tsc corev1.TopologySpreadConstraint) *metav1.LabelSelector {
	sel := tsc.LabelSelector
	if len(tsc.MatchLabelKeys) == 0 {
		return sel
	}
	sel = sel.DeepCopy()
	if sel == nil {
		sel = &metav1.LabelSelector{}
	}
	for _, k := range tsc.MatchLabelKeys {
		if v, ok := pod.Labels[k]; ok {
			sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{v}})
		}
	}
	return sel
}

// termGroups are the groups of the pod's pod (anti-)affinity terms of one
// kind, the required ones first, then the preferred ones.
func (t *topology) termGroups(pod *corev1.Pod, kind groupKind, required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) ([]*topoGroup, error) {
	terms := append([]corev1.PodAffinityTerm(nil), required...)
	for _, w := range preferred {
		terms = append(terms, w.PodAffinityTerm)
	}
	var out []*topoGroup
	for _, term := range terms {
		g, err := t.group(kind, term.TopologyKey, scheduling.TermNamespaces(pod, term), term.LabelSelector, 0, 0, true)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// withTaintsHonored is g's twin that honours node taints.
func (t *topology) withTaintsHonored(g *topoGroup) (*topoGroup, error) {
	id := "taints|" + g.desc + "|" + strconv.Itoa(g.minDomains) + strconv.FormatBool(g.honorAffinity)
	if h, ok := t.groups[id]; ok {
		return h, nil
	}
	h := *g
	h.honorTaints = true
	h.counts, h.exact, h.owners, h.waiting = map[string]int{}, map[string]int{}, map[string]int{}, nil
	h.desc = g.desc + ", honouring taints"
	t.groups[id] = &h
	t.ordered = append(t.ordered, &h)
	return &h, nil
}

// requiredAntiAffinityGroups are the groups whose owners keep other pods
// away: used for pods already bound to nodes.
func (t *topology) requiredAntiAffinityGroups(pod *corev1.Pod) []*topoGroup {
	if pod.Spec.Affinity == nil || pod.Spec.Affinity.PodAntiAffinity == nil {
		return nil
	}
	var out []*topoGroup
	for _, term := range pod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if g, err := t.group(antiAffinityGroup, term.TopologyKey, scheduling.TermNamespaces(pod, term), term.LabelSelector, 0, 0, true); err == nil {
			out = append(out, g)
		}
	}
	return out
}

func (t *topology) group(kind groupKind, key string, namespaces map[string]bool, sel *metav1.LabelSelector, maxSkew, minDomains int, honor bool) (*topoGroup, error) {
	selector := k8slabels.Nothing()
	if sel != nil {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return nil, fmt.Errorf("%s selector: %w", kind, err)
		}
		selector = s
	}
	nsKeys := make([]string, 0, len(namespaces))
	for n := range namespaces {
		nsKeys = append(nsKeys, n)
	}
	sort.Strings(nsKeys)
	id := strings.Join([]string{strconv.Itoa(int(kind)), key, strings.Join(nsKeys, ","), selector.String(),
		strconv.Itoa(maxSkew), strconv.Itoa(minDomains), strconv.FormatBool(honor), strconv.FormatBool(namespaces == nil)}, "|")
	if g, ok := t.groups[id]; ok {
		return g, nil
	}
	g := &topoGroup{kind: kind, key: key, namespaces: namespaces, selector: selector, maxSkew: maxSkew, minDomains: minDomains,
		honorAffinity: honor, counts: map[string]int{}, exact: map[string]int{}, owners: map[string]int{},
		desc: fmt.Sprintf("%s on %s (%s)", kind, key, selector.String())}
	if kind == spreadGroup {
		g.desc = fmt.Sprintf("%s on %s, maxSkew %d (%s)", kind, key, maxSkew, selector.String())
	}
	t.groups[id] = g
	t.ordered = append(t.ordered, g)
	return g, nil
}

// domainsOf is what a target can say about a topology key: the values it
// may take and whether that is decided (a single value).
type domainsOf func(key string) (values []string, decided bool)

// record counts a placed pod of class c in the target's domains.
func (t *topology) record(c *podClass, domains domainsOf) {
	for _, g := range c.matchedBy {
		vals, decided := domains(g.key)
		for _, d := range vals {
			g.counts[d]++
		}
		if decided && len(vals) == 1 {
			g.exact[vals[0]]++
			if ws := g.waiting[vals[0]]; len(ws) > 0 {
				for _, w := range ws {
					w.c.rejected.clear(w.idx)
				}
				delete(g.waiting, vals[0])
			}
		}
		if len(vals) > 0 {
			g.total++
		}
	}
	// Only required anti-affinity keeps other pods away (as in
	// kube-scheduler); a preference binds only its own pod.
	for _, g := range c.requiredAnti {
		vals, _ := domains(g.key)
		for _, d := range vals {
			g.owners[d]++
		}
	}
}

// unrecord takes a counted pod out again (a preemption victim).
func (t *topology) unrecord(c *podClass, domains domainsOf) {
	for _, g := range c.matchedBy {
		vals, decided := domains(g.key)
		for _, d := range vals {
			g.counts[d]--
		}
		if decided && len(vals) == 1 {
			g.exact[vals[0]]--
		}
		if len(vals) > 0 {
			g.total--
		}
	}
	for _, g := range c.requiredAnti {
		vals, _ := domains(g.key)
		for _, d := range vals {
			g.owners[d]--
		}
	}
}

// topologyError says which constraint a target cannot satisfy. Permanent
// errors cannot go away as more pods are placed.
type topologyError struct {
	group     *topoGroup
	inverse   bool
	permanent bool
	// waitFor is the decided domain of a target that a pod affinity
	// refused for lack of a pod there: it stays refused until one comes.
	waitFor string
}

// wait keeps target idx refused for class c until a pod g selects lands
// in domain d.
func (t *topology) wait(g *topoGroup, d string, c *podClass, idx int) {
	if g.waiting == nil {
		g.waiting = map[string][]waiter{}
	}
	c.rejected.set(idx)
	g.waiting[d] = append(g.waiting[d], waiter{c, idx})
}

func (e *topologyError) Error() string {
	if e.inverse {
		return "a pod already there has pod anti-affinity against this pod (" + e.group.desc + ")"
	}
	return "cannot satisfy " + e.group.desc
}

// check finds, for each topology key the class is constrained on, the
// domains of the target that satisfy every constraint, and returns the one
// to narrow an undecided target to.
func (t *topology) check(c *podClass, domains domainsOf, eligible func(*topoGroup) []string) (map[string]string, error) {
	var narrow map[string]string
	for _, key := range c.topologyKeys() {
		cand, decided := domains(key)
		cand, spread, err := t.allowedByOwn(c, key, cand, decided, eligible)
		if err != nil {
			return nil, err
		}
		if cand, err = awayFromOwners(c, key, cand, decided); err != nil {
			return nil, err
		}
		if decided {
			continue
		}
		if narrow == nil {
			narrow = map[string]string{}
		}
		narrow[key] = leastCounted(cand, spread)
	}
	return narrow, nil
}

// allowedByOwn keeps the domains of key that the class's own constraints
// on it allow, and returns the last spread among them (nil if none).
func (t *topology) allowedByOwn(c *podClass, key string, cand []string, decided bool, eligible func(*topoGroup) []string) ([]string, *topoGroup, error) {
	var spread *topoGroup
	for _, g := range c.owned {
		if g.key != key {
			continue
		}
		before := len(cand)
		only := ""
		if decided && before == 1 {
			only = cand[0]
		}
		switch g.kind {
		case spreadGroup:
			spread = g
			cand = t.withinSkew(c, g, cand, eligible(g))
		case affinityGroup:
			if g.total == 0 && c.selectedBy(g) {
				break // the first pod of a self-affine group may go anywhere
			}
			cand = filterDomains(cand, func(d string) bool { return g.exact[d] > 0 })
			if len(cand) == 0 && only != "" {
				return nil, nil, &topologyError{group: g, waitFor: only}
			}
		case antiAffinityGroup:
			cand = filterDomains(cand, func(d string) bool { return g.counts[d] == 0 })
		}
		if len(cand) == 0 {
			return nil, nil, &topologyError{group: g, permanent: before > 0 && neverClears(g, decided)}
		}
	}
	return cand, spread, nil
}

// withinSkew keeps the domains a pod of the class can join without taking
// the spread past maxSkew over its minimum among the eligible domains (any
// new node is eligible for a hostname spread).
func (t *topology) withinSkew(c *podClass, g *topoGroup, cand, eligible []string) []string {
	self := 0
	if c.selectedBy(g) {
		self = 1
	}
	minCount := t.minCount(g, eligible)
	return filterDomains(cand, func(d string) bool {
		return (g.key == v1.LabelHostname || contains(eligible, d)) && g.counts[d]+self-minCount <= g.maxSkew
	})
}

// neverClears says a target that g leaves no domain of stays so: counts
// only grow, so anti-affinity against a decided domain never clears, nor
// does a hostname spread (its minimum is 0).
func neverClears(g *topoGroup, decided bool) bool {
	return (g.kind == antiAffinityGroup && decided) || (g.kind == spreadGroup && g.key == v1.LabelHostname)
}

// awayFromOwners keeps the domains of key where no pod is whose required
// anti-affinity selects the class.
func awayFromOwners(c *podClass, key string, cand []string, decided bool) ([]string, error) {
	for _, g := range c.antiMatchedBy {
		if g.key != key {
			continue
		}
		cand = filterDomains(cand, func(d string) bool { return g.owners[d] == 0 })
		if len(cand) == 0 {
			return nil, &topologyError{group: g, inverse: true, permanent: decided}
		}
	}
	return cand, nil
}

// leastCounted is the domain to narrow an undecided target to: the first
// candidate, or with a spread the first of those it counts fewest pods in.
func leastCounted(cand []string, spread *topoGroup) string {
	choice := cand[0]
	if spread != nil {
		for _, d := range cand[1:] {
			if spread.counts[d] < spread.counts[choice] {
				choice = d
			}
		}
	}
	return choice
}

// minCount is the smallest count over the eligible domains; a hostname
// spread always has an empty new node to compare with, and fewer eligible
// domains than minDomains makes the minimum 0.
func (t *topology) minCount(g *topoGroup, eligible []string) int {
	if g.key == v1.LabelHostname || len(eligible) == 0 || len(eligible) < g.minDomains {
		return 0
	}
	m := g.counts[eligible[0]]
	for _, d := range eligible[1:] {
		m = min(m, g.counts[d])
	}
	return m
}

func filterDomains(in []string, keep func(string) bool) []string {
	out := in[:0:0]
	for _, d := range in {
		if keep(d) {
			out = append(out, d)
		}
	}
	return out
}

func contains(s []string, v string) bool {
	i := sort.SearchStrings(s, v)
	return i < len(s) && s[i] == v
}

// addPoolDomains adds the domains a new node of the pool can be in: for
// zone and capacity type, those of the available offerings its
// requirements allow; for other labels its instance types define, their
// values the pool allows; for labels only the pool sets, its own values.
// A value the pool lists but nothing can provide (a zone without
// offerings, capacity type reserved without a reservation) is no domain,
// or a spread would send pods there that no node can take.
func (t *topology) addPoolDomains(p *poolInfo) {
	if len(p.its) == 0 || p.np.IsStatic() {
		return // the pool launches nothing for pods
	}
	typeKeys := map[string]bool{v1.LabelZone: true, v1.LabelCapacityType: true}
	for _, it := range p.its {
		for _, o := range it.it.Offerings {
			if o.Available && p.reqs.Get(v1.LabelZone).Has(o.Zone) && p.reqs.Get(v1.LabelCapacityType).Has(o.CapacityType) {
				t.addDomains(v1.LabelZone, o.Zone)
				t.addDomains(v1.LabelCapacityType, o.CapacityType)
			}
		}
		for k, r := range it.it.Requirements {
			typeKeys[k] = true
			if k == v1.LabelZone || k == v1.LabelCapacityType {
				continue
			}
			for _, v := range r.Values() {
				if p.reqs.Get(k).Has(v) {
					t.addDomains(k, v)
				}
			}
		}
	}
	for k, r := range p.reqs {
		if vals := r.Values(); len(vals) > 0 && k != v1.LabelNodePool && !typeKeys[k] && !p.wellKnown[k] {
			t.addDomains(k, vals...)
		}
	}
}
