package manifest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"

	"github.com/joiner-autoscaler/joiner/pkg/apis/crds"
)

const goodNodeClass = `apiVersion: karpenter.k8s.aws/v1
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

func edit(t *testing.T, base, old, new string) string {
	t.Helper()
	if !strings.Contains(base, old) {
		t.Fatalf("test bug: %q not in manifest", old)
	}
	return strings.Replace(base, old, new, 1)
}

// findProblem returns the first problem at field whose message contains msg.
func findProblem(ps Problems, field, msg string) (Problem, bool) {
	for _, p := range ps {
		if (field == "" || p.Field == field) && strings.Contains(p.Message, msg) {
			return p, true
		}
	}
	return Problem{}, false
}

// TestAllProblemsAtOnce: a schema error that stops the API server's CEL
// rules does not hide what those rules would say; values set aside for the
// rules do not produce findings of their own.
func TestAllProblemsAtOnce(t *testing.T) {
	v := mustValidator(t)
	scheduleOnly := "    consolidateAfter: 1m\n    budgets:\n      - nodes: \"10%\"\n        schedule: \"0 9 * * mon-fri\"\n"
	tests := []struct {
		name      string
		manifest  string
		want      [][2]string // field, message
		wantNot   []string    // messages that must not appear
		wantCount int         // errors, 0: not checked
	}{
		{"unsupported policy and a CEL budget rule",
			edit(t, edit(t, goodNodePool, "WhenEmptyOrUnderutilized", "Always"), "    consolidateAfter: 1m\n", scheduleOnly),
			[][2]string{{"spec.disruption.consolidationPolicy", "Unsupported value"}, {"spec.disruption.budgets", "'schedule' must be set with 'duration'"}},
			[]string{"were not checked"}, 2},
		{"mistyped weight and an In requirement without values",
			edit(t, edit(t, goodNodePool, "  template:\n", "  weight: high\n  template:\n"), `values: ["spot", "on-demand"]`, "values: []"),
			[][2]string{{"spec.weight", "Invalid value"}, {"spec.template.spec.requirements", "must have a value defined"}}, nil, 2},
		{"missing requirements and a CEL budget rule",
			edit(t, edit(t, goodNodePool, "      requirements:\n        - key: karpenter.sh/capacity-type\n          operator: In\n          values: [\"spot\", \"on-demand\"]\n", ""), "    consolidateAfter: 1m\n", scheduleOnly),
			[][2]string{{"spec.template.spec.requirements", "Required value"}, {"spec.disruption.budgets", "'schedule' must be set with 'duration'"}}, nil, 2},
		{"a bad enum in the node class and role with instanceProfile",
			edit(t, goodNodeClass, "  role: KarpenterNodeRole-my-cluster\n", "  role: KarpenterNodeRole-my-cluster\n  instanceProfile: my-profile\n  metadataOptions:\n    httpTokens: sometimes\n"),
			[][2]string{{"spec.metadataOptions.httpTokens", "Unsupported value"}, {"spec", "must specify exactly one of ['role', 'instanceProfile']"}}, nil, 2},
		// role: 5 is read as "5" for the rules, so the role/instanceProfile
		// rule does not fire on a role that is there, only mistyped.
		{"a mistyped role is not a missing role",
			edit(t, goodNodeClass, "  role: KarpenterNodeRole-my-cluster\n", "  role: 5\n"),
			[][2]string{{"spec.role", "Invalid value"}}, []string{"must specify exactly one"}, 1},
		{"a removed enum value does not trip rules on its own field",
			edit(t, goodNodePool, "operator: In", "operator: Within"),
			[][2]string{{"spec.template.spec.requirements[0].operator", "Unsupported value"}}, []string{"must have a value defined", "evaluating rule"}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := v.Validate(parseOne(t, tc.manifest))
			for _, w := range tc.want {
				p, ok := findProblem(ps, w[0], w[1])
				if !ok {
					t.Errorf("want %s: %q, got:\n%v", w[0], w[1], ps)
				} else if p.Line == 0 {
					t.Errorf("problem without a line: %+v", p)
				}
			}
			for _, w := range tc.wantNot {
				if _, ok := findProblem(ps, "", w); ok {
					t.Errorf("must not say %q:\n%v", w, ps)
				}
			}
			if n := len(ps.Errors()); tc.wantCount > 0 && n != tc.wantCount {
				t.Errorf("want %d problems, got %d:\n%v", tc.wantCount, n, ps)
			}
		})
	}
}

// fixLine is a line of a fix that is YAML a user would type: "key: value",
// "- key: value" or "key:". Prose ("replace x: 1 with") has spaces in its key.
var fixLine = regexp.MustCompile(`^(- )?[A-Za-z0-9._/-]+:( .*)?$`)

// TestFixesAppliedLiterally: every legacy example, with each printed fix
// applied as written (testdata/legacy-fixed, by hand) or its printed
// replacement taken as it is, validates clean.
func TestFixesAppliedLiterally(t *testing.T) {
	v := mustValidator(t)
	legacy := filepath.Join("..", "..", "examples", "legacy")
	files, err := filepath.Glob(filepath.Join(legacy, "*.yaml"))
	if err != nil || len(files) < 8 {
		t.Fatalf("legacy examples: %v %v", files, err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			docs, err := ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var all Problems
			for _, d := range docs {
				ps := v.Validate(d)
				if len(ps.Errors()) == 0 {
					t.Fatalf("%s %s: a legacy document must have problems", d.Kind, d.Name)
				}
				all = append(all, ps...)
				for _, p := range ps {
					if p.Replacement == "" {
						continue
					}
					repl, err := Parse(name+" (replacement)", []byte(p.Replacement))
					if err != nil {
						t.Fatalf("replacement does not parse: %v\n%s", err, p.Replacement)
					}
					for _, r := range repl {
						if rps := v.Validate(r); len(rps) > 0 {
							t.Errorf("replacement %s %s does not validate:\n%v\n%s", r.Kind, r.Name, rps, p.Replacement)
						}
					}
				}
			}
			fixed := filepath.Join("testdata", "legacy-fixed", name)
			b, err := os.ReadFile(fixed)
			if os.IsNotExist(err) {
				for _, p := range all {
					if !p.Deprecated || p.Replacement == "" {
						t.Fatalf("%s: no hand-fixed copy, and %s is not answered by a replacement", fixed, p.Field)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			fdocs, err := Parse(fixed, b)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range fdocs {
				if ps := v.Validate(d); len(ps) > 0 {
					t.Errorf("the fixed copy does not validate:\n%v", ps)
				}
			}
			have := map[string]bool{}
			for _, l := range strings.Split(string(b), "\n") {
				have[stripComment(l)] = true
			}
			for _, p := range all {
				if p.Field == "spec.template.spec.kubelet" {
					continue // its YAML goes into the EC2NodeClass, another file
				}
				for _, l := range strings.Split(p.Fix, "\n") {
					l = stripComment(l)
					if fixLine.MatchString(l) && !have[l] {
						t.Errorf("fix line %q (for %s) is not in %s", l, p.Field, fixed)
					}
				}
			}
		})
	}
}

func stripComment(l string) string {
	if i := strings.Index(l, " #"); i >= 0 {
		l = l[:i]
	}
	return strings.TrimSpace(l)
}

// TestAliasMatchesFamily: a migrated or incomplete node class is answered
// with the alias of its own family, never al2023 for everything.
func TestAliasMatchesFamily(t *testing.T) {
	v := mustValidator(t)
	template := func(family string) string {
		y := "apiVersion: karpenter.k8s.aws/v1alpha1\nkind: AWSNodeTemplate\nmetadata:\n  name: default\nspec:\n  subnetSelector:\n    karpenter.sh/discovery: my-cluster\n  securityGroupSelector:\n    karpenter.sh/discovery: my-cluster\n"
		if family != "" {
			y += "  amiFamily: " + family + "\n"
		}
		return y
	}
	v1beta1 := func(family string) string {
		return strings.Replace(strings.Replace(goodNodeClass, "karpenter.k8s.aws/v1", "karpenter.k8s.aws/v1beta1", 1),
			"  amiSelectorTerms:\n    - alias: al2023@latest\n", "  amiFamily: "+family+"\n", 1)
	}
	v1Missing := func(family string) string {
		return strings.Replace(goodNodeClass, "  amiSelectorTerms:\n    - alias: al2023@latest\n", "  amiFamily: "+family+"\n", 1)
	}
	tests := []struct{ name, manifest, want string }{
		{"AWSNodeTemplate AL2", template("AL2"), "alias: al2@latest"},
		{"AWSNodeTemplate without a family (AL2 then)", template(""), "alias: al2@latest"},
		{"AWSNodeTemplate Bottlerocket", template("Bottlerocket"), "alias: bottlerocket@latest"},
		{"AWSNodeTemplate Windows2022", template("Windows2022"), "alias: windows2022@latest"},
		{"AWSNodeTemplate Custom", template("Custom"), "id: ami-"},
		{"v1beta1 AL2", v1beta1("AL2"), "alias: al2@latest"},
		{"v1beta1 Bottlerocket", v1beta1("Bottlerocket"), "alias: bottlerocket@latest"},
		{"v1beta1 Ubuntu", v1beta1("Ubuntu"), "amiFamily: AL2"},
		{"v1 without amiSelectorTerms, AL2", v1Missing("AL2"), "alias: al2@latest"},
		{"v1 without amiSelectorTerms, Bottlerocket", v1Missing("Bottlerocket"), "alias: bottlerocket@latest"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := v.Validate(parseOne(t, tc.manifest))
			var text string
			for _, p := range ps {
				text += p.Fix + "\n" + p.Replacement + "\n"
			}
			if !strings.Contains(text, tc.want) {
				t.Errorf("want %q in the answer, got:\n%v", tc.want, ps)
			}
			if tc.want != "alias: al2023@latest" && strings.Contains(text, "alias: al2023@latest") {
				t.Errorf("answered with al2023, not the input's family:\n%v", ps)
			}
		})
	}
	// An AMI chosen by id needs its family named, not an alias pushed on it.
	byID := strings.Replace(goodNodeClass, "- alias: al2023@latest", "- id: ami-0123456789abcdef0", 1)
	p, ok := findProblem(v.Validate(parseOne(t, byID)), "", "must specify amiFamily")
	if !ok || !strings.HasPrefix(p.Fix, "set amiFamily") {
		t.Errorf("AMI by id without amiFamily: %+v", p)
	}
}

// TestUpstreamFieldsAreNeverRemoved: a field Joiner's schema lacks but
// upstream Karpenter accepts is a warning saying so, never "remove it". The
// schema is made to lack one, so the test holds whatever parity Joiner has.
func TestUpstreamFieldsAreNeverRemoved(t *testing.T) {
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range all {
		if crd.Spec.Names.Kind != "EC2NodeClass" {
			continue
		}
		for i := range crd.Spec.Versions {
			spec := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
			delete(spec.Properties, "context")
			crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		}
	}
	v, err := NewValidatorFor(all)
	if err != nil {
		t.Fatal(err)
	}
	ps := v.Validate(parseOne(t, edit(t, goodNodeClass, "  role:", "  context: cr-0123456789abcdef0\n  role:")))
	p, ok := findProblem(ps, "spec.context", "Joiner does not support spec.context yet; upstream Karpenter accepts it")
	if !ok || !p.Warning || strings.Contains(p.Fix, "remove") || len(ps.Errors()) != 0 {
		t.Errorf("an upstream field Joiner lacks: %+v (all: %v)", p, ps)
	}
	// A field upstream does not know either is still a typo to fix.
	ps = v.Validate(parseOne(t, edit(t, goodNodeClass, "  role:", "  rolle: x\n  role:")))
	if p, ok := findProblem(ps, "spec.rolle", "unknown field"); !ok || p.Warning || !strings.Contains(p.Fix, "did you mean role") {
		t.Errorf("a typo: %+v", ps)
	}

	// Today's gaps between Joiner's schema and upstream's, for the record.
	real := mustValidator(t)
	var gaps []string
	for kind, paths := range upstreamFields {
		for gvk, kv := range real.kinds {
			if gvk.Kind != kind {
				continue
			}
			for _, p := range paths {
				if !schemaHas(kv.structural.Properties["spec"], strings.Split(strings.TrimPrefix(p, "spec."), ".")) {
					gaps = append(gaps, kind+" "+p)
				}
			}
		}
	}
	for _, kv := range real.kinds {
		if schemaHas(kv.structural.Properties["spec"], []string{"noSuchField"}) {
			t.Fatal("test bug: schemaHas finds anything")
		}
	}
	t.Logf("upstream fields Joiner's schema lacks (answered as warnings): %v", gaps)
}

func schemaHas(s structuralschema.Structural, segs []string) bool {
	for _, seg := range segs {
		seg = strings.TrimSuffix(seg, "[]")
		if s.Items != nil {
			s = *s.Items
		}
		p, ok := s.Properties[seg]
		if !ok {
			return s.XPreserveUnknownFields
		}
		s = p
	}
	return true
}

// TestStatusIsIgnored: a kubectl dump with status validates as its spec
// does, whatever the status holds.
func TestStatusIsIgnored(t *testing.T) {
	v := mustValidator(t)
	dump := goodNodePool + `status:
  conditions:
    - type: Ready
      status: "True"
      reason: Ready
      lastTransitionTime: "2026-10-01T10:00:05Z"
      message: ""
  nodes: 3
  resources: {cpu: "12", memory: 48Gi}
  somethingNewer: {field: 1}
