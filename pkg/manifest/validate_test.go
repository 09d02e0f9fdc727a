package manifest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"

	"github.com/joiner-autoscaler/joiner/pkg/apis/crds"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

const goodNodePool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
spec:
  template:
    spec:
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["spot", "on-demand"]
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
`

func mustValidator(t testing.TB) *Validator {
	t.Helper()
	v, err := NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func parseOne(t testing.TB, y string) *Document {
	t.Helper()
	docs, err := Parse("test.yaml", []byte(y))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if len(docs) != 1 {
		t.Fatalf("want 1 document, got %d", len(docs))
	}
	return docs[0]
}

// TestCRDsAreValid runs the API server's own CRD validation, which compiles
// every CEL rule and checks its cost, over the generated CRDs.
func TestCRDsAreValid(t *testing.T) {
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 5 {
		t.Fatalf("want 5 CRDs, got %d", len(all))
	}
	for _, crd := range all {
		internal := &apiextensions.CustomResourceDefinition{}
		if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
			t.Fatal(err)
		}
		internal.Status.StoredVersions = []string{crd.Spec.Versions[0].Name}
		if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) > 0 {
			t.Errorf("%s: %v", crd.Name, errs.ToAggregate())
		}
	}
}

// TestNodePoolRules: each rule rejects a bad manifest with its message; the
// good manifest passes.
func TestNodePoolRules(t *testing.T) {
	v := mustValidator(t)
	tests := []struct {
		name      string
		old, new  string // replace old with new in goodNodePool
		wantField string
		wantMsg   string // empty: must be valid
	}{
		{"good", "", "", "", ""},
		{"weight 0", "  template:\n", "  weight: 0\n  template:\n", "spec.weight", "greater than or equal to 1"},
		{"weight 101", "  template:\n", "  weight: 101\n  template:\n", "spec.weight", "less than or equal to 100"},
		{"weight 100", "  template:\n", "  weight: 100\n  template:\n", "", ""},
		{"schedule without duration", "    consolidateAfter: 1m\n", "    consolidateAfter: 1m\n    budgets:\n      - nodes: \"10%\"\n        schedule: \"0 9 * * mon-fri\"\n", "spec.disruption.budgets", "'schedule' must be set with 'duration'"},
		{"duration without schedule", "    consolidateAfter: 1m\n", "    consolidateAfter: 1m\n    budgets:\n      - nodes: \"10%\"\n        duration: 8h\n", "spec.disruption.budgets", "'schedule' must be set with 'duration'"},
		{"weekday window", "    consolidateAfter: 1m\n", "    consolidateAfter: 1m\n    budgets:\n      - nodes: \"10%\"\n        reasons: [Drifted]\n        schedule: \"0 9 * * mon-fri\"\n        duration: 8h\n      - nodes: \"50%\"\n        reasons: [Drifted]\n", "", ""},
		{"macro schedule", "    consolidateAfter: 1m\n", "    consolidateAfter: 1m\n    budgets:\n      - nodes: \"0\"\n        schedule: \"@daily\"\n        duration: 10m\n", "", ""},
		{"four-field cron", "    consolidateAfter: 1m\n", "    consolidateAfter: 1m\n    budgets:\n      - nodes: \"0\"\n        schedule: \"0 9 * *\"\n        duration: 1h\n", "spec.disruption.budgets[0].schedule", "should match"},
		{"duration with seconds", "    consolidateAfter: 1m\n", "    consolidateAfter: 1m\n    budgets:\n      - nodes: \"0\"\n        schedule: \"@daily\"\n        duration: 30s\n", "spec.disruption.budgets[0].duration", "should match"},
		{"nodes 101%", "    consolidateAfter: 1m\n", "    consolidateAfter: 1m\n    budgets:\n      - nodes: \"101%\"\n", "spec.disruption.budgets[0].nodes", "should match"},
		{"nodes 100%", "    consolidateAfter: 1m\n", "    consolidateAfter: 1m\n    budgets:\n      - nodes: \"100%\"\n", "", ""},
		{"nodes count", "    consolidateAfter: 1m\n", "    consolidateAfter: 1m\n    budgets:\n      - nodes: \"3\"\n", "", ""},
		{"nodes negative", "    consolidateAfter: 1m\n", "    consolidateAfter: 1m\n    budgets:\n      - nodes: \"-1\"\n", "spec.disruption.budgets[0].nodes", "should match"},
		{"reason unknown", "    consolidateAfter: 1m\n", "    consolidateAfter: 1m\n    budgets:\n      - nodes: \"1\"\n        reasons: [Expired]\n", "spec.disruption.budgets[0].reasons[0]", "Unsupported value"},
		{"51 budgets", "    consolidateAfter: 1m\n", "    consolidateAfter: 1m\n    budgets:\n" + strings.Repeat("      - nodes: \"1\"\n", 51), "spec.disruption.budgets", "must have at most 50 items"},
		{"consolidateAfter Never", "consolidateAfter: 1m", "consolidateAfter: Never", "", ""},
		{"consolidateAfter units", "consolidateAfter: 1m", "consolidateAfter: 1 minute", "spec.disruption.consolidateAfter", "should match"},
		{"consolidateAfter days", "consolidateAfter: 1m", "consolidateAfter: 1d", "spec.disruption.consolidateAfter", "should match"},
		{"expireAfter Never", "      nodeClassRef:", "      expireAfter: Never\n      nodeClassRef:", "", ""},
		{"expireAfter bad", "      nodeClassRef:", "      expireAfter: 30days\n      nodeClassRef:", "spec.template.spec.expireAfter", "should match"},
		{"policy Balanced", "WhenEmptyOrUnderutilized", "Balanced", "", ""},
		{"policy unknown", "WhenEmptyOrUnderutilized", "Always", "spec.disruption.consolidationPolicy", "Unsupported value"},
		{"In without values", `values: ["spot", "on-demand"]`, `values: []`, "spec.template.spec.requirements", "requirements with operator 'In' must have a value defined"},
		{"unknown operator", "operator: In", "operator: Within", "spec.template.spec.requirements[0].operator", "Unsupported value"},
		{"Gt one integer", "        - key: karpenter.sh/capacity-type", "        - key: karpenter.k8s.aws/instance-cpu\n          operator: Gt\n          values: [\"3\"]\n        - key: karpenter.sh/capacity-type", "", ""},
		{"Gte one integer", "        - key: karpenter.sh/capacity-type", "        - key: karpenter.k8s.aws/instance-cpu\n          operator: Gte\n          values: [\"3\"]\n        - key: karpenter.sh/capacity-type", "", ""},
		{"Gt two values", "        - key: karpenter.sh/capacity-type", "        - key: karpenter.k8s.aws/instance-cpu\n          operator: Gt\n          values: [\"3\", \"4\"]\n        - key: karpenter.sh/capacity-type", "spec.template.spec.requirements", "must have a single positive integer value"},
		{"Lt negative", "        - key: karpenter.sh/capacity-type", "        - key: karpenter.k8s.aws/instance-cpu\n          operator: Lt\n          values: [\"-3\"]\n        - key: karpenter.sh/capacity-type", "spec.template.spec.requirements", "must have a single positive integer value"},
		{"Lte not a number", "        - key: karpenter.sh/capacity-type", "        - key: karpenter.k8s.aws/instance-cpu\n          operator: Lte\n          values: [\"many\"]\n        - key: karpenter.sh/capacity-type", "spec.template.spec.requirements", "must have a single positive integer value"},
		{"minValues ok", `values: ["spot", "on-demand"]`, "values: [\"spot\", \"on-demand\"]\n          minValues: 2", "", ""},
		{"minValues too many", `values: ["spot", "on-demand"]`, "values: [\"spot\", \"on-demand\"]\n          minValues: 3", "spec.template.spec.requirements", "'minValues' must have at least that many values"},
		{"minValues 0", `values: ["spot", "on-demand"]`, "values: [\"spot\", \"on-demand\"]\n          minValues: 0", "spec.template.spec.requirements[0].minValues", "greater than or equal to 1"},
		{"requirement karpenter.sh domain", "key: karpenter.sh/capacity-type", "key: karpenter.sh/team", "spec.template.spec.requirements[0].key", `label domain "karpenter.sh" is restricted`},
		{"requirement nodepool", "key: karpenter.sh/capacity-type", "key: karpenter.sh/nodepool", "spec.template.spec.requirements", `label "karpenter.sh/nodepool" is restricted`},
		{"requirement hostname", "key: karpenter.sh/capacity-type", "key: kubernetes.io/hostname", "spec.template.spec.requirements[0].key", `label "kubernetes.io/hostname" is restricted`},
		{"requirement kubernetes.io", "key: karpenter.sh/capacity-type", "key: kubernetes.io/team", "spec.template.spec.requirements[0].key", `label domain "kubernetes.io" is restricted`},
		{"requirement k8s.io", "key: karpenter.sh/capacity-type", "key: team.k8s.io/x", "spec.template.spec.requirements[0].key", `label domain "k8s.io" is restricted`},
		{"requirement aws typo", "key: karpenter.sh/capacity-type", "key: karpenter.k8s.aws/instance-familly", "spec.template.spec.requirements[0].key", `label domain "karpenter.k8s.aws" is restricted`},
		{"requirement own domain", "key: karpenter.sh/capacity-type", "key: example.com/team", "", ""},
		{"label karpenter.sh", "  template:\n    spec:\n", "  template:\n    metadata:\n      labels:\n        karpenter.sh/team: a\n    spec:\n", "spec.template.metadata.labels", `label domain "karpenter.sh" is restricted`},
		{"label nodepool", "  template:\n    spec:\n", "  template:\n    metadata:\n      labels:\n        karpenter.sh/nodepool: a\n    spec:\n", "spec.template.metadata.labels", `label "karpenter.sh/nodepool" is restricted`},
		{"label hostname", "  template:\n    spec:\n", "  template:\n    metadata:\n      labels:\n        kubernetes.io/hostname: a\n    spec:\n", "spec.template.metadata.labels", `label "kubernetes.io/hostname" is restricted`},
		{"label own", "  template:\n    spec:\n", "  template:\n    metadata:\n      labels:\n        team: a\n    spec:\n", "", ""},
		{"nodeClassRef empty group", "group: karpenter.k8s.aws", "group: \"\"", "spec.template.spec.nodeClassRef.group", "group may not be empty"},
		{"static ok", "  template:\n", "  replicas: 3\n  limits:\n    nodes: \"5\"\n  template:\n", "", ""},
		{"static with weight", "  template:\n", "  replicas: 3\n  weight: 5\n  template:\n", "spec", "'weight' is not supported on static NodePools"},
		{"static with cpu limit", "  template:\n", "  replicas: 3\n  limits:\n    cpu: \"5\"\n  template:\n", "spec", "only 'limits.nodes' is supported on static NodePools"},
		{"limits bad unit", "  template:\n", "  limits:\n    memory: 10 GB\n  template:\n", "spec.limits.memory", `"10 GB" is not a Kubernetes quantity`},
		{"terminationGracePeriod Never", "      nodeClassRef:", "      terminationGracePeriod: Never\n      nodeClassRef:", "spec.template.spec.terminationGracePeriod", "should match"},
		{"unknown field", "    consolidateAfter: 1m\n", "    consolidateAfter: 1m\n    consolidateAftr: 2m\n", "spec.disruption.consolidateAftr", "unknown field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			y := goodNodePool
			if tc.old != "" {
				if !strings.Contains(y, tc.old) {
					t.Fatalf("test bug: %q not in manifest", tc.old)
				}
				y = strings.Replace(y, tc.old, tc.new, 1)
			}
			ps := v.Validate(parseOne(t, y))
			if tc.wantMsg == "" {
				if len(ps) > 0 {
					t.Fatalf("want valid, got:\n%v", ps)
				}
				return
			}
			for _, p := range ps {
				if p.Field == tc.wantField && strings.Contains(p.Message, tc.wantMsg) {
					if p.File != "test.yaml" || p.Line == 0 {
						t.Errorf("problem does not locate itself: %+v", p)
					}
					return
				}
			}
			t.Fatalf("want %s: %q, got:\n%v", tc.wantField, tc.wantMsg, ps)
		})
	}
}

func TestDefaultsAreUpstreams(t *testing.T) {
	v := mustValidator(t)
	y := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: d
spec:
  template:
    spec:
      requirements: []
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
`
	obj, ps := v.Decode(parseOne(t, y))
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	np := obj.(*v1.NodePool)
	d := np.Spec.Disruption
	if d.ConsolidateAfter.IsNever() || *d.ConsolidateAfter.Duration != 0 {
		t.Errorf("consolidateAfter default = %v, want 0s", d.ConsolidateAfter)
	}
	if d.ConsolidationPolicy != v1.ConsolidationPolicyWhenEmptyOrUnderutilized {
		t.Errorf("consolidationPolicy default = %q", d.ConsolidationPolicy)
	}
	if len(d.Budgets) != 1 || d.Budgets[0].Nodes != "10%" {
		t.Errorf("budgets default = %+v, want [{nodes: 10%%}]", d.Budgets)
	}
	if got := np.Spec.Template.Spec.ExpireAfter.String(); got != "720h0m0s" {
		t.Errorf("expireAfter default = %s, want 720h", got)
	}
}

