package plan_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/plan"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
)

// twoFuseOverlays set the same extended resource on every type at two
// weights: Joiner takes the higher weight's 1 (as upstream documents),
// upstream's code the lower weight's 10.
const twoFuseOverlays = `---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: fuse-one}
spec:
  weight: 20
  requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
  capacity: {example.com/fuse: "1"}
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: fuse-ten}
spec:
  weight: 10
  requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
  capacity: {example.com/fuse: "10"}
`

// TestHostsDecideAlikeUnderOnePolicy: the simulator and plan (over the
// simulated cluster, plan --scenario's way) make the same first
// provisioning decision under each policy — here the NodeOverlays' merge,
// which the simulator once took from the default policy whatever it was
// given — and the two policies do decide differently on this input.
func TestHostsDecideAlikeUnderOnePolicy(t *testing.T) {
	var docs []string
	docs = append(docs, pool("general", "1", "", "", ""), twoFuseOverlays)
	for i := range 6 {
		docs = append(docs, fmt.Sprintf(`---
apiVersion: v1
kind: Pod
metadata: {name: fuse-%d}
spec:
  containers: [{name: c, image: c, resources: {requests: {cpu: 100m, memory: 128Mi, example.com/fuse: "1"}, limits: {example.com/fuse: "1"}}}]
`, i))
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte(scenarioYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(strings.Join(docs, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	claims := map[provisioning.Decisions]int{}
	for _, d := range []provisioning.Decisions{provisioning.DecisionsJoiner, provisioning.DecisionsKarpenter} {
		t.Run(string(d), func(t *testing.T) {
			policy := provisioning.Policy{Decisions: d}
			in, err := scenario.Load(os.DirFS(dir), ".", "hosts")
			if err != nil {
				t.Fatal(err)
			}
			var first *sim.ProvisioningPass
			if _, err := sim.Run(context.Background(), in, os.DirFS(dir), ".", sim.Options{Policy: policy, OnProvision: func(p sim.ProvisioningPass) {
				if first == nil {
					first = &p
				}
			}}); err != nil {
				t.Fatal(err)
			}
			if first == nil {
				t.Fatal("the simulator made no provisioning pass")
			}
			var simulated []string
			for _, l := range first.Launches {
				simulated = append(simulated, l.NodeClaim.Labels["karpenter.sh/nodepool"])
			}
			in, err = scenario.Load(os.DirFS(dir), ".", "hosts")
			if err != nil {
				t.Fatal(err)
			}
			m, err := sim.RunUntil(context.Background(), in, os.DirFS(dir), ".", first.At.Add(-1), sim.Options{Policy: policy})
			if err != nil {
				t.Fatal(err)
			}
			p := plan.Run(context.Background(), m.Cluster, m.At, plan.Options{Policy: policy})
			var planned []string
			pods := 0
			for _, nc := range p.NodeClaims {
				planned = append(planned, nc.NodePool)
				pods += len(nc.Pods)
			}
			sort.Strings(simulated)
			sort.Strings(planned)
			if strings.Join(simulated, " ") != strings.Join(planned, " ") || pods != 6 {
				t.Errorf("simulator's first pass launched %v, plan over the cluster just before it plans %v for %d pods (want the same claims, for the 6 pods)", simulated, planned, pods)
			}
			claims[d] = len(planned)
		})
	}
	if claims[provisioning.DecisionsJoiner] != 6 || claims[provisioning.DecisionsKarpenter] != 1 {
		t.Errorf("claims by decisions %v, want joiner 6 (one fuse a node, the weight-20 overlay's) and karpenter 1 (ten, the weight-10 overlay's, as upstream's code merges)", claims)
	}
}
