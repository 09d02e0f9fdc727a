package sim

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// pacedPool consolidates one node at a time after 1m.
const pacedPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: ["on-demand"]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: ["m6i.large"]}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
    budgets: [{nodes: "1"}]
---
`

// queueApp is 500m pods scaled by a queue: 16 until minute 10, then 5.
const queueApp = `apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  replicas: 0
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers:
        - {name: c, image: x, resources: {requests: {cpu: 500m, memory: 512Mi}}}
---
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: app}
spec:
  scaleTargetRef: {name: app}
  pollingInterval: 15
  cooldownPeriod: 60
  maxReplicaCount: 100
  triggers:
    - type: aws-sqs-queue
      metadata: {queueLength: "1"}
`

// TestScaleInIsPacedByConsolidateAfter: after a scale-in, a node that took
// the pods of a consolidated one is looked at again as soon as its own
// consolidateAfter has passed (upstream's Consolidatable condition turns
// true, a change of state), not at the next five-minute forced pass: the
// six nodes are down to two within five minutes of the scale-in (it took
// eleven when only the forced pass looked again).
func TestScaleInIsPacedByConsolidateAfter(t *testing.T) {
	rep, _ := runInline(t, inlineScenario(pacedPool, queueApp, `  start: "2026-11-30T08:00:00Z"
  duration: 40m
  seed: 1
  loads:
    - target: {kind: ScaledObject, name: app}
      pattern: steps
      steps:
        - {at: 0h, value: 16}
        - {at: 10m, value: 5}
`))
	scaleIn := rep.Start.Add(10 * time.Minute)
	var last time.Time
	deleted := 0
	for _, n := range rep.ByNode {
		if n.Deleted != nil {
			deleted++
			if n.Deleted.After(last) {
				last = *n.Deleted
			}
		}
	}
	if rep.Nodes.Launched != 6 || deleted != 4 {
		t.Fatalf("%d nodes launched, %d deleted; want 6 and 4 (16 pods of 500m on m6i.large, then 5)", rep.Nodes.Launched, deleted)
	}
	if settle := last.Sub(scaleIn); settle > 5*time.Minute {
		t.Errorf("the last node was deleted %s after the scale-in, want within 5m (1m consolidateAfter a round, one node a round)", settle)
	}
}

// TestScaleInRoundsDoNotWaitForTheirDestinations runs the scale
// benchmark's workload (test/scale/scenario): 21 nodes, a 10 % budget, a
// scale-in to 30 % at minute 20. The first round once the scale-in's
// nodes are past their consolidateAfter (minute 21) takes three nodes;
// with the rounds after it marked joiner.sh/consolidating, the pods it
// evicts go to nodes that stay, and the second round starts as soon as
// the first is done — not a consolidateAfter later, as when the evicted
// pods landed on its candidates (90 s after the first, before the marks).
// A node whose pods the scale-in left alone may go before minute 21 (the
// late node for six pods kube-scheduler's spread left pending does).
func TestScaleInRoundsDoNotWaitForTheirDestinations(t *testing.T) {
	dir := filepath.Join("..", "..", "test", "scale", "scenario")
	rep, _ := runFS(t, os.DirFS(dir), ".", "scenario")
	var rounds []float64
	for _, ev := range rep.DisruptionEvents {
		if ev.Minute < 21 {
			continue // the hold's, or a node the scale-in left alone
		}
		if len(rounds) == 0 || ev.Minute != rounds[len(rounds)-1] {
			rounds = append(rounds, ev.Minute)
		}
	}
	if len(rounds) < 2 {
		t.Fatalf("want at least two rounds of consolidation after minute 21, got %v", rounds)
	}
	if gap := time.Duration((rounds[1] - rounds[0]) * float64(time.Minute)); gap >= time.Minute {
		t.Errorf("the second round came %s after the first (rounds at minutes %v): it waited for the consolidateAfter of nodes the first round's pods went to", gap, rounds)
	}
}