func TestImmutableFields(t *testing.T) {
	v := mustValidator(t)
	old := parseOne(t, goodNodePool)
	changed := parseOne(t, strings.Replace(goodNodePool, "kind: EC2NodeClass", "kind: OtherNodeClass", 1))
	if ps := v.ValidateUpdate(old, changed); !hasMessage(ps, "nodeClassRef.kind is immutable") {
		t.Errorf("kind change: got %v", ps)
	}
	changed = parseOne(t, strings.Replace(goodNodePool, "group: karpenter.k8s.aws", "group: example.com", 1))
	if ps := v.ValidateUpdate(old, changed); !hasMessage(ps, "nodeClassRef.group is immutable") {
		t.Errorf("group change: got %v", ps)
	}
	renamed := parseOne(t, strings.Replace(goodNodePool, "name: default", "name: other", 1))
	if ps := v.ValidateUpdate(old, renamed); len(ps) > 0 {
		t.Errorf("renaming the node class is allowed, got %v", ps)
	}
	static := parseOne(t, strings.Replace(goodNodePool, "  template:\n", "  replicas: 2\n  template:\n", 1))
	if ps := v.ValidateUpdate(old, static); !hasMessage(ps, "Cannot transition NodePool between static") {
		t.Errorf("dynamic → static: got %v", ps)
	}

	claim := `apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: general-abcde
spec:
  requirements:
    - key: node.kubernetes.io/instance-type
      operator: In
      values: ["m6i.xlarge"]
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
`
	oldClaim := parseOne(t, claim)
	if ps := v.Validate(oldClaim); len(ps) > 0 {
		t.Fatal(ps)
	}
	newClaim := parseOne(t, strings.Replace(claim, "m6i.xlarge", "m6i.2xlarge", 1))
	if ps := v.ValidateUpdate(oldClaim, newClaim); !hasMessage(ps, "spec is immutable") {
		t.Errorf("NodeClaim spec change: got %v", ps)
	}
}

