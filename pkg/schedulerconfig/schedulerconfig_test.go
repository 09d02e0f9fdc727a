package schedulerconfig

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, doc, err string
		constraints    int
	}{
		{name: "empty", doc: "  \n"},
		{name: "YAML", doc: "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}\n  - {maxSkew: 2, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}\n", constraints: 2},
		{name: "JSON", doc: `{"podTopologySpread":{"defaultConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]}}`, constraints: 1},
		{name: "unknown field", doc: "podTopologySpread:\n  defaultConstraint: []\n", err: `--scheduler-config: unknown field "defaultConstraint"`},
		{name: "malformed", doc: "podTopologySpread: [", err: "--scheduler-config: not YAML or JSON"},
		{name: "maxSkew 0", doc: "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n",
			err: "podTopologySpread.defaultConstraints[0].maxSkew: 0, must be greater than 0"},
		{name: "no key", doc: "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, whenUnsatisfiable: DoNotSchedule}\n",
			err: "defaultConstraints[0].topologyKey: must be set"},
		{name: "bad key", doc: "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: 'a b', whenUnsatisfiable: DoNotSchedule}\n",
			err: `topologyKey: "a b" is not a label name`},
		{name: "unknown whenUnsatisfiable", doc: "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Sometimes}\n",
			err: `whenUnsatisfiable: "Sometimes", must be DoNotSchedule or ScheduleAnyway`},
		{name: "a labelSelector", doc: "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}\n",
			err: "defaultConstraints[0].labelSelector: must not be set"},
		{name: "matchLabelKeys", doc: "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, matchLabelKeys: [pod-template-hash]}\n",
			err: "defaultConstraints[0].matchLabelKeys: must not be set"},
		{name: "repeated", doc: "podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n  - {maxSkew: 3, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n",
			err: "defaultConstraints[1] repeats [0] (topologyKey zone, whenUnsatisfiable DoNotSchedule)"},
	} {
		c, err := Parse([]byte(tc.doc), "--scheduler-config")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := len(c.DefaultConstraints()); got != tc.constraints {
			t.Errorf("%s: %d default constraints, want %d", tc.name, got, tc.constraints)
		}
	}
}

func pod(ns string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns, Labels: lbls}}
}

func service(ns string, selector map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: ns}, Spec: corev1.ServiceSpec{Selector: selector}}
}

// The deduced selector is kube-scheduler's: matching Services' selectors
// merged, a ReplicationController's labels over them, a ReplicaSet's or
// StatefulSet's selector as requirements; nil when nothing selects.
func TestDefaultSelector(t *testing.T) {
	web := pod("shop", map[string]string{"app": "web", "tier": "front", "pod-template-hash": "abc"})
	rs := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": "abc"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}
	for _, tc := range []struct {
		name     string
		services []*corev1.Service
		owner    Owner
		want     string
	}{
		{name: "nothing selects it", services: []*corev1.Service{service("shop", map[string]string{"app": "api"}), service("other", map[string]string{"app": "web"})}, want: "<nil>"},
		{name: "a Service without a selector selects nothing", services: []*corev1.Service{service("shop", nil)}, want: "<nil>"},
		{name: "two Services", services: []*corev1.Service{service("shop", map[string]string{"app": "web"}), service("shop", map[string]string{"tier": "front"})},
			want: "app=web,tier=front"},
		{name: "a ReplicaSet", owner: Owner{Selector: rs}, want: "app in (web),pod-template-hash in (abc),tier"},
		{name: "a Service and a ReplicaSet", services: []*corev1.Service{service("shop", map[string]string{"tier": "front"})}, owner: Owner{Selector: rs},
			want: "app in (web),pod-template-hash in (abc),tier=front,tier"},
		{name: "a ReplicationController over a Service", services: []*corev1.Service{service("shop", map[string]string{"app": "web"})},
			owner: Owner{Labels: map[string]string{"app": "web", "tier": "front"}}, want: "app=web,tier=front"},
	} {
		sel := DefaultSelector(web, tc.services, tc.owner)
		got := "<nil>"
		if sel != nil {
			s, err := metav1.LabelSelectorAsSelector(sel)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			got = s.String()
		}
		if got != tc.want {
			t.Errorf("%s: selector %s, want %s", tc.name, got, tc.want)
		}
	}
}

// Defaults go only to a pod with no constraints of its own and a deduced
// selector, on a copy; the pod handed in is not changed.
func TestApply(t *testing.T) {
	defaults := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway}}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	p := pod("shop", map[string]string{"app": "web"})
	got := Apply(p, defaults, sel)
	if got == p || len(got.Spec.TopologySpreadConstraints) != 1 || got.Spec.TopologySpreadConstraints[0].LabelSelector.MatchLabels["app"] != "web" {
		t.Fatalf("applied: %+v", got.Spec.TopologySpreadConstraints)
	}
	if len(p.Spec.TopologySpreadConstraints) != 0 || defaults[0].LabelSelector != nil {
		t.Error("Apply changed the pod or the defaults handed in")
	}
	own := pod("shop", nil)
	own.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 2, TopologyKey: corev1.LabelHostname}}
	if Apply(own, defaults, sel) != own || Apply(p, defaults, nil) != p || Apply(p, nil, sel) != p {
		t.Error("a pod with constraints of its own, or no selector, or no defaults, was changed")
	}
}
