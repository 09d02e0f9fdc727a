package lint

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var (
	linterOnce sync.Once
	linter     *Linter
	linterErr  error
)

func testLinter(t *testing.T) *Linter {
	t.Helper()
	linterOnce.Do(func() { linter, linterErr = New() })
	if linterErr != nil {
		t.Fatal(linterErr)
	}
	return linter
}

const nodeClass = `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: KarpenterNodeRole-test
  amiSelectorTerms:
    - alias: al2023@v20241011
  subnetSelectorTerms:
    - tags: {karpenter.sh/discovery: test}
  securityGroupSelectorTerms:
    - tags: {karpenter.sh/discovery: test}
`

// pool is a NodePool that breaks no rule, with parts replaced.
type pool struct {
	name, weight, requirements, taints, templateExtra, limits, disruption, annotations, nodeClass string
}

func (p pool) yaml() string {
	or := func(s, def string) string {
		if s == "" {
			return def
		}
		if s == "-" {
			return ""
		}
		return s
	}
	var b strings.Builder
	b.WriteString("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: " + or(p.name, "general") + "\n")
	b.WriteString(or(p.annotations, ""))
	b.WriteString("spec:\n")
	b.WriteString(or(p.weight, ""))
	b.WriteString("  template:\n    spec:\n")
	b.WriteString(or(p.requirements, "      requirements:\n        - key: karpenter.sh/capacity-type\n          operator: In\n          values: [on-demand]\n"))
	b.WriteString(or(p.taints, ""))
	b.WriteString("      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: " + or(p.nodeClass, "default") + "}\n")
	b.WriteString(or(p.templateExtra, ""))
	b.WriteString(or(p.limits, "  limits:\n    cpu: \"100\"\n"))
	b.WriteString(or(p.disruption, "  disruption:\n    consolidationPolicy: WhenEmptyOrUnderutilized\n    consolidateAfter: 5m\n"))
	return b.String()
}

func lintFiles(t *testing.T, cfg *Config, files map[string]string) *Result {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := testLinter(t).Lint([]string{dir}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func rulesOf(r *Result) []string {
	var ids []string
	for _, f := range r.Findings {
		if !slices.Contains(ids, f.Rule) {
			ids = append(ids, f.Rule)
		}
	}
	slices.Sort(ids)
	return ids
}

const (
	gpuReqs  = "      requirements:\n        - key: karpenter.sh/capacity-type\n          operator: In\n          values: [on-demand]\n        - key: node.kubernetes.io/instance-type\n          operator: In\n          values: [g5.xlarge, g5.2xlarge]\n"
	gpuTaint = "      taints:\n        - {key: nvidia.com/gpu, effect: NoSchedule}\n"
	zoneReqs = "      requirements:\n        - key: topology.kubernetes.io/zone\n          operator: In\n          values: [us-east-1a]\n"
	spotFew  = "      requirements:\n        - key: karpenter.sh/capacity-type\n          operator: In\n          values: [spot]\n        - key: node.kubernetes.io/instance-type\n          operator: In\n          values: [m5.large, m5.xlarge]\n"
	spotWide = "      requirements:\n        - key: karpenter.sh/capacity-type\n          operator: In\n          values: [spot]\n        - key: karpenter.k8s.aws/instance-category\n          operator: In\n          values: [c, m, r]\n"
	blockPDB = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: api, namespace: shop}\nspec:\n  maxUnavailable: 0\n  selector: {matchLabels: {app: api}}\n"
	minAvPDB = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: api, namespace: shop}\nspec:\n  minAvailable: 2\n  selector: {matchLabels: {app: api}}\n"
	okPDB    = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web, namespace: shop}\nspec:\n  maxUnavailable: 1\n  selector: {matchLabels: {app: api}}\n"
	// twoAPI is a Deployment of app: api; REPLICAS is its replica count.
	twoAPI = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api, namespace: shop}\nspec:\n  replicas: REPLICAS\n  selector: {matchLabels: {app: api}}\n  template:\n    metadata: {labels: {app: api}}\n    spec:\n      containers: [{name: api, image: api}]\n"
)

