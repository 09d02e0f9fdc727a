package buffer

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-autoscaler/joiner/pkg/apis/autoscaling/v1beta1"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

func ptr[T any](v T) *T { return &v }

// chunk is a 1-core, 1Gi pod template with a claim volume.
func chunk() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "d"}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "data"}, {Name: "tmp"}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"),
					corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
}

func lookupOf(replicas *int32) Lookup {
	return func(kind, namespace, name string) (*Target, error) {
		if name == "missing" {
			return nil, fmt.Errorf("%s %s/%s: %w", kind, namespace, name, ErrNotFound)
		}
		t := &Target{Template: chunk()}
		if kind == "PodTemplate" {
			t.Generation = ptr(int64(3))
		} else {
			t.Replicas = replicas
		}
		return t, nil
	}
}

// TestReplicas: the number of chunks as upstream's controller computes it
// (its suite's cases): the larger of replicas and percentage, limits cap it.
func TestReplicas(t *testing.T) {
	scalable := &v1beta1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "web"}
	tmpl := &v1beta1.LocalObjectRef{Name: "chunk"}
	cpu := func(q string) v1beta1.Limits { return v1beta1.Limits{corev1.ResourceCPU: resource.MustParse(q)} }
	for _, tc := range []struct {
		name     string
		spec     v1beta1.CapacityBufferSpec
		workload *int32
		want     int32
	}{
		{"replicas capped by limits", v1beta1.CapacityBufferSpec{PodTemplateRef: tmpl, Replicas: ptr(int32(10)), Limits: cpu("3")}, nil, 3},
		{"limits alone", v1beta1.CapacityBufferSpec{PodTemplateRef: tmpl, Limits: cpu("5500m")}, nil, 5},
		{"20% of 10", v1beta1.CapacityBufferSpec{ScalableRef: scalable, Percentage: ptr(int32(20))}, ptr(int32(10)), 2},
		{"the larger: replicas", v1beta1.CapacityBufferSpec{ScalableRef: scalable, Replicas: ptr(int32(5)), Percentage: ptr(int32(20))}, ptr(int32(10)), 5},
		{"the larger: percentage", v1beta1.CapacityBufferSpec{ScalableRef: scalable, Replicas: ptr(int32(5)), Percentage: ptr(int32(80))}, ptr(int32(10)), 8},
		{"the larger, capped", v1beta1.CapacityBufferSpec{ScalableRef: scalable, Replicas: ptr(int32(5)), Percentage: ptr(int32(80)), Limits: cpu("4")}, ptr(int32(10)), 4},
		{"10% of 1 rounds up", v1beta1.CapacityBufferSpec{ScalableRef: scalable, Percentage: ptr(int32(10))}, ptr(int32(1)), 1},
		{"unset workload replicas count as 1", v1beta1.CapacityBufferSpec{ScalableRef: scalable, Percentage: ptr(int32(50))}, nil, 1},
		{"percentage of a template is ignored", v1beta1.CapacityBufferSpec{PodTemplateRef: tmpl, Replicas: ptr(int32(2)), Percentage: ptr(int32(500))}, nil, 2},
		{"limits on what is not requested are ignored", v1beta1.CapacityBufferSpec{PodTemplateRef: tmpl, Replicas: ptr(int32(2)),
			Limits: v1beta1.Limits{"nvidia.com/gpu": resource.MustParse("1")}}, nil, 2},
		{"nothing set", v1beta1.CapacityBufferSpec{ScalableRef: scalable}, ptr(int32(10)), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cb := &v1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"}, Spec: tc.spec}
			r := Resolve(cb, lookupOf(tc.workload))
			if r.Ready.Status != metav1.ConditionTrue || r.Replicas != tc.want {
				t.Fatalf("got %d chunks (%s %s), want %d", r.Replicas, r.Ready.Reason, r.Ready.Message, tc.want)
			}
			if got := len(VirtualPods(r)); got != int(tc.want) {
				t.Errorf("%d virtual pods, want %d", got, tc.want)
			}
		})
	}
}

