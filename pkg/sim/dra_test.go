package sim

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// TestExampleDRAGPU: pods that ask for GPUs through ResourceClaims. Under
// upstream's default (--ignore-dra-requests=true) none of them runs, each
// says why, and the DRA objects are named as left out. Modelled, each
// inference pod gets a claim made from its template, allocated to one GPU
// of the node it runs on and reserved for it; no GPU is allocated twice;
// the fine-tuning job gets four L4s on one node, as its first alternative
// asks; nodes publish their GPUs as ResourceSlices of their own.
func TestExampleDRAGPU(t *testing.T) {
	_, rep := runExample(t, "dra-gpu", nil)
	if rep.Pods.NeverRan != 7 {
		t.Errorf("ignored by default: %d pods never ran (%v), want the 7 that ask for devices", rep.Pods.NeverRan, rep.Pods.NeverRanPods)
	}
	for _, n := range rep.Pods.NeverRanPods {
		if !strings.Contains(n.Reason, "Dynamic Resource Allocation requirements") {
			t.Errorf("%s never ran for %q, want the DRA reason", n.Workload, n.Reason)
		}
	}
	left := map[string]bool{}
	for _, ig := range rep.Ignored {
		left[ig.Kind+"/"+ig.Name] = true
	}
	for _, want := range []string{"DeviceClass/gpu.nvidia.com", "ResourceClaimTemplate/one-gpu", "ResourceClaimTemplate/l4-four-else-two"} {
		if !left[want] {
			t.Errorf("%s is not named as left out: %v", want, rep.Ignored)
		}
	}

	e, rep := runExampleWith(t, "dra-gpu", nil, Options{Policy: provisioning.Policy{ModelDRA: true}})
	common(t, rep)
	// No churn: a consolidation's simulation frees only the moving pods'
	// devices (once it freed every claim's, and GPU nodes were replaced
	// by their own type every ten minutes).
	if rep.Nodes.Launched > 5 {
		t.Errorf("%d nodes launched over four hours of a steady workload", rep.Nodes.Launched)
	}
	objs := e.st.DRA()
	published := map[string]int{} // GPUs by node
	for _, s := range objs.Slices {
		published[*s.Spec.NodeName] += len(s.Spec.Devices)
	}
	taken := map[string]string{} // device → claim
	for _, c := range objs.Claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			id := r.Driver + "/" + r.Pool + "/" + r.Device
			if other, ok := taken[id]; ok {
				t.Errorf("device %s allocated to %s and %s", id, other, c.Name)
			}
			taken[id] = c.Name
		}
	}
	inference := livePods(e, "Deployment/inference")
	if len(inference) != 6 {
		t.Fatalf("%d inference pods running, want 6", len(inference))
	}
	for _, p := range inference {
		c := e.st.ResourceClaim(p.pod.Namespace, p.pod.Name+"-gpu")
		if c == nil || c.Status.Allocation == nil || len(c.Status.ReservedFor) != 1 || c.Status.ReservedFor[0].Name != p.pod.Name {
			t.Fatalf("pod %s: claim %+v, want one allocated and reserved for it", p.pod.Name, c)
		}
		if res := c.Status.Allocation.Devices.Results; len(res) != 1 || res[0].Pool != e.nodeOf(p).name || published[e.nodeOf(p).name] == 0 {
			t.Errorf("pod %s on %s: allocated %v, want one GPU that node published", p.pod.Name, e.nodeOf(p).name, res)
		}
	}
	perNode := map[string]int{}
	for _, owner := range taken {
		perNode[owner]++
	}
	finetune := 0
	for _, c := range objs.Claims {
		if strings.HasPrefix(c.Name, "finetune-") && c.Status.Allocation != nil {
			finetune = len(c.Status.Allocation.Devices.Results)
		}
	}
	ran := rep.Pods.ByWorkload["Job/finetune"]
	if ran.Ran != 1 {
		t.Errorf("the fine-tuning job ran %d pods, want 1", ran.Ran)
	}
	if finetune != 0 && finetune != 4 { // its claim goes with the pod when the job ends
		t.Errorf("the fine-tuning claim holds %d GPUs, want its first alternative's 4", finetune)
	}
	for node, n := range published {
		used := 0
		for id := range taken {
			if strings.Contains(id, "/"+node+"/") {
				used++
			}
		}
		if used > n {
			t.Errorf("node %s: %d GPUs allocated of %d", node, used, n)
		}
	}
	if len(published) == 0 || fmt.Sprint(rep.Notes) == "" {
		t.Error("no node published devices")
	}
}

// TestDaemonSetDeviceClaimsNamed: a DaemonSet whose pods ask for devices
// is named in the notes, not passed over; with device claims ignored none
// of its pods runs.
func TestDaemonSetDeviceClaimsNamed(t *testing.T) {
	e, rep := runExample(t, "dra-gpu", func(in *scenario.Input) {
		tpl := "one-gpu"
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "gpu-monitor", Namespace: "default"}}
		ds.Spec.Template.Spec = corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tpl}},
			Containers: []corev1.Container{{Name: "c", Image: "x"}}}
		in.DaemonSets = append(in.DaemonSets, ds)
	})
	for _, n := range e.nodes {
		for _, p := range e.podsOn(n) {
			if strings.HasPrefix(p.pod.Name, "gpu-monitor-") {
				t.Errorf("DaemonSet pod %s runs on %s, though no device is modelled", p.pod.Name, n.name)
			}
		}
	}
	for _, n := range rep.Notes {
		if strings.Contains(n, "DaemonSet gpu-monitor asks for devices") && strings.Contains(n, "left out of a new node's overhead") {
			return
		}
	}
	t.Errorf("no note names the DaemonSet's device claims: %v", rep.Notes)
}
