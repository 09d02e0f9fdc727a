package plan_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/plan"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
)

// staticPool is a static NodePool of five m6i.large nodes whose budget
// allows two disruptions at once.
const staticPool = `---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: fixed}
spec:
  replicas: 5
  template:
    spec:
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m6i.large]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  disruption:
    budgets: [{nodes: "2"}]
`

// TestPlanStaticScaleDown: a static NodePool of five nodes lowered to one
// replica removes the two its budget allows and holds the other two,
// saying why; with karpenter's decisions it removes all four.
func TestPlanStaticScaleDown(t *testing.T) {
	m := simulated(t, 30*time.Minute, staticPool)
	for i, np := range m.Cluster.NodePools {
		if np.Name == "fixed" {
			cp := np.DeepCopy()
			one := int64(1)
			cp.Spec.Replicas = &one
			m.Cluster.NodePools[i] = cp
		}
	}
	for _, tc := range []struct {
		decisions    provisioning.Decisions
		remove, held int
		why          string
	}{
		{provisioning.DecisionsJoiner, 2, 2, "static NodePool fixed: 4 surplus node(s), 2 removed now, 2 wait for the budget: budgets[0] (nodes 2) allows 2 disruption(s) now"},
		{provisioning.DecisionsKarpenter, 4, 0, ""},
	} {
		t.Run(string(tc.decisions), func(t *testing.T) {
			p := plan.Run(context.Background(), m.Cluster, m.At, plan.Options{Policy: provisioning.Policy{Decisions: tc.decisions}})
			if len(p.Static) != 1 {
				t.Fatalf("want one static scaling, got %+v", p.Static)
			}
			s := p.Static[0]
			if s.NodePool != "fixed" || s.Replicas != 1 || len(s.Remove) != tc.remove || len(s.Held) != tc.held || s.Why != tc.why {
				t.Errorf("got %+v; want %d removed, %d held, why %q", s, tc.remove, tc.held, tc.why)
			}
			seen := map[string]bool{}
			for _, n := range append(append([]string{}, s.Remove...), s.Held...) {
				if seen[n] || !strings.HasPrefix(n, "fixed-") {
					t.Errorf("node %s listed twice or not the pool's: %+v", n, s)
				}
				seen[n] = true
			}
		})
	}
}
