package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTrimPodDropsJoinersNomination: the cache drops a nomination the
// controller wrote itself (its field manager owns the field), so the pod
// stays one provisioning looks after; kube-scheduler's (a preemption) is
// kept, as is one whose field the controller's entry no longer owns.
func TestTrimPodDropsJoinersNomination(t *testing.T) {
	owned := func(manager string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:nominatedNodeName":{}}}`)}}
	}
	other := metav1.ManagedFieldsEntry{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
		FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{}}}`)}}
	for name, tc := range map[string]struct {
		fields []metav1.ManagedFieldsEntry
		want   string
	}{
		"joiner's":                  {[]metav1.ManagedFieldsEntry{owned("kube-scheduler"), owned(FieldManager)}, ""},
		"kube-scheduler's":          {[]metav1.ManagedFieldsEntry{owned("kube-scheduler")}, "n1"},
		"joiner owns another field": {[]metav1.ManagedFieldsEntry{other, owned("kube-scheduler")}, "n1"},
	} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: tc.fields}, Status: corev1.PodStatus{NominatedNodeName: "n1"}}
		out, err := TrimPod(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := out.(*corev1.Pod).Status.NominatedNodeName; got != tc.want {
			t.Errorf("%s: nominatedNodeName %q in the cache, want %q", name, got, tc.want)
		}
	}
}

// TestPinned: pods kube-scheduler may not place just anywhere the plan
// did not put them are nominated; the rest are not.
func TestPinned(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}
	term := []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: sel}}
	for name, tc := range map[string]struct {
		spec corev1.PodSpec
		want bool
	}{
		"free": {corev1.PodSpec{}, false},
		"spread, may be broken": {corev1.PodSpec{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1,
			TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: sel}}}, false},
		"spread": {corev1.PodSpec{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1,
			TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel}}}, true},
		"anti-affinity":           {corev1.PodSpec{Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term}}}, true},
		"affinity":                {corev1.PodSpec{Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term}}}, true},
		"preferred anti-affinity": {corev1.PodSpec{Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term[0]}}}}}, false},
		"node affinity only":      {corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}}, false},
	} {
		if got := pinned(&corev1.Pod{Spec: tc.spec}); got != tc.want {
			t.Errorf("%s: pinned %v, want %v", name, got, tc.want)
		}
	}
}