// TestRules: each rule, a manifest set that triggers it and one that does
// not; the clean sets must be clean of every rule.
func TestRules(t *testing.T) {
	second := pool{name: "other"}
	cases := []struct {
		rule      string
		triggers  []string
		clean     []string
		wantField string
	}{
		{RuleInvalid, []string{pool{templateExtra: "      colour: blue\n"}.yaml()}, []string{pool{}.yaml()}, "spec.template.spec.colour"},
		{RuleDeprecated, []string{pool{disruption: "  disruption:\n    consolidationPolicy: WhenUnderutilized\n    consolidateAfter: 5m\n"}.yaml()},
			[]string{pool{}.yaml()}, "spec.disruption.consolidationPolicy"},
		{RuleWeightWithoutTaint, []string{pool{weight: "  weight: 10\n", requirements: zoneReqs}.yaml()},
			[]string{pool{weight: "  weight: 10\n", requirements: zoneReqs, taints: "      taints:\n        - {key: zone, value: a, effect: NoSchedule}\n"}.yaml()}, "spec.weight"},
		{RuleAcceleratorNoTaint, []string{pool{requirements: gpuReqs}.yaml()}, []string{pool{requirements: gpuReqs, taints: gpuTaint}.yaml()}, "spec.template.spec.taints"},
		{RuleEqualWeightOverlap, []string{pool{}.yaml(), second.yaml()},
			[]string{pool{}.yaml(), pool{name: "other", weight: "  weight: 5\n"}.yaml()}, "spec.weight"},
		{RuleNoLimits, []string{pool{limits: "-"}.yaml()}, []string{pool{}.yaml()}, "spec"},
		{RuleSpotFewTypes, []string{pool{requirements: spotFew}.yaml()}, []string{pool{requirements: spotWide}.yaml()}, "spec.template.spec.requirements[0]"},
		{RuleScheduleNoDuration, []string{pool{disruption: budget("0 9 * * mon-fri", "")}.yaml()},
			[]string{pool{disruption: budget("0 9 * * mon-fri", "8h")}.yaml()}, "spec.disruption.budgets[0].schedule"},
		{RuleCronNeverFires, []string{pool{disruption: budget("0 0 30 2 *", "8h")}.yaml()},
			[]string{pool{disruption: budget("0 0 29 2 *", "8h")}.yaml()}, "spec.disruption.budgets[0].schedule"},
		{RuleConsolidateTooSoon, []string{pool{disruption: "  disruption:\n    consolidationPolicy: WhenEmptyOrUnderutilized\n    consolidateAfter: 30s\n"}.yaml()},
			[]string{pool{disruption: "  disruption:\n    consolidationPolicy: WhenEmpty\n    consolidateAfter: 30s\n"}.yaml()}, "spec.disruption.consolidateAfter"},
		{RuleNoGracePeriodWithPDB, []string{pool{}.yaml(), blockPDB},
			[]string{pool{templateExtra: "      terminationGracePeriod: 48h\n"}.yaml(), blockPDB}, "spec.template.spec"},
		{RuleNoGracePeriodWithPDB, []string{pool{}.yaml(), minAvPDB, strings.Replace(twoAPI, "REPLICAS", "2", 1)},
			[]string{pool{}.yaml(), minAvPDB, strings.Replace(twoAPI, "REPLICAS", "3", 1), okPDB}, "spec.template.spec"},
		{RuleDanglingNodeClassRef, []string{pool{nodeClass: "gpu"}.yaml()}, []string{pool{}.yaml()}, "spec.template.spec.nodeClassRef.name"},
		{RuleDuplicate, []string{pool{}.yaml(), pool{}.yaml()}, []string{pool{}.yaml(), pool{name: "b", weight: "  weight: 1\n"}.yaml()}, "metadata.name"},
		{RuleOverlayConflict, []string{pool{}.yaml(), nodeOverlay("a", 10, "m6i"), nodeOverlay("b", 10, "m6i")},
			[]string{pool{}.yaml(), nodeOverlay("a", 10, "m6i"), nodeOverlay("b", 20, "m6i")}, "spec.weight"},
		{RuleOverlaySelectsNothing, []string{pool{}.yaml(), nodeOverlay("a", 10, "m6")},
			[]string{pool{}.yaml(), nodeOverlay("a", 10, "m6i")}, "spec.requirements"},
		{RuleBufferDanglingRef, []string{pool{}.yaml(), templateBuffer("  replicas: 2\n")},
			[]string{pool{}.yaml(), templateBuffer("  replicas: 2\n"), chunkTemplate}, "spec.podTemplateRef.name"},
		{RuleBufferDanglingRef, []string{pool{}.yaml(), scalableBuffer("Deployment")},
			[]string{pool{}.yaml(), scalableBuffer("Deployment"), strings.Replace(twoAPI, "REPLICAS", "3", 1)}, "spec.scalableRef.name"},
		{RuleBufferIgnoredSetting, []string{pool{}.yaml(), templateBuffer("  replicas: 2\n  percentage: 20\n"), chunkTemplate},
			[]string{pool{}.yaml(), templateBuffer("  replicas: 2\n"), chunkTemplate}, "spec.percentage"},
		{RuleBufferIgnoredSetting, []string{pool{}.yaml(), scalableBuffer("Job")},
			[]string{pool{}.yaml(), scalableBuffer("ReplicaSet")}, "spec.scalableRef"},
		{RuleBufferIgnoredSetting, []string{pool{}.yaml(), templateBuffer("  limits: {nvidia.com/gpu: 2}\n"), chunkTemplate},
			[]string{pool{}.yaml(), templateBuffer("  limits: {cpu: 4}\n"), chunkTemplate}, "spec.limits"},
		{RuleReservedWithoutTerms, []string{pool{requirements: reservedOnly}.yaml()},
			[]string{pool{requirements: strings.Replace(reservedOnly, "[reserved]", "[reserved, on-demand]", 1)}.yaml()}, "spec.template.spec.requirements"},
		{RuleReservedWithoutTerms, []string{pool{requirements: reservationID}.yaml()},
			[]string{pool{requirements: reservationID, nodeClass: "reserved"}.yaml(), reservedClass}, "spec.template.spec.requirements"},
		// g5.xlarge and g5.2xlarge have one GPU each: two on one node, none.
		{RuleDeviceClaimUnsatisfiable, []string{pool{requirements: gpuReqs, taints: gpuTaint}.yaml(), gpuDeviceClass, gpuClaimTemplate("2")},
			[]string{pool{requirements: gpuReqs, taints: gpuTaint}.yaml(), gpuDeviceClass, gpuClaimTemplate("1")}, "spec.spec.devices.requests"},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			files := func(docs []string) map[string]string {
				m := map[string]string{"nodeclass.yaml": nodeClass}
				for i, d := range docs {
					m[string(rune('a'+i))+".yaml"] = d
				}
				return m
			}
			got := lintFiles(t, nil, files(c.triggers))
			var hit *Finding
			for i, f := range got.Findings {
				if f.Rule == c.rule {
					hit = &got.Findings[i]
					break
				}
			}
			if hit == nil {
				t.Fatalf("no %s finding; got %v", c.rule, got.Findings)
			}
			if hit.Field != c.wantField || hit.Fix == "" || hit.Line == 0 || hit.Column == 0 {
				t.Errorf("finding %+v: want field %s, a fix and a position", *hit, c.wantField)
			}
			if clean := lintFiles(t, nil, files(c.clean)); len(clean.Findings) != 0 {
				t.Errorf("clean set has findings: %v", clean.Findings)
			}
		})
	}
}

