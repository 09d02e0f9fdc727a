package provisioning

import (
	"hash/fnv"
	"maps"
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// podClass is an equivalence class of pods: pods with the same namespace,
// labels, requests and scheduling constraints are interchangeable, so every
// check is made once per class, not once per pod.
type podClass struct {
	id        int
	namespace string
	labels    map[string]string
	requests  vec
	reqs      scheduling.Requirements // node requirements, preferences as required, and its volumes'
	// affinity are reqs without the volumes' requirements: as upstream,
	// those narrow the node, not the domains a topology spread counts.
	affinity    scheduling.Requirements
	tolerations []corev1.Toleration
	hostPorts   []hostPort
	// owned are the topology constraints the pod must satisfy; matchedBy
	// the groups whose selector selects the pod (it counts toward them);
	// antiMatchedBy the anti-affinity groups that keep it away from their owners.
	owned []*topoGroup
	// invalid: a topology or affinity constraint that cannot be read (a bad
	// label selector); the pod is unschedulable with it as the reason,
	// rather than scheduled as if it had no constraints.
	invalid       error
	matchedBy     []*topoGroup
	antiMatchedBy []*topoGroup
	selected      map[*topoGroup]bool
	topoKeys      []string // keys of owned and antiMatchedBy groups, sorted
	eligible      map[*topoGroup][]string
	// relaxed is the class with one preference fewer; nil when nothing is
	// left to relax.
	relaxed      *podClass
	relaxedReady bool
	spec         *corev1.Pod // representative, possibly relaxed, pod
	ownNode      bool        // needs a node without others like it
	requiredAnti []*topoGroup
	// rejected holds the targets (by index) that can never take this class.
	rejected    bitset
	prefiltered bool // rejected holds the existing nodes without room
	// pools caches the class's fit against each NodePool.
	pools []*classPool
	// failedAt is the scheduler's progress, plus one, when a pod of the
	// class last fit nowhere (0: never).
	failedAt int
}

type hostPort struct {
	port     int32
	protocol corev1.Protocol
	ip       string
}

// classKey hashes what makes pods interchangeable. Protobuf encoding of the
// API types is deterministic (map keys sorted), so equal specs hash equal.
func classKey(pod *corev1.Pod, requests vec) uint64 {
	h := fnv.New64a()
	w := func(s string) { _, _ = h.Write([]byte(s)); _, _ = h.Write([]byte{0}) }
	sorted := func(m map[string]string) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			w(k)
			w(m[k])
		}
	}
	w(pod.Namespace)
	sorted(pod.Labels)
	w("|")
	for _, x := range requests {
		w(strconv.FormatInt(x, 36))
	}
	w("|")
	sorted(pod.Spec.NodeSelector)
	marshal := func(m interface{ Marshal() ([]byte, error) }) {
		b, _ := m.Marshal()
		_, _ = h.Write(b)
		_, _ = h.Write([]byte{1})
	}
	if pod.Spec.Affinity != nil {
		marshal(pod.Spec.Affinity)
	}
	for i := range pod.Spec.Tolerations {
		marshal(&pod.Spec.Tolerations[i])
	}
	for i := range pod.Spec.TopologySpreadConstraints {
		marshal(&pod.Spec.TopologySpreadConstraints[i])
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				w("hp" + strconv.Itoa(int(p.HostPort)) + string(p.Protocol) + p.HostIP)
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		if name := ClaimName(pod, v); name != "" {
			w("pvc" + name)
		}
	}
	// Device claims: a pod that asks for devices is never alike a pod that
	// does not (nor, claims being a pod's own, one asking through others).
	for _, rc := range pod.Spec.ResourceClaims {
		w("rc" + rc.Name)
		if rc.ResourceClaimName != nil {
			w(*rc.ResourceClaimName)
		}
		if rc.ResourceClaimTemplateName != nil {
			w("tpl" + *rc.ResourceClaimTemplateName)
		}
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			for _, c := range cs[i].Resources.Claims {
				w("cc" + c.Name + "/" + c.Request)
			}
		}
	}
	if pod.Annotations[relaxedAnnotation] != "" {
		w("relax" + pod.Annotations[relaxedAnnotation])
	}
	return h.Sum64()
}

// relaxedAnnotation marks representative pods that had PreferNoSchedule
// taints relaxed; it never leaves the scheduler.
const relaxedAnnotation = "joiner.internal/tolerate-prefer-no-schedule"

func podHostPorts(pod *corev1.Pod) []hostPort {
	var out []hostPort
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				proto := p.Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				out = append(out, hostPort{port: p.HostPort, protocol: proto, ip: p.HostIP})
			}
		}
	}
	return out
}

