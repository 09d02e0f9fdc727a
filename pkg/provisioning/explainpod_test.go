package provisioning

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// TestExplainPod: each NodePool's verdict for a pod, in weight order, with
// the first blocking reason and its evidence — an untolerated taint, a
// requirement in conflict, an exhausted limit with its usage, the largest
// instance type with the pod's requests — and, for the pools that can run
// it, a claim with its instance types; the pod itself goes where a
// provisioning pass puts it.
func TestExplainPod(t *testing.T) {
	small := []*cloudprovider.InstanceType{it("m", 2)}
	pools := []*v1.NodePool{
		pool("gpu", weight(50), taint("nvidia.com/gpu", "true", corev1.TaintEffectNoSchedule)),
		pool("arm", weight(40), requirement(v1.LabelArch, corev1.NodeSelectorOpIn, "arm64")),
		pool("capped", weight(30), limits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")})),
		pool("tiny", weight(20)),
		pool("general", weight(10)),
		pool("spare", weight(5)),
	}
	snap := &Snapshot{NodePools: pools, InstanceTypes: map[string][]*cloudprovider.InstanceType{}}
	for _, p := range pools {
		snap.InstanceTypes[p.Name] = standardTypes()
	}
	snap.InstanceTypes["tiny"] = small
	used := readyNode("capped-1", "zone-a", 8, pod("8", "1Gi")) // full
	used.NodePool, used.Capacity = "capped", used.Allocatable
	snap.Nodes = []*Node{used}
	target := pod("3", "4Gi")
	snap.Pods = []*corev1.Pod{target}

	got := ExplainPod(context.Background(), snap, target)
	want := []struct{ pool, reason string }{
		{"gpu", "nvidia.com/gpu=true:NoSchedule"},
		{"arm", "arm64"},
		{"capped", "cpu 8 of 8"},
		{"tiny", "cpu"},
		{"general", ""},
		{"spare", ""},
	}
	if len(got.Pools) != len(want) {
		t.Fatalf("verdicts for %d pools, want %d", len(got.Pools), len(want))
	}
	for i, w := range want {
		v := got.Pools[i]
		if v.NodePool != w.pool {
			t.Errorf("verdict %d is NodePool %s, want %s (weight order)", i, v.NodePool, w.pool)
			continue
		}
		switch {
		case w.reason == "" && (v.Reason != "" || v.Plan == nil || len(v.Plan.InstanceTypes) == 0):
			t.Errorf("NodePool %s can run the pod: reason %q, plan %v", v.NodePool, v.Reason, v.Plan)
		case w.reason != "" && (!strings.Contains(v.Reason, w.reason) || v.Plan != nil):
			t.Errorf("NodePool %s: %q, want a reason naming %q", v.NodePool, v.Reason, w.reason)
		}
	}
	if tiny := got.Pools[3].Reason; !strings.Contains(tiny, "m.2x") {
		t.Errorf("the tiny pool's reason names its largest type: %q", tiny)
	}
	if got.Claim == nil || got.Claim.NodePool.Name != "general" || got.Existing != "" || got.Error != nil {
		t.Errorf("a provisioning pass puts the pod on a claim of general: claim %v, existing %q, error %v", got.Claim, got.Existing, got.Error)
	}
	if cheapest := got.Pools[4].Plan.InstanceTypes[0].Name; cheapest != "m.4x" && cheapest != "c.4x" {
		t.Errorf("general's cheapest type for 3 cores: %s", cheapest)
	}
}