const gpuDeviceClass = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.nvidia.com}\nspec:\n  selectors:\n    - cel: {expression: 'device.driver == \"gpu.nvidia.com\"'}\n"

// gpuClaimTemplate asks for count GPUs of the class on one node.
func gpuClaimTemplate(count string) string {
	return "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {name: gpus, namespace: ml}\nspec:\n  spec:\n    devices:\n      requests:\n        - name: gpu\n          exactly: {deviceClassName: gpu.nvidia.com, count: " + count + "}\n"
}

const (
	reservedOnly  = "      requirements:\n        - key: karpenter.sh/capacity-type\n          operator: In\n          values: [reserved]\n"
	reservationID = "      requirements:\n        - key: karpenter.k8s.aws/capacity-reservation-id\n          operator: In\n          values: [cr-0123]\n"
)

// reservedClass is an EC2NodeClass that selects a capacity reservation.
var reservedClass = strings.Replace(strings.Replace(nodeClass, "name: default", "name: reserved", 1), "  role:", "  capacityReservationSelectorTerms:\n    - id: cr-0123\n  role:", 1)

// chunkTemplate is a 1-core PodTemplate in namespace shop.
const chunkTemplate = "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: chunk, namespace: shop}\ntemplate:\n  spec:\n    containers: [{name: c, image: pause, resources: {requests: {cpu: \"1\"}}}]\n"

