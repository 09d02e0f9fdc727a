package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const trainerPod = `apiVersion: v1
kind: Pod
metadata:
  name: trainer
  namespace: default
spec:
  tolerations:
    - key: nvidia.com/gpu
      operator: Exists
  resourceClaims:
    - name: gpus
      resourceClaimTemplateName: l4-four-else-two
  containers:
    - name: c
      image: x
      resources:
        requests: {cpu: "4", memory: 16Gi}
        claims: [{name: gpus}]
status:
  phase: Pending
  conditions:
    - type: PodScheduled
      status: "False"
      reason: Unschedulable
`

// TestPlanDeviceClaims: plan over manifests with a pod that claims GPUs
// through a template. By default, as upstream, it stays pending for the
// DRA reason and the DRA objects are named as left out; with
// --ignore-dra-requests=false its claim is allocated: a NodeClaim of the
// GPU pool whose types have four L4s, as the first alternative asks.
func TestPlanDeviceClaims(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"karpenter.yaml", "dra.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "scenarios", "dra-gpu", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "pod.yaml"), []byte(trainerPod), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "plan", dir, "--at", "2026-11-30T08:00:00Z")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NodeClaims to create: 0", "default/trainer  pod has Dynamic Resource Allocation requirements", "left out: ResourceClaimTemplate one-gpu"} {
		if !strings.Contains(out, want) {
			t.Errorf("default plan lacks %q:\n%s", want, out)
		}
	}
	out, err = run(t, "plan", dir, "--at", "2026-11-30T08:00:00Z", "--ignore-dra-requests=false")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "NodeClaims to create: 1") || !strings.Contains(out, "Pods that stay pending: 0") || strings.Contains(out, "left out") {
		t.Fatalf("plan with DRA modelled:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "gpu ") {
			for _, typ := range strings.Split(strings.Fields(line)[1], ",") {
				if typ != "g6.12xlarge" && typ != "g6.24xlarge" && typ != "g6.48xlarge" {
					t.Errorf("the trainer's NodeClaim may launch %s, which has not four L4s", typ)
				}
			}
		}
	}
}
