package provisioning

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	corev1 "k8s.io/api/core/v1"
)

// TestClaimNamesAtMostMaxInstanceTypes: as upstream's, a NodeClaim names
// the cheapest MaxInstanceTypes of the types that fit. A minValues the
// cheapest ones cannot keep fails the claim (its pods say why), or under
// BestEffort is lowered.
func TestClaimNamesAtMostMaxInstanceTypes(t *testing.T) {
	// 70 families of sizes 1–10 cores: 700 types, priced by core, so the
	// cheapest 600 have sizes 1–9 only.
	var its []*cloudprovider.InstanceType
	for f := range 70 {
		for cpu := int64(1); cpu <= 10; cpu++ {
			its = append(its, it(fmt.Sprintf("fam%02d", f), cpu))
		}
	}
	res := solve(t, []*v1.NodePool{pool("p")}, its, times(1, func() *corev1.Pod { return pod("500m", "1Gi") }))
	if len(res.NewNodeClaims) != 1 {
		t.Fatalf("want one claim, got %d (unschedulable %v)", len(res.NewNodeClaims), res.Unschedulable)
	}
	plan := res.NewNodeClaims[0]
	if len(plan.InstanceTypes) != MaxInstanceTypes {
		t.Fatalf("the claim names %d instance types, want %d", len(plan.InstanceTypes), MaxInstanceTypes)
	}
	for i, t9 := range plan.InstanceTypes {
		if cpu := t9.Requirements.Get("cpu").Values()[0]; cpu == "10" {
			t.Fatalf("type %d, %s, is among the 100 dearest", i, t9.Name)
		}
	}

	// Ten distinct sizes asked for: the cheapest 600 have nine.
	sizes := func() []string {
		var out []string
		for cpu := 1; cpu <= 10; cpu++ {
			out = append(out, strconv.Itoa(cpu))
		}
		return out
	}()
	strict := pool("p", minValues("cpu", 10, sizes...))
	res = solve(t, []*v1.NodePool{strict}, its, times(1, func() *corev1.Pod { return pod("500m", "1Gi") }))
	if len(res.NewNodeClaims) != 0 || len(res.Unschedulable) != 1 {
		t.Fatalf("Strict: %d claims, %d unschedulable; want the pod left pending", len(res.NewNodeClaims), len(res.Unschedulable))
	}
	e := res.Unschedulable[0]
	if e.CodeByNodePool["p"] != ReasonMinValues || !strings.Contains(e.Reason, "cheapest 600") {
		t.Errorf("Strict: code %q, reason %q; want MinValues, naming the truncation", e.CodeByNodePool["p"], e.Reason)
	}
	res = solve(t, []*v1.NodePool{strict}, its, times(1, func() *corev1.Pod { return pod("500m", "1Gi") }),
		func(s *Snapshot) { s.Policy.MinValues = MinValuesBestEffort })
	if len(res.NewNodeClaims) != 1 || !res.NewNodeClaims[0].MinValuesRelaxed || len(res.NewNodeClaims[0].InstanceTypes) != MaxInstanceTypes {
		t.Fatalf("BestEffort: %d claims (unschedulable %v); want one, its minValues lowered, naming %d types", len(res.NewNodeClaims), res.Unschedulable, MaxInstanceTypes)
	}
	if got := *res.NewNodeClaims[0].Requirements.Get("cpu").MinValues; got != 9 {
		t.Errorf("BestEffort: minValues lowered to %d, want the 9 sizes the cheapest 600 have", got)
	}
}