// templateBuffer is a CapacityBuffer of chunkTemplate with spec lines.
func templateBuffer(spec string) string {
	return "apiVersion: autoscaling.x-k8s.io/v1beta1\nkind: CapacityBuffer\nmetadata: {name: warm, namespace: shop}\nspec:\n  podTemplateRef: {name: chunk}\n" + spec
}

// scalableBuffer is a CapacityBuffer of 20 % of the api workload of kind.
func scalableBuffer(kind string) string {
	return "apiVersion: autoscaling.x-k8s.io/v1beta1\nkind: CapacityBuffer\nmetadata: {name: warm, namespace: shop}\nspec:\n  scalableRef: {apiGroup: apps, kind: " + kind + ", name: api}\n  percentage: 20\n"
}

// nodeOverlay prices an instance family down by 10 %.
func nodeOverlay(name string, weight int, family string) string {
	return fmt.Sprintf("apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: %s}\nspec:\n  weight: %d\n  requirements:\n    - {key: karpenter.k8s.aws/instance-family, operator: In, values: [%s]}\n  priceAdjustment: \"-10%%\"\n", name, weight, family)
}

func budget(schedule, duration string) string {
	s := "  disruption:\n    consolidationPolicy: WhenEmptyOrUnderutilized\n    consolidateAfter: 5m\n    budgets:\n      - nodes: \"10%\"\n        schedule: \"" + schedule + "\"\n"
	if duration != "" {
		s += "        duration: " + duration + "\n"
	}
	return s
}

// TestSilencing: the annotation and the config file each turn a rule off
// for one resource or everywhere, and the config can change a severity.
func TestSilencing(t *testing.T) {
	noLimits := pool{limits: "-"}
	cases := []struct {
		name     string
		cfg      *Config
		pool     pool
		want     []string
		silenced int
	}{
		{"none", nil, noLimits, []string{RuleNoLimits}, 0},
		{"annotation", nil, pool{limits: "-", annotations: "  annotations:\n    joiner.sh/lint-ignore: JNR004, JNR006\n"}, nil, 1},
		{"annotation of another rule", nil, pool{limits: "-", annotations: "  annotations:\n    joiner.sh/lint-ignore: JNR004\n"}, []string{RuleNoLimits}, 0},
		{"config off", &Config{Rules: map[string]string{RuleNoLimits: "off"}}, noLimits, nil, 1},
		{"config ignore by name", &Config{Ignore: []Ignore{{Rules: []string{RuleNoLimits}, Kind: "NodePool", Name: "general"}}}, noLimits, nil, 1},
		{"config ignore of another name", &Config{Ignore: []Ignore{{Rules: []string{RuleNoLimits}, Name: "spot"}}}, noLimits, []string{RuleNoLimits}, 0},
		{"config ignore by file glob", &Config{Ignore: []Ignore{{Rules: []string{RuleNoLimits}, Files: "*/nomatch/*"}}}, noLimits, []string{RuleNoLimits}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := lintFiles(t, c.cfg, map[string]string{"nc.yaml": nodeClass, "p.yaml": c.pool.yaml()})
			if got := rulesOf(r); !slices.Equal(got, c.want) || r.Silenced != c.silenced {
				t.Errorf("rules %v silenced %d, want %v and %d", got, r.Silenced, c.want, c.silenced)
			}
		})
	}
	r := lintFiles(t, &Config{Rules: map[string]string{RuleNoLimits: "error"}}, map[string]string{"nc.yaml": nodeClass, "p.yaml": noLimits.yaml()})
	if r.Count(Error) != 1 {
		t.Errorf("severity override: %v", r.Findings)
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ body, wantErr string }{
		{"rules:\n  JNR006: off\nignore:\n  - rules: [JNR007]\n    name: spot\n", ""},
		{"rules:\n  JNR999: off\n", "rules.JNR999: no such rule"},
		{"rules:\n  JNR006: maybe\n", `rules.JNR006: "maybe" is not off`},
		{"ignore:\n  - name: spot\n", "ignore[0].rules: empty"},
		{"colour: blue\n", "not found in type"},
	}
	for i, c := range cases {
		p := filepath.Join(dir, string(rune('a'+i))+".yaml")
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(p)
		if (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%q: err %v, want %q", c.body, err, c.wantErr)
		}
	}
	if c, err := LoadConfigIfPresent(filepath.Join(dir, "missing.yaml")); err != nil || len(c.Rules) != 0 {
		t.Errorf("optional missing config: %v %v", c, err)
	}
	if _, err := LoadConfig(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("a missing config file asked for by name is no error")
	}
}

