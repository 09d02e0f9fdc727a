package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

const repairPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m6i.large]}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 24h}
`

// ten pods of a core each: ten m6i.large nodes (two cores, one for the
// pod with the overhead).
const repairApp = `apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  replicas: 10
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers: [{name: c, image: x, resources: {requests: {cpu: "1", memory: 1Gi}}}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: app}}}
`

// Failed nodes are replaced once their Ready Unknown has lasted the
// toleration (30 minutes), their pods evicted after five; never while
// more than 20 % of the pool is unhealthy.
func TestNodeRepair(t *testing.T) {
	tests := []struct {
		name string
		rate string
		held bool // some failures must have been held back
	}{
		{"rare failures are each repaired", "0.05", false},
		{"a third failing at once: repair holds back", "0.5", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep, _ := runInline(t, inlineScenario(repairPool, repairApp,
				"  start: \"2026-11-30T00:00:00Z\"\n  duration: 12h\n  seed: 3\n  faults: {nodeFailuresPerNodeHour: "+tc.rate+"}\n"))
			t.Logf("%+v", rep.Repairs)
			if rep.Repairs == nil || rep.Repairs.Failed == 0 {
				t.Fatalf("no failures: %+v", rep.Repairs)
			}
			replaced := 0
			for _, n := range rep.ByNode {
				if n.DeletedReason == "Unhealthy" {
					replaced++
					if n.Failed == nil || n.Deleted.Sub(*n.Failed) < 30*time.Minute {
						t.Errorf("%s replaced at %v, failed at %v: before the 30m toleration", n.Name, n.Deleted, n.Failed)
					}
				}
			}
			if replaced != rep.Repairs.Replaced || replaced == 0 {
				t.Errorf("%d nodes deleted as Unhealthy, the report counts %d", replaced, rep.Repairs.Replaced)
			}
			if (rep.Repairs.Held > 0) != tc.held {
				t.Errorf("held back %d times, want some: %v", rep.Repairs.Held, tc.held)
			}
			if !tc.held && rep.Repairs.Replaced < rep.Repairs.Failed-2 {
				t.Errorf("%d failed, only %d replaced", rep.Repairs.Failed, rep.Repairs.Replaced)
			}
		})
	}
	bad := inlineScenario(repairPool, repairApp, "  start: \"2026-11-30T00:00:00Z\"\n  duration: 1h\n  faults: {nodeFailuresPerNodeHour: 3}\n")
	if _, err := scenario.Load(bad, "sc", "sc"); err == nil || !strings.Contains(err.Error(), "spec.faults.nodeFailuresPerNodeHour") || !strings.Contains(err.Error(), "sc/scenario.yaml") {
		t.Errorf("a rate above 1 per node-hour: %v", err)
	}
}
