package sim

import (
	"testing"
	"time"
)

// paceApp is twenty 1-core pods, one to an m6i.large (pacedPool).
const paceApp = `apiVersion: apps/v1
kind: Deployment
metadata: {name: app}
spec:
  replicas: 20
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers:
        - {name: c, image: x, resources: {requests: {cpu: "1", memory: 1Gi}}}
`

// TestKubeSchedulerPace: a kube-scheduler that tries one pod a second
// lets provisioning see twenty pending pods over twenty seconds — nodes
// launched in batches a batch's longest wait (10 s) apart — where one
// without a pace shows all twenty to the first batch.
func TestKubeSchedulerPace(t *testing.T) {
	spread := func(pace string) time.Duration {
		t.Helper()
		rep, _ := runInline(t, inlineScenario(pacedPool, paceApp, `  start: "2026-11-30T08:00:00Z"
  duration: 10m
  seed: 1
`+pace))
		if rep.Nodes.Launched != 20 {
			t.Fatalf("%q: %d nodes launched, want one for each of the 20 pods", pace, rep.Nodes.Launched)
		}
		first, last := rep.ByNode[0].Launched, rep.ByNode[0].Launched
		for _, n := range rep.ByNode {
			if n.Launched.Before(first) {
				first = n.Launched
			}
			last = maxTime(last, n.Launched)
		}
		return last.Sub(first)
	}
	if d := spread(""); d != 0 {
		t.Errorf("no pace: the nodes were launched over %s, want all in one batch", d)
	}
	if d := spread("  kubeScheduler: {podsPerSecond: 1}\n"); d < 10*time.Second || d > 25*time.Second {
		t.Errorf("one pod a second: the nodes were launched over %s, want the 20 s the scheduler took, in batches", d)
	}
}
