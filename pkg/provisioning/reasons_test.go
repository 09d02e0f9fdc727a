package provisioning

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
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

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestReasonWords keeps the words of every reason code (Reason.Error is
// the one place they are made): testdata/reasons.golden, rewritten by
// go test -run TestReasonWords -update.
func TestReasonWords(t *testing.T) {
	reqs := scheduling.NewRequirements(scheduling.NewRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, "m5.large"))
	reasons := []*Reason{
		{Code: ReasonStatic, Replicas: 2},
		{Code: ReasonNoInstanceType, Requirements: reqs, OfNodePool: true},
		{Code: ReasonNoInstanceType, Requirements: reqs},
		{Code: ReasonTooLarge, Resource: corev1.ResourceCPU, Needed: "64", InstanceType: "m5.8xlarge", Allocatable: "31850m"},
		{Code: ReasonTooLarge, Resource: corev1.ResourceMemory, Needed: "300Gi", InstanceType: "r5.8xlarge", Allocatable: "250Gi", DaemonSets: "1Gi"},
		{Code: ReasonHostPort, Port: 9100, Protocol: corev1.ProtocolTCP, ByDaemonSet: true},
		{Code: ReasonHostPort},
		{Code: ReasonLimits, Limits: []LimitUse{{Resource: corev1.ResourceCPU, Used: "8", Limit: "8"}, {Resource: corev1.ResourceMemory, Used: "30Gi", Limit: "64Gi"}}},
		{Code: ReasonMinValues, Key: "karpenter.k8s.aws/instance-family", MinValues: 3, Distinct: 2},
		{Code: ReasonNoRoom},
		{Code: ReasonNoRemainingType, Requirements: reqs},
		{Code: ReasonNodeFull},
		{Code: ReasonNodeDeleting},
		{Code: ReasonNotPlaced},
		{Code: ReasonReservedCapacity},
		{Code: ReasonReservedCapacity, LastReservation: true},
		{Code: ReasonDRA},
	}
	var b strings.Builder
	for _, r := range reasons {
		fmt.Fprintf(&b, "%s: %s\n", r.Code, r.Error())
	}
	const golden = "testdata/reasons.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("the reasons' words changed (go test -run TestReasonWords -update to accept):\n%s", b.String())
	}
}

// TestReasonEvidence: each kind of reason a NodePool gives reaches Solve's
// PodError with its code, and ExplainPod's verdicts with its evidence.
func TestReasonEvidence(t *testing.T) {
	replicas := int64(2)
	static := pool("static", func(np *v1.NodePool) { np.Spec.Replicas = &replicas })
	for _, tc := range []struct {
		name string
		pool *v1.NodePool
		pod  *corev1.Pod
		code ReasonCode
		want func(*Reason) bool
	}{
		{"static", static, pod("1", "1Gi"), ReasonStatic, func(r *Reason) bool { return r.Replicas == 2 }},
		{"taint", pool("tainted", taint("dedicated", "db", corev1.TaintEffectNoSchedule)), pod("1", "1Gi"), ReasonTaint, nil},
		{"requirements", pool("zoned", requirement(v1.LabelZone, corev1.NodeSelectorOpIn, "zone-a")), pod("1", "1Gi", nodeSelector(v1.LabelZone, "zone-b")), ReasonRequirements, nil},
		{"no type", pool("general"), pod("1", "1Gi", nodeSelector(v1.LabelInstanceType, "x9.huge")), ReasonNoInstanceType,
			func(r *Reason) bool { return !r.OfNodePool && r.Requirements.Has(v1.LabelInstanceType) }},
		{"too large", pool("general"), pod("1000", "1Gi"), ReasonTooLarge,
			func(r *Reason) bool {
				return r.Resource == corev1.ResourceCPU && r.Needed == "1000"
			}},
		{"limits", pool("limited", limits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})), pod("2", "1Gi"), ReasonLimits,
			func(r *Reason) bool {
				return len(r.Limits) == 1 && r.Limits[0].Resource == corev1.ResourceCPU && r.Limits[0].Limit == "1"
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := solve(t, []*v1.NodePool{tc.pool}, standardTypes(), []*corev1.Pod{tc.pod})
			if len(res.Unschedulable) != 1 || res.Unschedulable[0].CodeByNodePool[tc.pool.Name] != tc.code {
				t.Fatalf("Solve: %+v, want code %s", res.Unschedulable, tc.code)
			}
			snap := &Snapshot{NodePools: []*v1.NodePool{tc.pool}, InstanceTypes: map[string][]*cloudprovider.InstanceType{tc.pool.Name: standardTypes()}, Pods: []*corev1.Pod{tc.pod}}
			ex := ExplainPod(context.Background(), snap, tc.pod)
			if len(ex.Pools) != 1 || ex.Pools[0].Code != tc.code {
				t.Fatalf("ExplainPod: %+v, want code %s", ex.Pools, tc.code)
			}
			if tc.want == nil {
				return
			}
			var r *Reason
			if !errors.As(ex.Pools[0].Err, &r) || !tc.want(r) {
				t.Errorf("evidence %+v does not show it (%s)", r, ex.Pools[0].Reason)
			}
		})
	}
}