func hasMessage(ps Problems, s string) bool {
	for _, p := range ps {
		if strings.Contains(p.Message, s) {
			return true
		}
	}
	return false
}

func TestEC2NodeClassRules(t *testing.T) {
	v := mustValidator(t)
	good := `apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: KarpenterNodeRole
  amiSelectorTerms:
    - alias: al2023@latest
  subnetSelectorTerms:
    - tags: {karpenter.sh/discovery: c}
  securityGroupSelectorTerms:
    - tags: {karpenter.sh/discovery: c}
`
	tests := []struct{ name, old, new, want string }{
		{"good", "", "", ""},
		{"bad alias family", "al2023@latest", "ubuntu@latest", "family is not supported"},
		{"bad alias format", "al2023@latest", "al2023", "improperly formatted"},
		{"role and profile", "  role: KarpenterNodeRole\n", "  role: KarpenterNodeRole\n  instanceProfile: p\n", "must specify exactly one of ['role', 'instanceProfile']"},
		{"no amiFamily without alias", "    - alias: al2023@latest\n", "    - id: ami-123\n", "must specify amiFamily"},
		{"empty subnet term", "    - tags: {karpenter.sh/discovery: c}\n  securityGroupSelectorTerms", "    - {}\n  securityGroupSelectorTerms", "expected at least one, got none, ['tags', 'id']"},
		{"restricted tag", "  role: KarpenterNodeRole\n", "  role: KarpenterNodeRole\n  tags: {karpenter.sh/nodepool: x}\n", "restricted tag matching karpenter.sh/nodepool"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := v.Validate(parseOne(t, strings.Replace(good, tc.old, tc.new, 1)))
			if tc.want == "" {
				if len(ps) > 0 {
					t.Fatal(ps)
				}
				return
			}
			if !hasMessage(ps, tc.want) {
				t.Fatalf("want %q, got %v", tc.want, ps)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"syntax", "apiVersion: v1\nkind: NodePool\n  bad: [\n", "not valid YAML"},
		{"duplicate key", "apiVersion: v1\nkind: A\nkind: B\n", "already defined"},
		{"not a mapping", "- a\n- b\n", "must be a mapping"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.in))
			var ps Problems
			if !errors.As(err, &ps) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "x.yaml:") {
				t.Fatalf("want a problem %q naming x.yaml, got %v", tc.want, err)
			}
		})
	}
	docs, err := Parse("x.yaml", []byte("---\n# only a comment\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: karpenter.sh/v1\n  kind: NodePool\n  metadata: {name: a}\n"))
	if err != nil || len(docs) != 1 || docs[0].Kind != "NodePool" || docs[0].Name != "a" || docs[0].Line != 7 {
		t.Fatalf("list expansion: %v %+v", err, docs)
	}
}