// TestLegacyGolden: the seeds' original YAML gives exactly the findings in
// testdata/legacy.txt, byte for byte.
func TestLegacyGolden(t *testing.T) {
	wd, _ := os.Getwd()
	t.Chdir(filepath.Join(wd, "..", ".."))
	res, err := testLinter(t).Lint([]string{"examples/legacy"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, res); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join(wd, "testdata", "legacy.txt")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("lint examples/legacy differs from testdata/legacy.txt (go test -run TestLegacyGolden -update to accept):\n%s", buf.String())
	}
}

// TestSARIF: the log has the structure code scanning reads, each result
// naming a rule of the driver.
func TestSARIF(t *testing.T) {
	r := lintFiles(t, nil, map[string]string{"nc.yaml": nodeClass, "p.yaml": pool{limits: "-", requirements: gpuReqs}.yaml()})
	var buf bytes.Buffer
	if err := WriteSARIF(&buf, r, "test"); err != nil {
		t.Fatal(err)
	}
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID string `json:"id"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
				Level     string `json:"level"`
				Message   struct {
					Text string `json:"text"`
				} `json:"message"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine   int `json:"startLine"`
							StartColumn int `json:"startColumn"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Tool.Driver.Rules) != len(Rules) {
		t.Fatalf("log: %s", buf.String())
	}
	run := log.Runs[0]
	if len(run.Results) != 2 {
		t.Fatalf("want JNR004 and JNR006, got %s", buf.String())
	}
	for _, res := range run.Results {
		loc := res.Locations[0].PhysicalLocation
		if run.Tool.Driver.Rules[res.RuleIndex].ID != res.RuleID || res.Level != "warning" || res.Message.Text == "" ||
			!strings.HasSuffix(loc.ArtifactLocation.URI, "p.yaml") || loc.Region.StartLine < 1 || loc.Region.StartColumn < 1 {
			t.Errorf("result %+v", res)
		}
	}
}

// TestInventedRefIsNotDangling: a NodePool without nodeClassRef is JNR002
// (with the ref to add); the ref the migration invents is not also JNR012.
func TestInventedRefIsNotDangling(t *testing.T) {
	noRef := strings.Replace(pool{}.yaml(), "      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n", "", 1)
	r := lintFiles(t, nil, map[string]string{"p.yaml": noRef})
	if got := rulesOf(r); !slices.Equal(got, []string{RuleDeprecated}) {
		t.Errorf("rules %v, want only %s: %v", got, RuleDeprecated, r.Findings)
	}
	r = lintFiles(t, nil, map[string]string{"p.yaml": pool{}.yaml()})
	if got := rulesOf(r); !slices.Equal(got, []string{RuleDanglingNodeClassRef}) {
		t.Errorf("rules %v, want only %s", got, RuleDanglingNodeClassRef)
	}
}