// TestNotReady: what upstream's ReadyForProvisioning says of a buffer
// that does not resolve; such a buffer has no chunks.
func TestNotReady(t *testing.T) {
	for _, tc := range []struct {
		spec   v1beta1.CapacityBufferSpec
		reason string
	}{
		{v1beta1.CapacityBufferSpec{Replicas: ptr(int32(1))}, v1beta1.ReasonResolutionFailed},
		{v1beta1.CapacityBufferSpec{PodTemplateRef: &v1beta1.LocalObjectRef{Name: "missing"}, Replicas: ptr(int32(1))}, v1beta1.ReasonPodTemplateNotFound},
		{v1beta1.CapacityBufferSpec{ScalableRef: &v1beta1.ScalableRef{Kind: "Deployment", Name: "missing"}, Replicas: ptr(int32(1))}, v1beta1.ReasonScalableRefNotFound},
		{v1beta1.CapacityBufferSpec{ScalableRef: &v1beta1.ScalableRef{APIGroup: "batch", Kind: "Job", Name: "j"}, Replicas: ptr(int32(1))}, v1beta1.ReasonResolutionFailed},
		{v1beta1.CapacityBufferSpec{ScalableRef: &v1beta1.ScalableRef{APIGroup: "apps", Kind: "DaemonSet", Name: "d"}, Replicas: ptr(int32(1))}, v1beta1.ReasonResolutionFailed},
	} {
		cb := &v1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", Generation: 7}, Spec: tc.spec}
		r := Resolve(cb, lookupOf(nil))
		if r.Ready.Status != metav1.ConditionFalse || r.Ready.Reason != tc.reason || r.Ready.ObservedGeneration != 7 {
			t.Errorf("%+v: got %+v, want False/%s", tc.spec, r.Ready, tc.reason)
		}
		if pods := VirtualPods(r); len(pods) != 0 {
			t.Errorf("%+v: %d virtual pods of a buffer not ready", tc.spec, len(pods))
		}
		if c := ProvisioningCondition(r, Placement{}); c == nil || c.Reason != v1beta1.ReasonNotReady {
			t.Errorf("Provisioning of a buffer not ready: %+v", c)
		}
	}
}

// TestVirtualPods: chunks as upstream builds them — marked, named, at the
// lowest priority, with the template's labels and no claim volumes.
func TestVirtualPods(t *testing.T) {
	cb := &v1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Name: "warm", Namespace: "ns", UID: "u"},
		Spec: v1beta1.CapacityBufferSpec{PodTemplateRef: &v1beta1.LocalObjectRef{Name: "chunk"}, Replicas: ptr(int32(2))}}
	r := Resolve(cb, lookupOf(nil))
	pods := VirtualPods(r)
	if len(pods) != 2 || pods[1].Name != "capacity-buffer-warm-2" || pods[1].Namespace != "ns" || pods[1].UID != "u-2" {
		t.Fatalf("got %v", pods)
	}
	p := pods[0]
	if !IsVirtual(p) || Of(p) != "ns/warm" || p.Labels["app"] != "web" || *p.Spec.Priority != VirtualPriority {
		t.Errorf("chunk %+v", p.ObjectMeta)
	}
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].Name != "tmp" || len(p.Spec.Containers[0].VolumeMounts) != 1 {
		t.Errorf("claim volumes kept: %+v %+v", p.Spec.Volumes, p.Spec.Containers[0].VolumeMounts)
	}
	if *r.Generation != 3 {
		t.Errorf("generation %v", r.Generation)
	}
	// Where one pass put them, and what it says.
	node := &provisioning.Node{Name: "n1"}
	res := &provisioning.Results{ExistingNodes: []*provisioning.ExistingNodePlan{{Node: node, Pods: []*corev1.Pod{pods[0]}}},
		NewNodeClaims: []*provisioning.NodeClaimPlan{{Pods: []*corev1.Pod{pods[1]}}}}
	by, on := Place(res)
	if by["ns/warm"] != (Placement{Existing: 1, New: 1}) || on["n1"] != 1 {
		t.Fatalf("placement %v %v", by, on)
	}
	c := ProvisioningCondition(r, by["ns/warm"])
	if c.Reason != v1beta1.ReasonRequiresNewCapacity || c.Message != "1/2 virtual pods required new capacity, 0 failed" {
		t.Errorf("%+v", c)
	}
	if c := ProvisioningCondition(r, Placement{Existing: 2}); c.Status != metav1.ConditionTrue || c.Message != "All 2 virtual pods fit on existing capacity" {
		t.Errorf("%+v", c)
	}
}

// TestTargetOf: the kinds a buffer may name, and nothing else.
func TestTargetOf(t *testing.T) {
	three := int32(3)
	tmpl := chunk()
	for _, obj := range []any{&appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &three, Template: tmpl}},
		&appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: &three, Template: tmpl}},
		&appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: &three, Template: tmpl}}} {
		got, ok := TargetOf(obj)
		if !ok || *got.Replicas != 3 || got.Template.Labels["app"] != "web" || got.Generation != nil {
			t.Errorf("%T: %+v, %v", obj, got, ok)
		}
	}
	got, ok := TargetOf(&corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Generation: 4}, Template: tmpl})
	if !ok || got.Replicas != nil || *got.Generation != 4 {
		t.Errorf("PodTemplate: %+v, %v", got, ok)
	}
	if _, ok := TargetOf(&appsv1.DaemonSet{}); ok {
		t.Error("a DaemonSet is no buffer's target")
	}
}