// TestExamples: every file under examples/ except legacy/ validates, and every
// file under examples/legacy/ fails with its v1 replacement named.
func TestExamples(t *testing.T) {
	v := mustValidator(t)
	root := filepath.Join("..", "..", "examples")
	files, err := ManifestFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	var good, legacy int
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		docs, err := ParseFile(f)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		isLegacy := strings.HasPrefix(rel, "legacy"+string(filepath.Separator))
		var deprecated []Problem
		for _, d := range docs {
			if !strings.HasPrefix(d.APIVersion, "karpenter.") {
				continue
			}
			ps := v.Validate(d)
			if !isLegacy {
				good++
				if len(ps) > 0 {
					t.Errorf("%s must validate:\n%v", rel, ps)
				}
				continue
			}
			legacy++
			n := len(deprecated)
			for _, p := range ps {
				if p.Deprecated {
					deprecated = append(deprecated, p)
				}
			}
			if len(deprecated) == n {
				t.Errorf("%s: %s %s must fail with a migration message, got %v", rel, d.Kind, d.Name, ps)
			}
		}
		if !isLegacy {
			continue
		}
		for _, w := range expectedReplacements(t, f) {
			found := false
			for _, p := range deprecated {
				found = found || strings.Contains(p.Fix, w) || strings.Contains(p.Replacement, w)
			}
			if !found {
				t.Errorf("%s: no fix names %q; got:\n%v", rel, w, Problems(deprecated))
			}
		}
	}
	if good < 10 || legacy < 5 {
		t.Errorf("examples went missing: %d valid, %d legacy objects", good, legacy)
	}
}

// expectedReplacements reads the replacement text a legacy example must be
// answered with from examples/legacy/EXPECTED (file: text lines).
func expectedReplacements(t *testing.T, file string) []string {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "EXPECTED"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		name, text, ok := strings.Cut(line, ": ")
		if ok && name == filepath.Base(file) {
			out = append(out, text)
		}
	}
	if len(out) == 0 {
		t.Errorf("examples/legacy/EXPECTED has no line for %s", filepath.Base(file))
	}
	return out
}
