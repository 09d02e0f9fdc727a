package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// TestNeverRanPods: the report names the pods that never ran, by workload
// and reason — the first few by name — and the summary says each group
// with the explain command that gives every NodePool's verdict; two runs
// give the same bytes.
func TestNeverRanPods(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"scenario.yaml": `apiVersion: joiner.dev/v1alpha1
kind: Scenario
metadata: {name: stuck}
spec: {start: "2026-11-30T00:00:00Z", duration: 1h, seed: 1, region: us-east-1}
`,
		"cluster.yaml": `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: infra}
spec:
  template:
    spec:
      taints: [{key: dedicated, value: infra, effect: NoSchedule}]
      requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m6i.large]}]
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 7
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: c, resources: {requests: {cpu: "1"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: solo, namespace: jobs}
spec:
  tolerations: [{key: dedicated, operator: Exists}]
  containers: [{name: c, image: c, resources: {requests: {cpu: "6"}}}]
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func() (*report.Report, string) {
		in, err := scenario.Load(os.DirFS(dir), ".", dir)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(context.Background(), in, os.DirFS(dir), ".", Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		return rep, string(b)
	}
	rep, first := run()
	if _, again := run(); again != first {
		t.Error("two runs gave different JSON")
	}
	taint := `NodePool "infra": does not tolerate taint dedicated=infra:NoSchedule`
	large := `NodePool "infra": no instance type is large enough: the pod needs 6 cpu, the largest compatible type, m6i.large, has 1930m allocatable`
	want := []report.NeverRan{
		{Workload: "Deployment/web", Reason: taint, Pods: 7, Names: []string{"default/web-1", "default/web-2", "default/web-3", "default/web-4", "default/web-5"}},
		{Workload: "Pod/solo", Reason: large, Pods: 1, Names: []string{"jobs/solo"}},
	}
	got, _ := json.Marshal(rep.Pods.NeverRanPods)
	if w, _ := json.Marshal(want); string(got) != string(w) {
		t.Errorf("never ran:\n%s\nwant:\n%s", got, w)
	}
	var b bytes.Buffer
	report.WriteSummary(&b, rep)
	for _, line := range []string{
		"Never ran      8 pods",
		"               7 × Deployment/web (default/web-1, default/web-2, default/web-3, default/web-4, default/web-5 and 2 more): " + taint,
		"               1 × Pod/solo (jobs/solo): " + large,
		"               joiner explain pod default/web-1 --scenario " + dir + " --at 2026-11-30T01:00:00Z: each NodePool's verdict on it",
	} {
		if !strings.Contains(b.String(), line+"\n") {
			t.Errorf("summary lacks %q:\n%s", line, b.String())
		}
	}
}
