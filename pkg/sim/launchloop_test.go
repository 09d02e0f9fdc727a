package sim

import (
	"bytes"
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/report"
)

const loopPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
`

// hostPortApp is a Deployment whose pods take host port 9100.
const hostPortApp = `apiVersion: apps/v1
kind: Deployment
metadata: {name: metrics}
spec:
  replicas: 2
  selector: {matchLabels: {app: metrics}}
  template:
    metadata: {labels: {app: metrics}}
    spec:
      containers:
      - name: c
        image: x
        ports: [{containerPort: 9100, hostPort: 9100}]
        resources: {requests: {cpu: "1", memory: 1Gi}}
`

// guard runs on every node and keeps the metrics pods off it (required
// anti-affinity): provisioning, as upstream's, does not weigh DaemonSet pods'
// affinity when it plans a node, and kube-scheduler then refuses the node.
const guard = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: guard}
spec:
  selector: {matchLabels: {app: guard}}
  template:
    metadata: {labels: {app: guard}}
    spec:
      tolerations: [{operator: Exists}]
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - topologyKey: kubernetes.io/hostname
            labelSelector: {matchLabels: {app: metrics}}
      containers:
      - name: c
        image: x
        resources: {requests: {cpu: 100m, memory: 100Mi}}
---
`

// nodeExporter takes host port 9100 on every node.
const nodeExporter = `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: node-exporter}
spec:
  selector: {matchLabels: {app: node-exporter}}
  template:
    metadata: {labels: {app: node-exporter}}
    spec:
      tolerations: [{operator: Exists}]
      containers:
      - name: c
        image: x
        ports: [{containerPort: 9100, hostPort: 9100}]
        resources: {requests: {cpu: 100m, memory: 100Mi}}
---
`

// TestLaunchLoopIsAFinding: pods that never bind to the nodes launched for
// them (a DaemonSet's pods keep them off by anti-affinity, which the
// scheduler honours and provisioning does not see) stop being launched for
// after maxLaunchRounds nodes, and the report says which and why — where a
// day would otherwise launch and consolidate a node every few minutes. A
// DaemonSet's host port, which provisioning does count, launches nothing.
func TestLaunchLoopIsAFinding(t *testing.T) {
	for _, tc := range []struct {
		name      string
		workloads string
		loop      bool
	}{
		{"a daemonset keeps the pods off", guard + hostPortApp, true},
		{"host port free", hostPortApp, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, js := runInline(t, inlineScenario(loopPool, tc.workloads, "  start: \"2026-11-30T08:00:00Z\"\n  duration: 24h\n  seed: 1\n"))
			if !tc.loop {
				if len(rep.LaunchLoops) != 0 || rep.Pods.Ran != 2 {
					t.Fatalf("loops %+v, %d pods ran; want none and 2", rep.LaunchLoops, rep.Pods.Ran)
				}
				return
			}
			if len(rep.LaunchLoops) != 1 {
				t.Fatalf("launch loops: %+v, want one", rep.LaunchLoops)
			}
			l := rep.LaunchLoops[0]
			// Each pod missed maxLaunchRounds ready nodes; at most one more
			// per pod was on its way when it was given up on.
			if l.Workload != "Deployment/metrics" || l.Pods != 2 || l.Nodes != 2*maxLaunchRounds || !strings.Contains(l.Reason, "pod anti-affinity") {
				t.Errorf("loop %+v: want Deployment/metrics, 2 pods, %d nodes, an anti-affinity reason", l, 2*maxLaunchRounds)
			}
			if rep.Nodes.Launched > 2*(maxLaunchRounds+1) {
				t.Errorf("%d nodes launched in a day, want at most %d: launching did not stop", rep.Nodes.Launched, 2*(maxLaunchRounds+1))
			}
			if rep.Pods.NeverRan != 2 {
				t.Errorf("%d pods never ran, want 2", rep.Pods.NeverRan)
			}
			for reason := range rep.Pods.NeverRanReason {
				if !strings.HasPrefix(reason, "launch loop: ") {
					t.Errorf("never-ran reason %q, want the launch loop", reason)
				}
			}
			var summary bytes.Buffer
			report.WriteSummary(&summary, rep)
			if want := "Launch loops   Deployment/metrics: 2 pods never bound to the 6 nodes launched for them"; !strings.Contains(summary.String(), want) {
				t.Errorf("summary lacks %q:\n%s", want, summary.String())
			}
			if !strings.Contains(string(js), `"launchLoops":[{"workload":"Deployment/metrics"`) {
				t.Error("JSON lacks the launch loop")
			}
		})
	}
}

// TestDaemonSetHostPortLaunchesNothing: a pod whose host port a DaemonSet
// takes on every node stays pending with that reason, and no node is
// launched for it (the DaemonSet's ports are part of a new node's
// overhead).
func TestDaemonSetHostPortLaunchesNothing(t *testing.T) {
	rep, _ := runInline(t, inlineScenario(loopPool, nodeExporter+hostPortApp, "  start: \"2026-11-30T08:00:00Z\"\n  duration: 2h\n  seed: 1\n"))
	if rep.Nodes.Launched != 0 || rep.Pods.NeverRan != 2 || len(rep.LaunchLoops) != 0 {
		t.Fatalf("%d nodes launched, %d pods never ran, loops %v: want none launched, both pending", rep.Nodes.Launched, rep.Pods.NeverRan, rep.LaunchLoops)
	}
	for reason := range rep.Pods.NeverRanReason {
		if !strings.Contains(reason, "host port 9100/TCP, which it needs, is taken by a DaemonSet on every instance type that fits") {
			t.Errorf("reason %q", reason)
		}
	}
}