`
	if ps := v.Validate(parseOne(t, dump)); len(ps) > 0 {
		t.Errorf("status must be ignored, got:\n%v", ps)
	}
	class := goodNodeClass + "status:\n  amis: [{id: ami-1, name: x}]\n  instanceProfile: p\n  conditions: not-a-list\n"
	if ps := v.Validate(parseOne(t, class)); len(ps) > 0 {
		t.Errorf("status must be ignored, got:\n%v", ps)
	}
}

// TestOldAPIsAreAnswered: every old Karpenter API and every kind under the
// wrong apiVersion is a problem with the right apiVersion (or kind) as the
// fix, never skipped; a replacement, where printed, validates.
func TestOldAPIsAreAnswered(t *testing.T) {
	v := mustValidator(t)
	provisioner := func(apiVersion, spec string) string {
		return "apiVersion: " + apiVersion + "\nkind: Provisioner\nmetadata:\n  name: default\nspec:\n" + spec
	}
	alpha5 := "  requirements:\n    - key: karpenter.sh/capacity-type\n      operator: In\n      values: [spot]\n  providerRef:\n    name: default\n  ttlSecondsAfterEmpty: 30\n"
	alpha3 := "  instanceTypes: [m5.large, m5.xlarge]\n  zones: [us-east-1a]\n  architecture: amd64\n  provider:\n    instanceProfile: KarpenterNodeInstanceProfile\n    subnetSelector:\n      karpenter.sh/discovery: my-cluster\n    securityGroupSelector:\n      karpenter.sh/discovery: my-cluster\n  ttlSecondsAfterEmpty: 30\n"
	early := "  cluster:\n    name: my-cluster\n    endpoint: https://example.com\n  instanceTypes: [m5.large]\n  ttlSeconds: 30\n"
	withKind := func(apiVersion, kind, body string) string {
		return "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata:\n  name: default\n" + body
	}
	poolBody := goodNodePool[strings.Index(goodNodePool, "spec:"):]
	classBody := goodNodeClass[strings.Index(goodNodeClass, "spec:"):]
	claimBody := "spec:\n  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m6i.xlarge]}]\n  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n"
	tests := []struct {
		name, manifest, field, fix string
		warning                    bool
	}{
		{"karpenter.sh/v1alpha5 Provisioner", provisioner("karpenter.sh/v1alpha5", alpha5), "kind", "replace the document with the NodePool below", false},
		{"karpenter.sh/v1alpha4 Provisioner", provisioner("karpenter.sh/v1alpha4", alpha5), "kind", "replace the document with the NodePool below", false},
		{"karpenter.sh/v1alpha3 Provisioner with an inline provider", provisioner("karpenter.sh/v1alpha3", alpha3), "kind", "spec.provider → an EC2NodeClass named default", false},
		{"provisioning.karpenter.sh/v1alpha2 Provisioner", provisioner("provisioning.karpenter.sh/v1alpha2", early), "kind", "spec.cluster has no replacement", false},
		{"provisioning.karpenter.sh/v1alpha1 Provisioner", provisioner("provisioning.karpenter.sh/v1alpha1", early), "kind", "instanceTypes → a requirement on node.kubernetes.io/instance-type", false},
		{"karpenter.k8s.aws/v1alpha1 Provisioner", provisioner("karpenter.k8s.aws/v1alpha1", alpha5), "kind", "replace the document with the NodePool below", false},
		{"karpenter.k8s.aws/v1alpha5 AWSNodeTemplate", withKind("karpenter.k8s.aws/v1alpha5", "AWSNodeTemplate", "spec:\n  subnetSelector: {a: b}\n  securityGroupSelector: {a: b}\n"), "kind", "replace the document with the EC2NodeClass below", false},
		{"karpenter.sh/v1alpha5 Machine", withKind("karpenter.sh/v1alpha5", "Machine", "spec: {}\n"), "kind", "delete this document", false},
		{"karpenter.sh/v2 NodePool", withKind("karpenter.sh/v2", "NodePool", poolBody), "apiVersion", "apiVersion: karpenter.sh/v1", false},
		{"karpenter.sh/v1beta2 NodeClaim", withKind("karpenter.sh/v1beta2", "NodeClaim", claimBody), "apiVersion", "apiVersion: karpenter.sh/v1", false},
		{"karpenter.k8s.aws/v2 EC2NodeClass", withKind("karpenter.k8s.aws/v2", "EC2NodeClass", classBody), "apiVersion", "apiVersion: karpenter.k8s.aws/v1", false},
		{"EC2NodeClass under karpenter.sh/v1", withKind("karpenter.sh/v1", "EC2NodeClass", classBody), "apiVersion", "apiVersion: karpenter.k8s.aws/v1", false},
		{"NodePool under karpenter.k8s.aws/v1", withKind("karpenter.k8s.aws/v1", "NodePool", poolBody), "apiVersion", "apiVersion: karpenter.sh/v1", false},
		{"NodeClaim under karpenter.k8s.aws/v1", withKind("karpenter.k8s.aws/v1", "NodeClaim", claimBody), "apiVersion", "apiVersion: karpenter.sh/v1", false},
		{"NodePool under the core v1", withKind("v1", "NodePool", poolBody), "apiVersion", "apiVersion: karpenter.sh/v1", false},
		{"a NodePool spelled nodepool", withKind("karpenter.sh/v1", "nodepool", poolBody), "kind", "kind: NodePool", false},
		{"an unknown Karpenter kind", withKind("karpenter.sh/v1", "NodePools", poolBody), "kind", "did you mean kind: NodePool", false},
		{"NodeOverlay under karpenter.sh/v1", withKind("karpenter.sh/v1", "NodeOverlay", "spec: {weight: 10, requirements: [{key: team, operator: In, values: [ml]}]}\n"), "kind", "did you mean kind: NodeOverlay (apiVersion: karpenter.sh/v1alpha1)", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := parseOne(t, tc.manifest)
			if !IsKarpenter(d) {
				t.Fatal("not recognised as Karpenter input")
			}
			ps := v.Validate(d)
			var found *Problem
			for i, p := range ps {
				if p.Field == tc.field && strings.Contains(p.Fix+p.Message, tc.fix) {
					found = &ps[i]
				}
			}
			if found == nil {
				t.Fatalf("want a problem at %s with %q, got:\n%v", tc.field, tc.fix, ps)
			}
			if found.Warning != tc.warning || (len(ps.Errors()) == 0) != tc.warning {
				t.Errorf("warning = %v, want %v:\n%v", found.Warning, tc.warning, ps)
			}
			for _, p := range ps {
				if p.Replacement == "" {
					continue
				}
				repl, err := Parse("replacement", []byte(p.Replacement))
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range repl {
					if rps := v.Validate(r); len(rps) > 0 {
						t.Errorf("the replacement does not validate:\n%v\n%s", rps, p.Replacement)
					}
				}
			}
		})
	}
	// Another project's kind of the same name is not Karpenter's.
	hs := parseOne(t, "apiVersion: hypershift.openshift.io/v1beta1\nkind: NodePool\nmetadata: {name: x}\n")
	if IsKarpenter(hs) {
		t.Error("hypershift's NodePool taken for Karpenter's")
	}
}

// TestHelmTemplates: a template is answered as one, with its line, and a
// quoted or block-scalar "{{" outside a chart is an ordinary string.
func TestHelmTemplates(t *testing.T) {
	tests := []struct {
		name, in string
		line     int // 0: must parse
	}{
		{"an action as a value", "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: {{ .Values.name }}\n", 4},
		{"a control line", "{{- if .Values.enabled }}\napiVersion: karpenter.sh/v1\nkind: NodePool\n{{- end }}\n", 1},
		{"a quoted annotation", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n    message: \"{{ .Name }} is up\"\n", 0},
		{"a comment", "# {{ not a template }}\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", 0},
		{"a block scalar", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  tmpl: |\n    hello {{ .Name }}\n    bye\nother: 1\n", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.in))
			if tc.line == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			ps, _ := err.(Problems)
			if len(ps) != 1 || ps[0].Line != tc.line || !strings.Contains(ps[0].Message, "Helm template") || !strings.Contains(ps[0].Fix, "helm template") {
				t.Fatalf("want a Helm answer at line %d, got %v", tc.line, err)
			}
		})
	}
	// In a chart's templates/, a quoted action is a template too.
	chart := t.TempDir()
	if err := os.MkdirAll(filepath.Join(chart, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(chart, "Chart.yaml"), []byte("apiVersion: v2\nname: c\nversion: 0.1.0\n"), 0o644)
	tmpl := filepath.Join(chart, "templates", "nodepool.yaml")
	_ = os.WriteFile(tmpl, []byte("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: \"{{ .Release.Name }}\"\n"), 0o644)
	if _, err := ParseFile(tmpl); err == nil || !strings.Contains(err.Error(), "nodepool.yaml:4") || !strings.Contains(err.Error(), "render it first") {
		t.Errorf("chart template: %v", err)
	}
}

// TestQuantities: a quantity written wrongly is named by field and line,
// with the value it should be.
func TestQuantities(t *testing.T) {
	v := mustValidator(t)
	kubelet := func(block string) string {
		return edit(t, goodNodeClass, "  subnetSelectorTerms:", "  kubelet:\n"+block+"  subnetSelectorTerms:")
	}
	tests := []struct {
		name, manifest, field, fix string
		line                       int
		warning                    bool
	}{
		{"cpu limit in cores", edit(t, goodNodePool, "  template:\n", "  limits: {cpu: 0.5cores}\n  template:\n"), "spec.limits.cpu", "cpu: 500m", 6, false},
		{"memory limit in GB", edit(t, goodNodePool, "  template:\n", "  limits:\n    memory: 1000GB\n  template:\n"), "spec.limits.memory", "memory: 1000G, or 1000Gi", 7, false},
		{"kubeReserved memory in GB", kubelet("    kubeReserved:\n      memory: 1GB\n"), "spec.kubelet.kubeReserved.memory", "memory: 1G, or 1Gi", 11, false},
		{"systemReserved cpu with a space", kubelet("    systemReserved:\n      cpu: 100 m\n"), "spec.kubelet.systemReserved.cpu", "cpu: 100m", 11, false},
		{"evictionHard with a spaced percent", kubelet("    evictionHard:\n      memory.available: 5 %\n"), "spec.kubelet.evictionHard.memory.available", `"5%"`, 11, false},
		{"evictionHard over 100%", kubelet("    evictionHard:\n      memory.available: 105%\n"), "spec.kubelet.evictionHard.memory.available", "a percentage", 11, false},
		{"kubeReserved as an expression", kubelet("    kubeReserved:\n      memory: \"self.memory * 0.05\"\n"), "spec.kubelet.kubeReserved.memory", "keep it", 11, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := v.Validate(parseOne(t, tc.manifest))
			var p *Problem
			for i := range ps {
				if ps[i].Field == tc.field {
					p = &ps[i]
				}
			}
			if p == nil {
				t.Fatalf("want a problem at %s, got:\n%v", tc.field, ps)
			}
			if !strings.Contains(p.Fix, tc.fix) || p.Line != tc.line || p.Warning != tc.warning {
				t.Errorf("want line %d, fix with %q, warning %v; got %+v", tc.line, tc.fix, tc.warning, *p)
			}
			if n := len(ps); n != 1 {
				t.Errorf("one mistake, one problem; got %d:\n%v", n, ps)
			}
		})
	}
	// A workload's quantity, decoded as the simulator decodes it.
	d := parseOne(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n        - name: web\n          image: web\n          resources:\n            limits: {memory: 512MB}\n")
	_, ps := DecodeBuiltin(d)
	if len(ps) != 1 || ps[0].Field != "spec.template.spec.containers[0].resources.limits.memory" || ps[0].Line != 13 || !strings.Contains(ps[0].Fix, "512M, or 512Mi") {
		t.Errorf("Deployment quantity: %v", ps)
	}
}

// TestDuplicates: an object defined twice is named with both places.
func TestDuplicates(t *testing.T) {
	parse := func(file, y string) []*Document {
		docs, err := Parse(file, []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		return docs
	}
	deploy := func(ns string) string {
		y := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
		if ns != "" {
			y += "  namespace: " + ns + "\n"
		}
		return y
	}
	var docs []*Document
	docs = append(docs, parse("a.yaml", goodNodePool)...)
	docs = append(docs, parse("b.yaml", "# another\n"+goodNodePool)...)
	docs = append(docs, parse("c.yaml", deploy("")+"---\n"+deploy("shop"))...)
	docs = append(docs, parse("d.yaml", deploy("default"))...)
	ps := Duplicates(docs)
	if len(ps) != 2 {
		t.Fatalf("want 2 duplicates (the NodePool, the Deployment in default), got:\n%v", ps)
	}
	if ps[0].File != "b.yaml" || ps[0].Line != 5 || !strings.Contains(ps[0].Message, "a.yaml:4") {
		t.Errorf("NodePool duplicate must name both files and lines: %v", ps[0])
	}
	if ps[1].File != "d.yaml" || !strings.Contains(ps[1].Message, "Deployment default/web") || !strings.Contains(ps[1].Message, "c.yaml:4") {
		t.Errorf("Deployment duplicate: %v", ps[1])
	}
}
