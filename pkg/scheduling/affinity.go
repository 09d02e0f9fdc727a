package scheduling

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// NodeAffinity is a pod's node constraints: its nodeSelector, its required
// node-affinity terms (any one of which may hold) and its preferred terms.
type NodeAffinity struct {
	selector  Requirements
	required  []Requirements
	preferred []Requirements // heaviest first; equal weights keep pod order
}

// NewNodeAffinity reads a pod's nodeSelector and node affinity.
func NewNodeAffinity(pod *corev1.Pod) NodeAffinity {
	a := NodeAffinity{selector: FromLabels(pod.Spec.NodeSelector)}
	if pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil {
		return a
	}
	na := pod.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			a.required = append(a.required, FromCoreNodeSelectorRequirements(t.MatchExpressions))
		}
	}
	prefs := append([]corev1.PreferredSchedulingTerm(nil), na.PreferredDuringSchedulingIgnoredDuringExecution...)
	sort.SliceStable(prefs, func(i, j int) bool { return prefs[i].Weight > prefs[j].Weight })
	for _, p := range prefs {
		a.preferred = append(a.preferred, FromCoreNodeSelectorRequirements(p.Preference.MatchExpressions))
	}
	return a
}

// Required is the strictest requirement set a node must satisfy: nodeSelector
// and the first required term.
func (a NodeAffinity) Required() Requirements {
	out := a.selector.Copy()
	if len(a.required) > 0 {
		out.Merge(a.required[0])
	}
	return out
}

// Options lists the requirement sets to try, strictest first, in upstream
// Karpenter's relaxation order: with the heaviest preference, each required
// term in turn (a later term replaces an earlier one); then, keeping the last
// required term, each lighter preference alone; then no preference at all.
func (a NodeAffinity) Options() []Requirements {
	required := a.required
	if len(required) == 0 {
		required = []Requirements{{}}
	}
	build := func(req Requirements, pref Requirements) Requirements {
		out := a.selector.Copy()
		out.Merge(req)
		if pref != nil {
			out.Merge(pref)
		}
		return out
	}
	var out []Requirements
	var firstPref Requirements
	if len(a.preferred) > 0 {
		firstPref = a.preferred[0]
	}
	for _, req := range required {
		out = append(out, build(req, firstPref))
	}
	last := required[len(required)-1]
	for i := 1; i < len(a.preferred); i++ {
		out = append(out, build(last, a.preferred[i]))
	}
	if len(a.preferred) > 0 {
		out = append(out, build(last, nil))
	}
	return out
}

// MatchesNode is kube-scheduler's NodeAffinity filter on a node's labels:
// nodeSelector, and any one required term (an empty term matches nothing,
// as in Kubernetes).
func (a NodeAffinity) MatchesNode(labels map[string]string) bool {
	if !a.selector.MatchesLabels(labels) {
		return false
	}
	if len(a.required) == 0 {
		return true
	}
	for _, t := range a.required {
		if len(t) > 0 && t.MatchesLabels(labels) {
			return true
		}
	}
	return false
}

// Unmet says why MatchesNode is false for a node with these labels: the
// nodeSelector entry or required-term requirement it misses (of the first
// term, when none matches); "" when the node matches.
func (a NodeAffinity) Unmet(labels map[string]string) string {
	if why := a.selector.Unmet(labels); why != "" {
		return why
	}
	if a.MatchesNode(labels) || len(a.required) == 0 {
		return ""
	}
	if len(a.required[0]) == 0 {
		return "an empty required node affinity term, which matches no node"
	}
	return a.required[0].Unmet(labels)
}

// TermNamespaces are the namespaces a pod (anti-)affinity term of the pod
// selects pods in: nil for every namespace (an empty namespaceSelector),
// else the term's namespaces, or the pod's own when it lists none.
func TermNamespaces(pod *corev1.Pod, term corev1.PodAffinityTerm) map[string]bool {
	if term.NamespaceSelector != nil && len(term.NamespaceSelector.MatchLabels) == 0 && len(term.NamespaceSelector.MatchExpressions) == 0 {
		return nil // {} selects every namespace
	}
	ns := map[string]bool{}
	for _, n := range term.Namespaces {
		ns[n] = true
	}
	if len(ns) == 0 {
		ns[pod.Namespace] = true
	}
	return ns
}
