package provisioning

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// TestReasonCodes: a pod a NodePool's limits leave no room for, and a pod
// whose zonal anti-affinity no zone is left for, carry their reasons'
// codes — in Solve's PodError and in ExplainPod's verdicts — so callers act
// on the kind, never on the words.
func TestReasonCodes(t *testing.T) {
	limited := pool("limited", limits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}))
	res := solve(t, []*v1.NodePool{limited}, standardTypes(), []*corev1.Pod{pod("2", "1Gi")})
	if len(res.Unschedulable) != 1 || res.Unschedulable[0].CodeByNodePool["limited"] != ReasonLimits {
		t.Fatalf("a pod over the limits: %+v, want code %s", res.Unschedulable, ReasonLimits)
	}
	apart := func() *corev1.Pod {
		return pod("100m", "128Mi", label("app", "apart"), affinity(&corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelTopologyZone,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "apart"}}}}}}))
	}
	pods := times(8, apart)
	res = solve(t, []*v1.NodePool{pool("general")}, standardTypes(), pods)
	if len(res.Unschedulable) == 0 {
		t.Fatal("eight pods apart by zone all placed: the fixture has fewer zones than that, the test needs it")
	}
	for _, pe := range res.Unschedulable {
		if pe.CodeByNodePool["general"] != ReasonTopology {
			t.Errorf("%s: code %q (%s), want %s", pe.Pod.Name, pe.CodeByNodePool["general"], pe.ByNodePool["general"], ReasonTopology)
		}
	}
	snap := &Snapshot{NodePools: []*v1.NodePool{limited}, InstanceTypes: map[string][]*cloudprovider.InstanceType{"limited": standardTypes()}, Pods: []*corev1.Pod{pod("2", "1Gi")}}
	ex := ExplainPod(context.Background(), snap, snap.Pods[0])
	if len(ex.Pools) != 1 || ex.Pools[0].Code != ReasonLimits {
		t.Errorf("ExplainPod verdicts %+v, want the limits code", ex.Pools)
	}
}
