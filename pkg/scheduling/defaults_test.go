package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestDefaultRequestsFromLimits(t *testing.T) {
	rl := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	gpu := "nvidia.com/gpu"
	tests := []struct {
		name string
		in   corev1.ResourceRequirements
		want corev1.ResourceList
	}{
		{"limits only: every resource requests its limit", corev1.ResourceRequirements{Limits: rl("cpu", "2", "memory", "4Gi", gpu, "1")}, rl("cpu", "2", "memory", "4Gi", gpu, "1")},
		{"a request already set is kept", corev1.ResourceRequirements{Limits: rl("cpu", "2", "memory", "4Gi"), Requests: rl("cpu", "500m")}, rl("cpu", "500m", "memory", "4Gi")},
		{"GPU only in limits, cpu in requests", corev1.ResourceRequirements{Limits: rl(gpu, "1"), Requests: rl("cpu", "1")}, rl("cpu", "1", gpu, "1")},
		{"no limits: nothing to default", corev1.ResourceRequirements{Requests: rl("cpu", "1")}, rl("cpu", "1")},
		{"nothing at all", corev1.ResourceRequirements{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", Resources: *tc.in.DeepCopy()}},
				Containers:     []corev1.Container{{Name: "app", Resources: *tc.in.DeepCopy()}},
			}
			DefaultRequestsFromLimits(&spec)
			for _, c := range append(spec.InitContainers, spec.Containers...) {
				if !equalLists(c.Resources.Requests, tc.want) {
					t.Errorf("%s requests = %v, want %v", c.Name, c.Resources.Requests, tc.want)
				}
			}
		})
	}
	t.Run("ten GPU pods by limits need ten GPUs", func(t *testing.T) {
		spec := corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Limits: rl(gpu, "1")}}}}
		DefaultRequestsFromLimits(&spec)
		got := PodRequests(&corev1.Pod{Spec: spec})
		if q := got[corev1.ResourceName(gpu)]; q.Value() != 1 {
			t.Fatalf("pod requests %s %s, want 1", q.String(), gpu)
		}
	})
	t.Run("pod-level limits default cpu and memory only", func(t *testing.T) {
		spec := corev1.PodSpec{Resources: &corev1.ResourceRequirements{Limits: rl("cpu", "3", "memory", "1Gi")}}
		DefaultRequestsFromLimits(&spec)
		if !equalLists(spec.Resources.Requests, rl("cpu", "3", "memory", "1Gi")) {
			t.Fatalf("pod-level requests = %v", spec.Resources.Requests)
		}
	})
}

func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}
