package controller

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTrimPod: what scheduling reads stays, the rest of a container and
// the managedFields go.
func TestTrimPod(t *testing.T) {
	c := corev1.Container{Name: "app", Image: "app:1",
		Env:     []corev1.EnvVar{{Name: "SECRET", Value: "x"}},
		Command: []string{"run"}, Args: []string{"--fast"},
		Ports:          []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}},
		LivenessProbe:  &corev1.Probe{},
		VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/d"}},
		Resources:      corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		ReadinessProbe: &corev1.Probe{}, Lifecycle: &corev1.Lifecycle{}}
	always := corev1.ContainerRestartPolicyAlways
	sidecar := c
	sidecar.RestartPolicy = &always
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		Annotations: map[string]string{"karpenter.sh/do-not-disrupt": "true"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{c}, InitContainers: []corev1.Container{sidecar},
			Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
			Volumes:     []corev1.Volume{{Name: "data"}}, NodeSelector: map[string]string{"zone": "a"}},
		Status: corev1.PodStatus{Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message: "0/3 nodes are available: 3 Insufficient cpu."}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "app:1", ImageID: "sha256:x", ContainerID: "containerd://y", RestartCount: 2,
				State:     corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating", Message: "pulling"}},
				Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}}}
	out, err := TrimPod(p)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	if got.ManagedFields != nil {
		t.Error("managedFields kept")
	}
	for _, tc := range []corev1.Container{got.Spec.Containers[0], got.Spec.InitContainers[0]} {
		if tc.Env != nil || tc.Command != nil || tc.Args != nil || tc.LivenessProbe != nil || tc.ReadinessProbe != nil || tc.Lifecycle != nil {
			t.Errorf("container %s kept what no decision reads: %+v", tc.Name, tc)
		}
		if tc.Resources.Requests.Cpu().String() != "1" || len(tc.Ports) != 1 || tc.Ports[0].HostPort != 8080 || len(tc.VolumeMounts) != 1 {
			t.Errorf("container %s lost what scheduling reads: %+v", tc.Name, tc)
		}
	}
	if got.Spec.InitContainers[0].RestartPolicy == nil || got.Annotations["karpenter.sh/do-not-disrupt"] != "true" ||
		len(got.Spec.Tolerations) != 1 || len(got.Spec.Volumes) != 1 || got.Spec.NodeSelector["zone"] != "a" {
		t.Errorf("the pod lost what scheduling reads: %+v", got)
	}
	cond, cs := got.Status.Conditions[0], got.Status.ContainerStatuses[0]
	if cond.Reason != corev1.PodReasonUnschedulable || cond.Status != corev1.ConditionFalse || cond.Message != "" {
		t.Errorf("the PodScheduled condition: %+v; want its reason and status without the message", cond)
	}
	if cs.Image != "" || cs.ImageID != "" || cs.ContainerID != "" || cs.State.Waiting.Message != "" {
		t.Errorf("the container status kept what no decision reads: %+v", cs)
	}
	if cs.Resources.Requests.Cpu().String() != "2" || cs.RestartCount != 2 || cs.State.Waiting.Reason != "ContainerCreating" || got.Status.Phase != corev1.PodPending {
		t.Errorf("the pod's status lost what decisions read: %+v", got.Status)
	}
	if n := &(corev1.Node{}); func() bool { o, _ := TrimPod(n); return o != n }() {
		t.Error("a Node was changed")
	}
}

// TestHeapDump: --enable-profiling's /debug/heapdump answers with the
// process's heap dump, in the format hack/heapdump reads.
func TestHeapDump(t *testing.T) {
	srv := httptest.NewServer(ProfilingHandlers()["/debug/heapdump"])
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(body.Bytes(), []byte("go1.7 heap dump\n")) || body.Len() < 1<<16 {
		t.Errorf("status %d, %d bytes beginning %q; want a heap dump", resp.StatusCode, body.Len(), body.Bytes()[:min(16, body.Len())])
	}
}
