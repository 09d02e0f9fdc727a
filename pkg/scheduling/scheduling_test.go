package scheduling

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestTolerates(t *testing.T) {
	gpu := corev1.Taint{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}
	batch := corev1.Taint{Key: "workload-type", Value: "batch", Effect: corev1.TaintEffectNoSchedule}
	soft := corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}
	tests := []struct {
		name        string
		taints      []corev1.Taint
		tolerations []corev1.Toleration
		want        string // "" tolerated
		wantSched   string // kube-scheduler's verdict
	}{
		{"no taints", nil, nil, "", ""},
		{"untolerated", []corev1.Taint{gpu}, nil, "does not tolerate taint nvidia.com/gpu:NoSchedule", "nvidia.com/gpu"},
		{"exists toleration", []corev1.Taint{gpu}, []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}, "", ""},
		{"equal wrong value", []corev1.Taint{batch}, []corev1.Toleration{{Key: "workload-type", Operator: corev1.TolerationOpEqual, Value: "gpu"}}, "workload-type=batch:NoSchedule", "workload-type"},
		{"equal right value", []corev1.Taint{batch}, []corev1.Toleration{{Key: "workload-type", Operator: corev1.TolerationOpEqual, Value: "batch", Effect: corev1.TaintEffectNoSchedule}}, "", ""},
		{"wrong effect", []corev1.Taint{batch}, []corev1.Toleration{{Key: "workload-type", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}, "workload-type", "workload-type"},
		{"tolerate everything", []corev1.Taint{gpu, batch}, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, "", ""},
		{"PreferNoSchedule blocks provisioning only", []corev1.Taint{soft}, nil, "soft:PreferNoSchedule", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check := func(what string, err error, want string) {
				if want == "" && err != nil {
					t.Errorf("%s: want tolerated, got %v", what, err)
				}
				if want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
					t.Errorf("%s: want %q, got %v", what, want, err)
				}
			}
			check("Tolerates", Tolerates(tc.taints, tc.tolerations), tc.want)
			check("ToleratesForScheduling", ToleratesForScheduling(tc.taints, tc.tolerations), tc.wantSched)
		})
	}
}

func container(cpu, mem string) corev1.Container {
	return corev1.Container{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}
}

func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecar := container("200m", "64Mi")
	sidecar.RestartPolicy = &always
	tests := []struct {
		name     string
		spec     corev1.PodSpec
		cpu, mem string
	}{
		{"containers add up", corev1.PodSpec{Containers: []corev1.Container{container("1", "1Gi"), container("500m", "512Mi")}}, "1500m", "1536Mi"},
		{"init container larger than app", corev1.PodSpec{InitContainers: []corev1.Container{container("2", "100Mi")}, Containers: []corev1.Container{container("1", "1Gi")}}, "2", "1Gi"},
		{"sidecar runs alongside", corev1.PodSpec{InitContainers: []corev1.Container{sidecar}, Containers: []corev1.Container{container("1", "1Gi")}}, "1200m", "1088Mi"},
		{"overhead", corev1.PodSpec{Containers: []corev1.Container{container("1", "1Gi")}, Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("120Mi")}}, "1250m", "1144Mi"},
		{"pod-level resources win", corev1.PodSpec{Containers: []corev1.Container{container("1", "1Gi")}, Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("4Gi")}}}, "3", "4Gi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := PodRequests(&corev1.Pod{Spec: tc.spec})
			if q := got[corev1.ResourceCPU]; q.Cmp(resource.MustParse(tc.cpu)) != 0 {
				t.Errorf("cpu = %s, want %s", q.String(), tc.cpu)
			}
			if q := got[corev1.ResourceMemory]; q.Cmp(resource.MustParse(tc.mem)) != 0 {
				t.Errorf("memory = %s, want %s", q.String(), tc.mem)
			}
			if q := got[corev1.ResourcePods]; q.Value() != 1 {
				t.Errorf("pods = %s, want 1", q.String())
			}
		})
	}
}

