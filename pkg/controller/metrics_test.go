package controller

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// series are a gauge vector's series: their labels joined by "/" → value.
func series(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	c.Collect(ch)
	close(ch)
	out := map[string]float64{}
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		key := ""
		for i, l := range d.GetLabel() {
			if i > 0 {
				key += "/"
			}
			key += l.GetName() + "=" + l.GetValue()
		}
		out[key] = d.GetGauge().GetValue()
	}
	return out
}

func boundPod(name, node, cpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// The gauges follow the Store: a node's pods' requests, a pool's cost at
// its nodes' prices (a claim still launching costs nothing yet), and the
// series of a node that is gone are dropped.
func TestMetricsUpdater(t *testing.T) {
	s := state.NewStore(state.WaitForScheduler)
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "metrics-pool"}}
	s.SetNodePoolsAndTypes([]*v1.NodePool{np}, map[string][]*cloudprovider.InstanceType{"metrics-pool": {instanceType("m.4x", 0.25)}})
	launched := []v1.Condition{{Type: v1.ConditionLaunched, Status: metav1.ConditionTrue}, {Type: v1.ConditionRegistered, Status: metav1.ConditionTrue},
		{Type: v1.ConditionInitialized, Status: metav1.ConditionTrue}}
	s.SetNodeClaim(&v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "metrics-pool-a", Labels: map[string]string{v1.LabelNodePool: "metrics-pool"}},
		Status: v1.NodeClaimStatus{ProviderID: "p:///zone-a/i-1", NodeName: "metrics-node", Conditions: launched}})
	s.SetNodeClaim(&v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "metrics-pool-b", Labels: map[string]string{v1.LabelNodePool: "metrics-pool"}},
		Spec: v1.NodeClaimSpec{Requirements: []v1.NodeSelectorRequirementWithMinValues{
			{Key: v1.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m.4x"}}}}})
	s.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "metrics-node", Labels: map[string]string{v1.LabelNodePool: "metrics-pool",
		v1.LabelInstanceType: "m.4x", v1.LabelZone: "zone-a", v1.LabelCapacityType: v1.CapacityTypeOnDemand}},
		Spec: corev1.NodeSpec{ProviderID: "p:///zone-a/i-1"}})
	s.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "metrics-system"}, Spec: corev1.NodeSpec{ProviderID: "p:///zone-a/i-0"}})
	s.SetPod(boundPod("web", "metrics-node", "1500m"))
	s.SetPod(boundPod("dns", "metrics-system", "250m"))

	m := &metricsUpdater{store: s, clock: clocktesting.NewFakeClock(t0)}
	m.update()
	requests := series(t, nodePodRequests)
	for key, want := range map[string]float64{
		"node_name=metrics-node/nodepool=metrics-pool/resource_type=cpu": 1.5,
		"node_name=metrics-system/nodepool=/resource_type=cpu":           0.25,
	} {
		if got, ok := requests[key]; !ok || got != want {
			t.Errorf("karpenter_nodes_total_pod_requests{%s} = %v (set: %v), want %v", key, got, ok, want)
		}
	}
	for key := range requests {
		if key == "node_name=metrics-pool-b/nodepool=metrics-pool/resource_type=cpu" {
			t.Error("a claim still launching has requests series")
		}
	}
	if got := series(t, nodePoolCost)["nodepool=metrics-pool"]; got != 0.25 {
		t.Errorf("joiner_nodepool_cost_per_hour_usd{nodepool=metrics-pool} = %v, want 0.25 (one m.4x; the launching claim costs nothing yet)", got)
	}

	s.DeleteNode("metrics-system")
	m.update()
	for key := range series(t, nodePodRequests) {
		if key == "node_name=metrics-system/nodepool=/resource_type=cpu" {
			t.Error("the series of a node that is gone are kept")
		}
	}
}
