package sim

import (
	"context"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// antiAffineApp's four pods take a node each (required hostname
// anti-affinity), so one provisioning pass launches four nodes: a cohort.
const antiAffineApp = `apiVersion: apps/v1
kind: Deployment
metadata: {name: spread}
spec:
  replicas: 4
  selector: {matchLabels: {app: spread}}
  template:
    metadata: {labels: {app: spread}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
            labelSelector: {matchLabels: {app: spread}}
      containers:
      - name: c
        image: x
        resources: {requests: {cpu: "1", memory: 1Gi}}
`

// TestLaunchCohortOpensTogether: under Joiner's decisions the nodes one
// pass launches take pods together, once the last of them is Ready (their
// registration spread is seconds, under state.CohortHold), so each pod
// waits as long as the slowest (to the second the last takes to turn
// Ready); under Karpenter's each node takes its pod as soon as it is
// Ready.
func TestLaunchCohortOpensTogether(t *testing.T) {
	fsys := inlineScenario(loopPool, antiAffineApp, `  start: "2026-11-30T08:00:00Z"
  duration: 30m
  seed: 3
  faults:
    registrationLatency: {mean: 20s, stddev: 3s}
    initializationLatency: {mean: 1s}
`)
	in, err := scenario.Load(fsys, "sc", "inline")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		decisions string
		together  bool
	}{{"joiner", true}, {"karpenter", false}} {
		policy, err := provisioning.ParsePolicy(tc.decisions, "")
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(context.Background(), in, fsys, "sc", Options{Policy: policy})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Nodes.Launched != 4 || rep.Pods.Ran != 4 {
			t.Fatalf("%s: %d nodes, %d pods ran; want 4 and 4", tc.decisions, rep.Nodes.Launched, rep.Pods.Ran)
		}
		p50, max := *rep.Pods.StartupP50, *rep.Pods.StartupMax
		// The last node to appear is Ready a second after the others open.
		if (max-p50 <= 1) != tc.together {
			t.Errorf("%s: pod startup p50 %.1fs, max %.1fs; together: %v", tc.decisions, p50, max, tc.together)
		}
	}
}
