package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
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

// value is a counter's value.
func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}

// TestDisruptionMetrics: a disrupted claim is counted with upstream's
// labels — its pool's consolidation policy for a consolidation, the
// termination mode its terminationGracePeriod gives — and the pods that had
// to move with it; a judged move is counted, a Balanced one's score
// observed, and an approved one announced with its score.
func TestDisruptionMetrics(t *testing.T) {
	claim := func(pool string, grace *metav1.Duration) *v1.NodeClaim {
		return &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: pool + "-a", Labels: map[string]string{v1.LabelNodePool: pool, v1.LabelCapacityType: v1.CapacityTypeSpot}},
			Spec: v1.NodeClaimSpec{TerminationGracePeriod: grace}}
	}
	countDisrupted(claim("dm-graceful", nil), "underutilized", v1.ConsolidationPolicyWhenEmptyOrUnderutilized, 7)
	countDisrupted(claim("dm-eventual", &metav1.Duration{Duration: time.Hour}), "drifted", "", 2)
	countDisrupted(claim("dm-forceful", &metav1.Duration{}), "liveness", "", -1)
	for _, tc := range []struct {
		labels     []string
		nodeClaims float64
		pods       float64
	}{
		{[]string{"dm-graceful", "underutilized", "spot", "when_empty_or_underutilized", "graceful"}, 1, 7},
		{[]string{"dm-eventual", "drifted", "spot", "", "eventual"}, 1, 2},
		{[]string{"dm-forceful", "liveness", "spot", "", "forceful"}, 1, 0},
	} {
		if got := value(t, nodeClaimsDisrupted.WithLabelValues(tc.labels...)); got != tc.nodeClaims {
			t.Errorf("disrupted_total%v = %v, want %v", tc.labels, got, tc.nodeClaims)
		}
		if got := value(t, podsDisruptionInitiated.WithLabelValues(tc.labels...)); got != tc.pods {
			t.Errorf("pods disruption_initiated_total%v = %v, want %v", tc.labels, got, tc.pods)
		}
	}

	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "dm-balanced"}}
	nc := claim("dm-balanced", nil)
	dc := &disruption.Snapshot{NodePools: []*v1.NodePool{np},
		Nodes: []*disruption.Candidate{{Node: &provisioning.Node{Name: "n1"}, NodeClaim: nc, NodePool: np.Name}}}
	rec := events.NewFakeRecorder(10)
	d := &disrupter{events: recorder{r: rec}}
	good := disruption.Score{Savings: 0.8, Disruption: 0.5}
	poor := disruption.Score{Savings: 0.2, Disruption: 0.8}
	d.moves(dc, []disruption.Move{
		{Method: disruption.MethodSingleNode, NodePool: np.Name, Policy: v1.ConsolidationPolicyBalanced, Nodes: []string{"n1"}, Scored: true, Score: good, Approved: true},
		{Method: disruption.MethodMultiNode, NodePool: np.Name, Policy: v1.ConsolidationPolicyBalanced, Nodes: []string{"n1", "n2"}, Scored: true, Score: good, Approved: true},
		{Method: disruption.MethodSingleNode, NodePool: np.Name, Policy: v1.ConsolidationPolicyBalanced, Nodes: []string{"n1"}, Scored: true, Score: poor},
		{Method: disruption.MethodSingleNode, NodePool: "dm-eager", Policy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized, Nodes: []string{"n9"}, Approved: true},
	})
	for _, tc := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"approved", "dm-balanced", "Balanced"}, 2},
		{[]string{"rejected", "dm-balanced", "Balanced"}, 1},
		{[]string{"approved", "dm-eager", "WhenEmptyOrUnderutilized"}, 1},
	} {
		if got := value(t, consolidationMoves.WithLabelValues(tc.labels...)); got != tc.want {
			t.Errorf("consolidation_moves_total%v = %v, want %v", tc.labels, got, tc.want)
		}
	}
	if n := len(series(t, consolidationScore)); n != 2 {
		t.Errorf("consolidation_score has %d series, want 2 (approved and rejected of dm-balanced; none for an unscored pool)", n)
	}
	var got []string
	for len(rec.Events) > 0 {
		got = append(got, <-rec.Events)
	}
	want := []string{
		"Normal ConsolidationApproved score 1.60 >= threshold 0.50 (k: 2, savings 80.0%, disruption 50.0%)",
		"Normal ConsolidationApproved score 1.60 >= threshold 0.50 (k: 2, savings 80.0%, disruption 50.0%)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
