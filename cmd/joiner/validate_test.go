package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/report"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
)

const pool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
spec:
  template:
    spec:
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
`

const nodeClass = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: KarpenterNodeRole-my-cluster
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: my-cluster
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: my-cluster
`

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx
          resources:
            requests: {cpu: 500m, memory: 512Mi}
`

// capacityBuffer is a CapacityBuffer and the PodTemplate it names, which
// Joiner does not model yet.
const capacityBuffer = `apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: warm, namespace: shop}
spec:
  podTemplateRef: {name: warm}
  replicas: 3
---
apiVersion: v1
kind: PodTemplate
metadata: {name: warm, namespace: shop}
template:
  spec:
    containers:
    - name: c
      image: pause
      resources:
        requests: {cpu: "1", memory: 1Gi}
`

// writeDir writes files (relative name → content) below a new directory.
func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestValidatePaths: a path that holds nothing to check, or does not exist,
// fails the run and is named; the paths that hold manifests pass.
func TestValidatePaths(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		arg   string // relative to the directory; "" is the directory
		ok    bool
		want  []string
	}{
		{"NodePools and their class", map[string]string{"pool.yaml": pool, "class.yaml": nodeClass}, "", true,
			[]string{"2 Karpenter objects, 0 workload objects and 0 scenarios checked, 0 of other kinds skipped: 0 problems"}},
		{"NodePools beside a CapacityBuffer and its PodTemplate: both checked",
			map[string]string{"pool.yaml": pool, "class.yaml": nodeClass, "buffer.yaml": capacityBuffer}, "", true,
			[]string{"3 Karpenter objects, 1 workload object and 0 scenarios checked, 0 of other kinds skipped: 0 problems"}},
		{"only a ConfigMap", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"}, "", false,
			[]string{"no Karpenter object here", "in 1 files, 1 documents", "fix: check the path"}},
		{"only workloads", map[string]string{"app.yaml": deployment}, "app.yaml", false,
			[]string{"app.yaml: no Karpenter object here", "1 workload object"}},
		{"no YAML at all", map[string]string{"README.md": "# hi\n"}, "", false,
			[]string{"no .yaml or .yml file here"}},
		{"a path that does not exist", map[string]string{"pool.yaml": pool}, "nodepools", false,
			[]string{"nodepools: no such file or directory", "fix: check the path"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeDir(t, tc.files)
			out, err := run(t, "validate", filepath.Join(dir, tc.arg))
			if (err == nil) != tc.ok {
				t.Fatalf("ok = %v, want %v:\n%s", err == nil, tc.ok, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestValidateStdin: "-" reads the manifests from standard input, as from
// helm template … | joiner validate -.
func TestValidateStdin(t *testing.T) {
	var out strings.Builder
	if err := runValidate(&out, strings.NewReader(pool+"---\n"+nodeClass), []string{"-"}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	out.Reset()
	err := runValidate(&out, strings.NewReader(strings.Replace(pool, "operator: In", "operator: Within", 1)), []string{"-"})
	if err == nil || !strings.Contains(out.String(), "<stdin>:10: NodePool \"general\" (document 1): spec.template.spec.requirements[0].operator") {
		t.Errorf("want the problem located in <stdin>, got %v:\n%s", err, out.String())
	}
}

// TestValidateDuplicates: one cluster's directory may not define an object
// twice; two clusters' directories may each have their own.
func TestValidateDuplicates(t *testing.T) {
	dir := writeDir(t, map[string]string{
		"staging/pool.yaml":     pool,
		"production/pool.yaml":  pool,
		"production/class.yaml": nodeClass + "---\n" + deployment,
	})
	if out, err := run(t, "validate", dir); err != nil {
		t.Fatalf("two clusters, one pool each: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "production", "pool-copy.yaml"), []byte("# copied\n"+pool), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "production", "web.yaml"), []byte(strings.Replace(deployment, "name: web", "name: web\n  namespace: default", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "validate", dir)
	if err == nil {
		t.Fatalf("duplicates must fail:\n%s", out)
	}
	for _, w := range []string{
		"pool.yaml:4: NodePool \"general\" (document 1): metadata.name: NodePool \"general\" is defined twice: here and at " + filepath.Join(dir, "production", "pool-copy.yaml") + ":5",
		"web.yaml:4: Deployment \"web\" (document 1): metadata.name: Deployment default/web is defined twice: here and at " + filepath.Join(dir, "production", "class.yaml") + ":19 (document 2)", // the line in the file, not in the document
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// TestValidateStatusAndHelm: a kubectl dump with status validates; a chart
// directory is answered with "render it first" for each template.
func TestValidateStatusAndHelm(t *testing.T) {
	dump := writeDir(t, map[string]string{"dump.yaml": pool + "status:\n  conditions: [{type: Ready, status: \"True\"}]\n  nodes: 3\n"})
	if out, err := run(t, "validate", dump); err != nil {
		t.Errorf("status must be ignored: %v\n%s", err, out)
	}
	chart := writeDir(t, map[string]string{
		"Chart.yaml":              "apiVersion: v2\nname: pools\nversion: 0.1.0\n",
		"values.yaml":             "name: general\n",
		"templates/nodepool.yaml": strings.Replace(pool, "name: general", "name: \"{{ .Values.name }}\"", 1),
	})
	out, err := run(t, "validate", chart)
	if err == nil || !strings.Contains(out, filepath.Join("templates", "nodepool.yaml")+":4: this is a Helm template") || !strings.Contains(out, "helm template RELEASE CHART_DIR") {
		t.Errorf("a chart must be answered as one: %v\n%s", err, out)
	}
	if strings.Contains(out, "no Karpenter object") {
		t.Errorf("the Helm answer says it all:\n%s", out)
	}
}

// TestValidateAndSimulateAgree: every bundled scenario validates clean and
// loads; every bad input the simulator rejects, validate rejects too,
// except the scenario-level checks listed below, which only a run can make.
func TestValidateAndSimulateAgree(t *testing.T) {
	scenarios, err := filepath.Glob(filepath.Join("..", "..", "examples", "scenarios", "*"))
	if err != nil || len(scenarios) < 2 {
		t.Fatalf("scenarios: %v %v", scenarios, err)
	}
	for _, dir := range append(scenarios, filepath.Join("..", "..", "examples", "clusters", "staging"), filepath.Join("..", "..", "examples", "clusters", "production")) {
		if out, err := run(t, "validate", dir); err != nil {
			t.Errorf("%s must validate: %v\n%s", dir, err, out)
		}
		if _, err := scenario.Load(os.DirFS(dir), ".", filepath.Base(dir)); err != nil {
			t.Errorf("%s must load: %v", dir, err)
		}
	}

	scenario := "apiVersion: joiner.dev/v1alpha1\nkind: Scenario\nmetadata: {name: x}\nspec:\n  start: \"2026-11-30T00:00:00Z\"\n  duration: 1h\n"
	podSpec := "  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: web}]\n"
	with := func(extra map[string]string) map[string]string {
		files := map[string]string{"pool.yaml": pool, "class.yaml": nodeClass, "scenario.yaml": scenario}
		for k, v := range extra {
			if v == "" {
				delete(files, k)
			} else {
				files[k] = v
			}
		}
		return files
	}
	bad := []struct {
		name  string
		files map[string]string
	}{
		{"a typo in a Deployment", with(map[string]string{"app.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replcas: 3\n" + podSpec})},
		{"a removed workload API", with(map[string]string{"app.yaml": "apiVersion: apps/v1beta1\nkind: Deployment\nmetadata: {name: web}\n"})},
		{"a bad request unit", with(map[string]string{"app.yaml": strings.Replace(deployment, "cpu: 500m", "cpu: 0.5cores", 1)})},
		{"a mistyped Pod", with(map[string]string{"pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: {name: x}\n"})},
		{"a bad requirement operator", with(map[string]string{"pool.yaml": strings.Replace(pool, "operator: In", "operator: Within", 1)})},
		{"a removed NodePool field", with(map[string]string{"pool.yaml": pool + "  disruption:\n    consolidationPolicy: WhenUnderutilized\n"})},
		{"a NodePool naming a missing class", with(map[string]string{"pool.yaml": strings.Replace(pool, "name: default", "name: defualt", 1)})},
		{"two NodePools of one name", with(map[string]string{"pools/copy.yaml": pool})},
		{"an early Provisioner", with(map[string]string{"old.yaml": "apiVersion: provisioning.karpenter.sh/v1alpha2\nkind: Provisioner\nmetadata: {name: old}\nspec: {}\n"})},
		{"a Helm template", with(map[string]string{"pool.yaml": strings.Replace(pool, "name: general", "name: {{ .Values.name }}", 1)})},
		{"broken YAML", with(map[string]string{"app.yaml": "apiVersion: v1\nkind: Pod\n  metadata: [\n"})},
		{"a scenario of an unknown apiVersion", with(map[string]string{"scenario.yaml": strings.Replace(scenario, "joiner.dev/v1alpha1", "joiner.dev/v1", 1)})},
		{"a scenario duration without a unit", with(map[string]string{"scenario.yaml": strings.Replace(scenario, "duration: 1h", "duration: 1 day", 1)})},
		{"a scenario field misspelt", with(map[string]string{"scenario.yaml": scenario + "  sed: 3\n"})},
		{"a scenario share out of range", with(map[string]string{"scenario.yaml": scenario + "  faults: {apiErrorRate: 5}\n"})},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeDir(t, tc.files)
			if _, err := loadAndRun(dir); err == nil {
				t.Fatal("test bug: the simulator accepts this")
			}
			if out, err := run(t, "validate", dir); err == nil {
				t.Errorf("simulate rejects it, validate must too:\n%s", out)
			}
		})
	}

	// What only a run can say: the scenario as a whole, not one manifest.
	runOnly := []struct {
		name, why string
		files     map[string]string
	}{
		{"a priorityClassName nobody defines", "a cluster may define PriorityClasses outside these files; the simulator needs every one",
			with(map[string]string{"app.yaml": strings.Replace(deployment, "      containers:", "      priorityClassName: hihg\n      containers:", 1)})},
		{"an HPA without a load in scenario.yaml", "the load is what the simulator drives the HPA with; manifests alone are complete",
			with(map[string]string{"app.yaml": deployment + "---\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  maxReplicas: 5\n"})},
		{"node classes without a NodePool", "a directory of EC2NodeClasses is valid on its own; a scenario needs a pool to launch from",
			with(map[string]string{"pool.yaml": ""})},
	}
	for _, tc := range runOnly {
		t.Run("run only: "+tc.name, func(t *testing.T) {
			dir := writeDir(t, tc.files)
			if _, err := loadAndRun(dir); err == nil {
				t.Fatal("the simulator accepts this now: move the case to the list above")
			}
			if out, err := run(t, "validate", dir); err != nil {
				t.Errorf("validate rejects this now (%s): move the case to the list above:\n%s", tc.why, out)
			}
		})
	}
}

func loadAndRun(dir string) (*report.Report, error) {
	fsys := os.DirFS(dir)
	in, err := scenario.Load(fsys, ".", "t")
	if err != nil {
		return nil, err
	}
	return sim.Run(context.Background(), in, fsys, ".", sim.Options{})
}