func TestFits(t *testing.T) {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")}
	if err := Fits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}, alloc); err != nil {
		t.Error(err)
	}
	err := Fits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4100m")}, alloc)
	if err == nil || err.Error() != "needs 4100m cpu, only 4 available" {
		t.Errorf("got %v", err)
	}
	err = Fits(corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}, alloc)
	if err == nil || !strings.Contains(err.Error(), "nvidia.com/gpu, only 0 available") {
		t.Errorf("extended resource absent from allocatable must not fit: %v", err)
	}
	left := Subtract(alloc, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")})
	if q := left[corev1.ResourceCPU]; q.String() != "2500m" {
		t.Errorf("Subtract: %s", q.String())
	}
	if q := Add(alloc, alloc)[corev1.ResourceMemory]; q.String() != "32Gi" {
		t.Errorf("Add: %s", q.String())
	}
}

func nodeAffinityPod(nodeSelector map[string]string, required [][]corev1.NodeSelectorRequirement, preferred map[int32][]corev1.NodeSelectorRequirement) *corev1.Pod {
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: nodeSelector, Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}}}
	na := pod.Spec.Affinity.NodeAffinity
	if required != nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
		for _, r := range required {
			na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = append(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: r})
		}
	}
	for _, w := range []int32{1, 50, 10} { // deliberately not sorted
		if p, ok := preferred[w]; ok {
			na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, corev1.PreferredSchedulingTerm{Weight: w, Preference: corev1.NodeSelectorTerm{MatchExpressions: p}})
		}
	}
	return pod
}

func zone(z ...string) []corev1.NodeSelectorRequirement {
	return []corev1.NodeSelectorRequirement{{Key: "topology.kubernetes.io/zone", Operator: opIn, Values: z}}
}