func (hp hostPort) conflicts(o hostPort) bool {
	if hp.port != o.port || hp.protocol != o.protocol {
		return false
	}
	return hp.ip == o.ip || hp.ip == "" || o.ip == "" || hp.ip == "0.0.0.0" || o.ip == "0.0.0.0"
}

// strictRequirements are the pod's node requirements with its heaviest
// preferred node-affinity term treated as required.
func strictRequirements(pod *corev1.Pod) scheduling.Requirements {
	return scheduling.NewNodeAffinity(pod).Options()[0]
}

// WithoutPreferences is the pod with its preferences removed — preferred
// node affinity, preferred pod (anti-)affinity, ScheduleAnyway topology
// spread — as kube-scheduler's filters see it, and as provisioning plans
// under upstream's PreferencePolicy Ignore; the pod itself when it has
// none. The copy is a derived pod (no resourceVersion).
func WithoutPreferences(pod *corev1.Pod) *corev1.Pod {
	a := pod.Spec.Affinity
	soft := a != nil && ((a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0) ||
		(a.PodAffinity != nil && len(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0) ||
		(a.PodAntiAffinity != nil && len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0))
	for _, t := range pod.Spec.TopologySpreadConstraints {
		soft = soft || t.WhenUnsatisfiable == corev1.ScheduleAnyway
	}
	if !soft {
		return pod
	}
	p := derivedPod(pod)
	if a := p.Spec.Affinity; a != nil {
		if a.NodeAffinity != nil {
			a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
		if a.PodAffinity != nil {
			a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
		if a.PodAntiAffinity != nil {
			a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
	}
	var hard []corev1.TopologySpreadConstraint
	for _, t := range p.Spec.TopologySpreadConstraints {
		if t.WhenUnsatisfiable != corev1.ScheduleAnyway {
			hard = append(hard, t)
		}
	}
	p.Spec.TopologySpreadConstraints = hard
	return p
}

// relax returns a copy of pod with one preference removed, in upstream
// Karpenter's order, and false when there is nothing left to relax:
// another required node-affinity term, then preferred pod affinity,
// preferred pod anti-affinity, preferred node affinity (heaviest first),
// then ScheduleAnyway topology spread, then PreferNoSchedule taints.
func relax(pod *corev1.Pod) (*corev1.Pod, bool) {
	p := derivedPod(pod)
	if a := p.Spec.Affinity; a != nil {
		if na := a.NodeAffinity; na != nil && na.RequiredDuringSchedulingIgnoredDuringExecution != nil &&
			len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) > 1 {
			na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[1:]
			return p, true
		}
		if pa := a.PodAffinity; pa != nil && len(pa.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
			pa.PreferredDuringSchedulingIgnoredDuringExecution = dropHeaviestPodTerm(pa.PreferredDuringSchedulingIgnoredDuringExecution)
			return p, true
		}
		if pa := a.PodAntiAffinity; pa != nil && len(pa.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
			pa.PreferredDuringSchedulingIgnoredDuringExecution = dropHeaviestPodTerm(pa.PreferredDuringSchedulingIgnoredDuringExecution)
			return p, true
		}
		if na := a.NodeAffinity; na != nil && len(na.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
			terms := append([]corev1.PreferredSchedulingTerm(nil), na.PreferredDuringSchedulingIgnoredDuringExecution...)
			sort.SliceStable(terms, func(i, j int) bool { return terms[i].Weight > terms[j].Weight })
			na.PreferredDuringSchedulingIgnoredDuringExecution = terms[1:]
			return p, true
		}
	}
	for i, tsc := range p.Spec.TopologySpreadConstraints {
		if tsc.WhenUnsatisfiable == corev1.ScheduleAnyway {
			p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints[:i:i], p.Spec.TopologySpreadConstraints[i+1:]...)
			return p, true
		}
	}
	if p.Annotations[relaxedAnnotation] == "" {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[relaxedAnnotation] = "true"
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectPreferNoSchedule})
		return p, true
	}
	return nil, false
}

func dropHeaviestPodTerm(terms []corev1.WeightedPodAffinityTerm) []corev1.WeightedPodAffinityTerm {
	out := append([]corev1.WeightedPodAffinityTerm(nil), terms...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Weight > out[j].Weight })
	return out[1:]
}

// selectorMatches reports whether a label selector (nil matches nothing, as
// in pod affinity) selects the labels.
func selectorMatches(sel *metav1.LabelSelector, labels map[string]string) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	return s.Matches(k8slabels.Set(labels))
}

func (c *podClass) selectedBy(g *topoGroup) bool { return c.selected[g] }

func (c *podClass) topologyKeys() []string { return c.topoKeys }
