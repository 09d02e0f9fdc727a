package sim

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// TestResizeInPlace: six 1-vCPU pods fill two m6i.xlarge (3.92 vCPU
// allocatable) three to a node; resized to 1.5 vCPU, the first pod on each
// node fits at once and the other two wait (Deferred), counted meanwhile at
// 1.5 as kube-scheduler counts them. A resize past what the node could
// ever hold is Infeasible.
func TestResizeInPlace(t *testing.T) {
	spec := `  start: "2026-11-30T08:00:00Z"
  duration: 1h
  seed: 1
  zones: [us-east-1a]
  events:
  - at: 20m
    resize: {kind: Deployment, name: web, requests: {cpu: 1500m}}
`
	rep, _ := runInline(t, inlineScenario(xlargePool, sixPods, spec))
	if len(rep.Resizes) != 1 {
		t.Fatalf("resizes %+v", rep.Resizes)
	}
	rz := rep.Resizes[0]
	if rz.Workload != "Deployment/default/web" || rz.Container != "c" || rz.Pods != 6 || rz.InPlace != 2 || rz.Deferred != 4 || rz.Infeasible != 0 || rz.DoneLater != 0 {
		t.Errorf("resize: %+v, want 6 pods: 2 at once, 4 deferred", rz)
	}
	if rep.Nodes.Launched != 2 {
		t.Errorf("%d nodes launched, want the 2 the pods started on (a resize moves no pod)", rep.Nodes.Launched)
	}
	var sum strings.Builder
	report.WriteSummary(&sum, rep)
	if want := "Resizes        Mon 08:20 Deployment/default/web c → cpu 1500m: 6 pods, 2 at once, 4 deferred for room (0 done later), 0 infeasible"; !strings.Contains(sum.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, sum.String())
	}

	big, _ := runInline(t, inlineScenario(xlargePool, sixPods, strings.Replace(spec, "cpu: 1500m", "cpu: \"5\"", 1)))
	if rz := big.Resizes[0]; rz.Infeasible != 6 || rz.InPlace != 0 {
		t.Errorf("5 vCPU on a 4-vCPU node: %+v, want all 6 infeasible", rz)
	}
}

// TestDeferredResizeDoneWhenRoomAppears: two 1-vCPU web pods share an
// m6i.xlarge with a 1.5-vCPU Job pod; resized to 1.5 vCPU, neither fits
// beside the Job's pod, so both wait — until the Job ends and the kubelet
// resizes them.
func TestDeferredResizeDoneWhenRoomAppears(t *testing.T) {
	workloads := strings.Replace(sixPods, "replicas: 6", "replicas: 2", 1) + `---
apiVersion: batch/v1
kind: Job
metadata: {name: batch}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: j
        image: x
        resources: {requests: {cpu: 1500m, memory: 1Gi}}
`
	spec := `  start: "2026-11-30T08:00:00Z"
  duration: 1h
  seed: 1
  zones: [us-east-1a]
  jobs:
  - {name: batch, duration: 30m}
  events:
  - at: 10m
    resize: {kind: Deployment, name: web, requests: {cpu: 1500m}}
`
	rep, _ := runInline(t, inlineScenario(xlargePool, workloads, spec))
	if rep.Nodes.Launched != 1 {
		t.Fatalf("%d nodes launched, want the one m6i.xlarge the three pods share", rep.Nodes.Launched)
	}
	if rz := rep.Resizes[0]; rz.Pods != 2 || rz.Deferred != 2 || rz.DoneLater != 2 {
		t.Errorf("resize: %+v, want both pods deferred, then both done once the Job ended", rz)
	}
}

// TestResizeEventErrors: a resize of a workload or container the scenario
// does not have is refused, naming the event and what there is.
func TestResizeEventErrors(t *testing.T) {
	base := `  start: "2026-11-30T08:00:00Z"
  duration: 1h
  events:
  - at: 20m
`
	for _, tc := range []struct{ event, want string }{
		{"    resize: {kind: Deployment, name: api, requests: {cpu: 1}}\n", "spec.events[0].resize: no Deployment default/api in the scenario (it has Deployment/default/web)"},
		{"    resize: {kind: Deployment, name: web, container: side, requests: {cpu: 1}}\n", `spec.events[0].resize.container: Deployment web has no container "side" (it has c)`},
		{"    resize: {kind: DaemonSet, name: web, requests: {cpu: 1}}\n", `spec.events[0].resize.kind`},
	} {
		_, err := runInlineErr(t, inlineScenario(xlargePool, sixPods, base+tc.event))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", strings.TrimSpace(tc.event), err, tc.want)
		}
	}
}

// runInlineErr loads and runs an inline scenario, returning the first
// error (of the load or of the run).
func runInlineErr(t *testing.T, fsys fstest.MapFS) (*report.Report, error) {
	t.Helper()
	in, err := scenario.Load(fsys, "sc", "inline")
	if err != nil {
		return nil, err
	}
	return Run(context.Background(), in, fsys, "sc", Options{})
}