func TestNodeAffinityRelaxation(t *testing.T) {
	pod := nodeAffinityPod(map[string]string{"team": "a"},
		[][]corev1.NodeSelectorRequirement{zone("a", "b"), zone("c")},
		map[int32][]corev1.NodeSelectorRequirement{1: zone("b"), 10: zone("c"), 50: zone("a")})
	var got []string
	for _, o := range NewNodeAffinity(pod).Options() {
		got = append(got, o.String())
	}
	want := []string{
		// heaviest preference (a, weight 50) with each required term
		"team In [a], topology.kubernetes.io/zone In [a]",
		"team In [a], topology.kubernetes.io/zone DoesNotExist", // term 2 (c) ∩ preference a
		// then the last required term with each lighter preference
		"team In [a], topology.kubernetes.io/zone In [c]",       // weight 10
		"team In [a], topology.kubernetes.io/zone DoesNotExist", // weight 1 (b) ∩ c
		// then no preference
		"team In [a], topology.kubernetes.io/zone In [c]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("options:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r := NewNodeAffinity(pod).Required().String(); r != "team In [a], topology.kubernetes.io/zone In [a b]" {
		t.Errorf("Required() = %s", r)
	}
	plain := NewNodeAffinity(&corev1.Pod{})
	if o := plain.Options(); len(o) != 1 || len(o[0]) != 0 {
		t.Errorf("a pod without affinity has one, empty, option: %v", o)
	}
}

func TestNodeAffinityMatchesNode(t *testing.T) {
	pod := nodeAffinityPod(map[string]string{"team": "a"}, [][]corev1.NodeSelectorRequirement{zone("x"), zone("y")}, nil)
	a := NewNodeAffinity(pod)
	tests := []struct {
		labels map[string]string
		want   bool
		unmet  string // Unmet's reason when it does not match
	}{
		{map[string]string{"team": "a", "topology.kubernetes.io/zone": "y"}, true, ""},
		{map[string]string{"team": "a", "topology.kubernetes.io/zone": "z"}, false, "topology.kubernetes.io/zone In [x], and the node has topology.kubernetes.io/zone=z"},
		{map[string]string{"team": "b", "topology.kubernetes.io/zone": "x"}, false, "team In [a], and the node has team=b"},
		{map[string]string{"topology.kubernetes.io/zone": "x"}, false, "team In [a], and the node has no team label"},
	}
	for _, tc := range tests {
		if got := a.MatchesNode(tc.labels); got != tc.want {
			t.Errorf("MatchesNode(%v) = %v, want %v", tc.labels, got, tc.want)
		}
		if got := a.Unmet(tc.labels); got != tc.unmet {
			t.Errorf("Unmet(%v) = %q, want %q", tc.labels, got, tc.unmet)
		}
	}
	notIn := NewNodeAffinity(nodeAffinityPod(nil, [][]corev1.NodeSelectorRequirement{{{Key: "gpu", Operator: opNotIn, Values: []string{"true"}}}}, nil))
	if !notIn.MatchesNode(map[string]string{}) {
		t.Error("NotIn matches a node without the label")
	}
}

// TestPodRequestsDuringResize: a container being resized in place counts
// at the larger of its spec and what the kubelet holds for it
// (UseStatusResources), as kube-scheduler and upstream Karpenter count it.
func TestPodRequestsDuringResize(t *testing.T) {
	pod := func(specCPU, statusCPU string) *corev1.Pod {
		c := container(specCPU, "1Gi")
		c.Name = "app"
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{c}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(statusCPU), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	}
	for _, tc := range []struct {
		name, spec, status, want string
	}{
		{"a resize down in progress: the kubelet still holds the old requests", "1", "2", "2"},
		{"a resize up not yet done: the spec", "3", "1", "3"},
		{"resized", "2", "2", "2"},
	} {
		got := PodRequests(pod(tc.spec, tc.status))
		if q := got[corev1.ResourceCPU]; q.Cmp(resource.MustParse(tc.want)) != 0 {
			t.Errorf("%s: cpu %s, want %s", tc.name, q.String(), tc.want)
		}
	}
}

func TestWithTaint(t *testing.T) {
	a := corev1.Taint{Key: "a", Effect: corev1.TaintEffectNoSchedule}
	b := corev1.Taint{Key: "b", Value: "x", Effect: corev1.TaintEffectNoSchedule}
	bOther := corev1.Taint{Key: "b", Value: "y", Effect: corev1.TaintEffectNoSchedule} // matches b: key and effect
	bSoft := corev1.Taint{Key: "b", Effect: corev1.TaintEffectPreferNoSchedule}
	keys := func(ts []corev1.Taint) string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Key+"="+t.Value+":"+string(t.Effect))
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		name        string
		have        []corev1.Taint
		t           corev1.Taint
		on, changed bool
		want        string
	}{
		{"add", []corev1.Taint{a}, b, true, true, "a=:NoSchedule,b=x:NoSchedule"},
		{"add to none", nil, a, true, true, "a=:NoSchedule"},
		{"there already (any value)", []corev1.Taint{a, b}, bOther, true, false, "a=:NoSchedule,b=x:NoSchedule"},
		{"another effect is another taint", []corev1.Taint{b}, bSoft, true, true, "b=x:NoSchedule,b=:PreferNoSchedule"},
		{"remove", []corev1.Taint{b, a}, bOther, false, true, "a=:NoSchedule"},
		{"remove what is not there", []corev1.Taint{a}, b, false, false, "a=:NoSchedule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := keys(tc.have)
			got, changed := WithTaint(tc.have, tc.t, tc.on)
			if keys(got) != tc.want || changed != tc.changed {
				t.Errorf("WithTaint = %s, %v; want %s, %v", keys(got), changed, tc.want, tc.changed)
			}
			if keys(tc.have) != before {
				t.Errorf("WithTaint wrote into its input: %s, was %s", keys(tc.have), before)
			}
			if HasTaint(got, tc.t) != tc.on {
				t.Errorf("HasTaint after WithTaint(on=%v) = %v", tc.on, !tc.on)
			}
		})
	}
}
