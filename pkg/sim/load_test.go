package sim

import (
	"context"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

func TestLoadKubectlDump(t *testing.T) {
	in, err := scenario.Load(os.DirFS("testdata/kubectl-dump"), ".", "dump")
	if err != nil {
		t.Fatal(err)
	}
	if len(in.NodePools) != 1 || len(in.Deployments) != 1 || len(in.Pods) != 0 {
		t.Fatalf("want 1 NodePool and 1 Deployment (owned Pods and ReplicaSets come from it), got %d, %d, %d pods",
			len(in.NodePools), len(in.Deployments), len(in.Pods))
	}
	if len(in.Services) != 1 || len(in.Ignored) != 1 || in.Ignored[0].Kind != "ReplicaSet" {
		t.Errorf("ignored: %v", in.Ignored)
	}
	if in.Scenario.Spec.Duration.Hours() != 24 || !in.Scenario.Spec.Start.Equal(scenario.DefaultStart) {
		t.Errorf("defaults without scenario.yaml: %+v", in.Scenario.Spec)
	}
	const note = "has no scenario.yaml: the default scenario settings were used"
	if len(in.Notes) != 1 || !strings.Contains(in.Notes[0], note) {
		t.Errorf("a directory without scenario.yaml must say so: %q", in.Notes)
	}
	rep, err := Run(context.Background(), in, os.DirFS("testdata/kubectl-dump"), ".", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pods.Ran != 3 || rep.Pods.NeverRan != 0 || rep.Nodes.Launched == 0 {
		t.Errorf("the dump's 3 checkout pods run on launched nodes: %+v", rep.Pods)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), note) {
		t.Errorf("the report's notes lack %q: %q", note, rep.Notes)
	}
}

const minimalPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    spec:
      requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
`

// TestBuildErrors: what only building the run finds (a PriorityClass a
// workload names, an autoscaler's load) is answered as loading's errors
// are (pkg/scenario's TestLoadErrors).
func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"unknown PriorityClass", map[string]string{"pool.yaml": minimalPool, "app.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      priorityClassName: hihg\n      containers: [{name: web, image: web}]\n"},
			[]string{`Deployment web: spec.template.spec: priorityClassName "hihg"`, "add a scheduling.k8s.io/v1 PriorityClass"}},
		{"HPA without load", map[string]string{"pool.yaml": minimalPool,
			"app.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c, image: x}]}\n---\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  maxReplicas: 5\n"},
			[]string{"HorizontalPodAutoscaler web: scenario.yaml has no load for it"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, body := range tc.files {
				fsys["sc/"+name] = &fstest.MapFile{Data: []byte(body)}
			}
			in, err := scenario.Load(fsys, "sc", "sc")
			if err != nil {
				t.Fatal(err)
			}
			_, err = Run(context.Background(), in, fsys, "sc", Options{})
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
