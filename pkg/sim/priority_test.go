package sim

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPriorityClasses(t *testing.T) {
	never := corev1.PreemptNever
	classes := []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "placeholder"}, Value: -10, PreemptionPolicy: &never},
		{ObjectMeta: metav1.ObjectMeta{Name: "normal"}, Value: 100, GlobalDefault: true},
	}
	p, err := newPriorities(classes)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		class  string
		want   int32
		policy *corev1.PreemptionPolicy
	}{
		{"placeholder", -10, &never},
		{"", 100, nil}, // the global default
		{"system-node-critical", 2000001000, nil},
		{"system-cluster-critical", 2000000000, nil},
	} {
		spec := &corev1.PodSpec{PriorityClassName: tc.class}
		if err := p.resolve(spec, "Deployment x"); err != nil {
			t.Fatal(err)
		}
		if *spec.Priority != tc.want || (tc.policy == nil) != (spec.PreemptionPolicy == nil) {
			t.Errorf("%q: priority %d policy %v, want %d %v", tc.class, *spec.Priority, spec.PreemptionPolicy, tc.want, tc.policy)
		}
	}
	err = p.resolve(&corev1.PodSpec{PriorityClassName: "hgih"}, "Deployment api: spec.template.spec")
	if err == nil || !strings.Contains(err.Error(), `Deployment api: spec.template.spec: priorityClassName "hgih"`) || !strings.Contains(err.Error(), "add a scheduling.k8s.io/v1 PriorityClass") {
		t.Errorf("unknown class: %v", err)
	}
	classes = append(classes, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Value: 5, GlobalDefault: true})
	if _, err := newPriorities(classes); err == nil || !strings.Contains(err.Error(), "both globalDefault") {
		t.Errorf("two global defaults: %v", err)
	}
}
