//go:build integration

package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/joiner-autoscaler/joiner/pkg/apis/crds"
	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

// helm runs the helm binary against the test's API server and returns its
// stdout; an error carries its stderr.
func helm(args ...string) (string, error) {
	out, _, err := helmWithStderr(args...)
	return out, err
}

func helmWithStderr(args ...string) (string, string, error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(helmBin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// No repositories, plugins or caches of the user's: helm stays inside the test.
	home, err := os.MkdirTemp("", "helm-home")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(home)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+home, "HELM_CACHE_HOME="+home, "HELM_DATA_HOME="+home, "KUBECONFIG="+kubeconfig)
	if err := cmd.Run(); err != nil {
		return out.String(), errOut.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String(), nil
}

// render is `helm template` of the chart as release joiner in namespace
// joiner-system, decoded.
func render(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	out, err := helm(append([]string{"template", "joiner", chartDir, "--namespace", "joiner-system"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, out)
}

func decode(t *testing.T, manifests string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("decoding helm's output: %v", err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// one decodes the one rendered object of a kind into T.
func one[T any](t *testing.T, objs []*unstructured.Unstructured, kind string) *T {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d objects of kind %s rendered, want 1", len(found), kind)
	}
	b, err := found[0].MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := yaml.UnmarshalStrict(b, out); err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
	return out
}

func kinds(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind())
	}
	slices.Sort(out)
	return out
}

func TestLintStrict(t *testing.T) {
	for _, args := range [][]string{nil, {"--values", filepath.Join("testdata", "production.yaml")}} {
		if out, err := helm(append([]string{"lint", "--strict", chartDir}, args...)...); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

func TestTemplateDefaults(t *testing.T) {
	objs := render(t)
	want := []string{"ClusterRole", "ClusterRoleBinding", "Deployment", "PodDisruptionBudget", "Role", "RoleBinding", "Service", "ServiceAccount"}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Errorf("rendered kinds %v, want %v (ServiceMonitor, PrometheusRule and the dashboard are off by default)", got, want)
	}
	d := one[appsv1.Deployment](t, objs, "Deployment")
	spec := d.Spec.Template.Spec
	if *d.Spec.Replicas != 2 || spec.PriorityClassName != "system-cluster-critical" || spec.ServiceAccountName != "joiner" {
		t.Errorf("replicas %d, priorityClassName %q, serviceAccountName %q", *d.Spec.Replicas, spec.PriorityClassName, spec.ServiceAccountName)
	}
	c := spec.Containers[0]
	if c.Image != "ghcr.io/joiner-autoscaler/joiner:v0.1.0" {
		t.Errorf("image %s, want the appVersion's tag", c.Image)
	}
	for _, arg := range []string{"controller", "--cloud-provider=kwok", "--leader-elect=true", "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081",
		"--log-level=info", "--batch-idle-duration=1s", "--batch-max-duration=10s", "--feature-gates=SpotToSpotConsolidation=false,NodeRepair=false,NodeOverlay=false,CapacityBuffer=false,ReservedCapacity=true"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %v lack %s", c.Args, arg)
		}
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes: liveness %+v, readiness %+v", c.LivenessProbe, c.ReadinessProbe)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("requests %v", c.Resources.Requests)
	}
	// Pod Security's restricted profile (the apply test has the API server check it too).
	sc, psc := c.SecurityContext, spec.SecurityContext
	if sc == nil || psc == nil || !*psc.RunAsNonRoot || *psc.RunAsUser != 65532 || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
		!*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("security context: pod %+v, container %+v", psc, sc)
	}
	if len(spec.TopologySpreadConstraints) != 1 || spec.TopologySpreadConstraints[0].TopologyKey != corev1.LabelTopologyZone ||
		spec.TopologySpreadConstraints[0].LabelSelector == nil || spec.TopologySpreadConstraints[0].LabelSelector.MatchLabels["app.kubernetes.io/instance"] != "joiner" {
		t.Errorf("topology spread %+v", spec.TopologySpreadConstraints)
	}
	na := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0]
	if na.Key != "karpenter.sh/nodepool" || na.Operator != corev1.NodeSelectorOpDoesNotExist || spec.Affinity.PodAntiAffinity == nil {
		t.Errorf("affinity %+v", spec.Affinity)
	}
	pdb := one[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget")
	if pdb.Spec.MaxUnavailable.IntValue() != 1 || pdb.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != "joiner" {
		t.Errorf("PDB %+v", pdb.Spec)
	}
	svc := one[corev1.Service](t, objs, "Service")
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort.String() != "http-metrics" {
		t.Errorf("metrics Service ports %+v", svc.Spec.Ports)
	}
	checkLeastPrivilege(t, one[rbacv1.ClusterRole](t, objs, "ClusterRole").Rules, one[rbacv1.Role](t, objs, "Role").Rules)
}

// checkLeastPrivilege: no wildcard, nothing on Secrets or ConfigMaps, no
// pod creation, and leases only in the Role. That the controller needs no
// more is TestChartControllerRunsWithItsServiceAccount's.
func checkLeastPrivilege(t *testing.T, cluster, ns []rbacv1.PolicyRule) {
	t.Helper()
	for _, r := range append(append([]rbacv1.PolicyRule(nil), cluster...), ns...) {
		for _, s := range slices.Concat(r.APIGroups, r.Resources, r.Verbs) {
			if strings.Contains(s, "*") {
				t.Errorf("rule %+v has a wildcard", r)
			}
		}
		if slices.Contains(r.Resources, "secrets") || slices.Contains(r.Resources, "configmaps") {
			t.Errorf("rule %+v reaches Secrets or ConfigMaps", r)
		}
		if slices.Contains(r.Resources, "pods") && slices.Contains(r.Verbs, "create") {
			t.Errorf("rule %+v creates pods", r)
		}
	}
	for _, r := range cluster {
		if slices.Contains(r.Resources, "leases") {
			t.Errorf("the ClusterRole reaches leases cluster-wide: %+v", r)
		}
	}
}

func TestTemplateProductionValues(t *testing.T) {
	objs := render(t, "--values", filepath.Join("testdata", "production.yaml"))
	want := []string{"ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "PodDisruptionBudget", "PrometheusRule", "Role", "RoleBinding", "Service", "ServiceAccount", "ServiceMonitor"}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Errorf("rendered kinds %v, want %v", got, want)
	}
	sa := one[corev1.ServiceAccount](t, objs, "ServiceAccount")
	if sa.Name != "joiner-controller" || sa.Annotations["eks.amazonaws.com/role-arn"] != "arn:aws:iam::111122223333:role/joiner" {
		t.Errorf("ServiceAccount %s, annotations %v", sa.Name, sa.Annotations)
	}
	d := one[appsv1.Deployment](t, objs, "Deployment")
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	if d.Name != "autoscaler" || *d.Spec.Replicas != 3 || spec.ServiceAccountName != "joiner-controller" || spec.PriorityClassName != "system-node-critical" ||
		d.Spec.Template.Labels["team"] != "platform" {
		t.Errorf("deployment %s: replicas %d, serviceAccountName %s, priorityClassName %s, pod labels %v",
			d.Name, *d.Spec.Replicas, spec.ServiceAccountName, spec.PriorityClassName, d.Spec.Template.Labels)
	}
	if c.Image != "registry.example.com/platform/joiner@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" {
		t.Errorf("image %s, want the digest", c.Image)
	}
	for _, arg := range []string{"--region=us-west-2", "--zones=us-west-2a,us-west-2b", "--metrics-bind-address=:9090", "--health-probe-bind-address=:9091",
		"--log-level=debug", "--batch-idle-duration=2s", "--batch-max-duration=20s", "--feature-gates=SpotToSpotConsolidation=true,NodeRepair=true,NodeOverlay=true,CapacityBuffer=true,ReservedCapacity=true", "--min-values-policy=BestEffort", "--decisions=joiner"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %v lack %s", c.Args, arg)
		}
	}
	if spec.Affinity.PodAntiAffinity != nil || spec.TopologySpreadConstraints[0].WhenUnsatisfiable != corev1.DoNotSchedule {
		t.Errorf("anti-affinity %+v, spread %+v", spec.Affinity.PodAntiAffinity, spec.TopologySpreadConstraints)
	}
	if c.Resources.Limits.Memory().String() != "2Gi" || c.Env[0].Name != "GOMEMLIMIT" {
		t.Errorf("limits %v, env %v", c.Resources.Limits, c.Env)
	}
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceMonitor", "PrometheusRule":
			if o.GetLabels()["release"] != "prometheus" {
				t.Errorf("%s labels %v", o.GetKind(), o.GetLabels())
			}
		case "ConfigMap":
			if o.GetLabels()["grafana_dashboard"] != "1" || o.GetAnnotations()["grafana_folder"] != "Platform" {
				t.Errorf("dashboard labels %v, annotations %v", o.GetLabels(), o.GetAnnotations())
			}
		}
	}
	checkLeastPrivilege(t, one[rbacv1.ClusterRole](t, objs, "ClusterRole").Rules, one[rbacv1.Role](t, objs, "Role").Rules)
}

// TestTemplateAWSValues: the values docs/aws.md tells an operator to
// install with on EKS (its first yaml block) give the controller the AWS
// provider's flags and the ClusterRole the EC2NodeClass rules — which the
// default (kwok) install does not have.
func TestTemplateAWSValues(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "aws.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, found := strings.Cut(string(doc), "```yaml\n")
	block, _, closed := strings.Cut(block, "```")
	if !found || !closed {
		t.Fatal("docs/aws.md has no yaml block of Helm values")
	}
	values := filepath.Join(t.TempDir(), "aws-values.yaml")
	if err := os.WriteFile(values, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	objs := render(t, "--values", values)
	if sa := one[corev1.ServiceAccount](t, objs, "ServiceAccount"); sa.Name != "joiner" || sa.Annotations["eks.amazonaws.com/role-arn"] == "" {
		t.Errorf("ServiceAccount %s with annotations %v: docs/aws.md's IRSA and Pod Identity commands name joiner-system/joiner", sa.Name, sa.Annotations)
	}
	c := one[appsv1.Deployment](t, objs, "Deployment").Spec.Template.Spec.Containers[0]
	for _, arg := range []string{"--cloud-provider=aws", "--region=us-east-1", "--cluster-name=production",
		"--cluster-endpoint=https://ABCDEF0123456789.gr7.us-east-1.eks.amazonaws.com", "--interruption-queue=production"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %v lack %s", c.Args, arg)
		}
	}
	nodeClassRules := func(rules []rbacv1.PolicyRule) (verbs []string) {
		for _, r := range rules {
			if slices.Contains(r.APIGroups, "karpenter.k8s.aws") {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						verbs = append(verbs, res+":"+v)
					}
				}
			}
		}
		slices.Sort(verbs)
		return verbs
	}
	want := []string{"ec2nodeclasses/status:patch", "ec2nodeclasses:get", "ec2nodeclasses:list", "ec2nodeclasses:patch", "ec2nodeclasses:update", "ec2nodeclasses:watch"}
	cr := one[rbacv1.ClusterRole](t, objs, "ClusterRole")
	if got := nodeClassRules(cr.Rules); !slices.Equal(got, want) {
		t.Errorf("aws ClusterRole's EC2NodeClass rules %v, want %v", got, want)
	}
	checkLeastPrivilege(t, cr.Rules, one[rbacv1.Role](t, objs, "Role").Rules)
	if got := nodeClassRules(one[rbacv1.ClusterRole](t, render(t), "ClusterRole").Rules); len(got) > 0 {
		t.Errorf("the kwok install's ClusterRole reaches EC2NodeClasses: %v", got)
	}
}

// TestValuesMistakesFail: a typo in a key, a value of the wrong type,
// pattern or enum, and replicas without leader election each fail `helm
// install` (into the test's API server), saying what is wrong.
func TestValuesMistakesFail(t *testing.T) {
	for _, tc := range []struct {
		set  string
		want string
	}{
		{"replicsa=3", "additional properties 'replicsa' not allowed"},
		{"serviceAccount.anotations.a=b", "additional properties 'anotations' not allowed"},
		{"settings.featureGates.spotToSpot=true", "additional properties 'spotToSpot' not allowed"},
		{"replicas=two", "/replicas"},
		{"settings.cloudProvider=gce", "/settings/cloudProvider"},
		{"settings.cloudProvider=aws", "/settings/aws/cluster"}, // aws without clusterName and clusterEndpoint
		{"settings.cloudProvider=aws,settings.aws.clusterName=prod,settings.aws.clusterEndpoint=http://api", "/settings/aws/clusterEndpoint"},
		{"settings.batchIdleDuration=1 second", "/settings/batchIdleDuration"},
		{"logLevel=verbose", "/logLevel"},
		{"settings.minValuesPolicy=Lax", "/settings/minValuesPolicy"},
		{"settings.decisions=upstream", "/settings/decisions"},
		{"settings.batchMaxDuration=10", "/settings/batchMaxDuration"},
		{"settings.featureGates.staticCapacity=true", "additional properties 'staticCapacity' not allowed"},
		{"settings.featureGates.nodeRepair=sometimes", "/settings/featureGates/nodeRepair"},
		{"settings.featureGates.spotToSpotConsolidation=yes please", "/settings/featureGates/spotToSpotConsolidation"},
		{"leaderElection.enabled=false", "replicas > 1 needs leaderElection.enabled"},
	} {
		out, err := helm("install", "joiner", chartDir, "--namespace", "joiner-mistakes", "--create-namespace", "--set", tc.set)
		if err == nil {
			t.Errorf("--set %s: helm install succeeded:\n%.300s", tc.set, out)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %s: %v\nwant it to say %q", tc.set, err, tc.want)
		}
	}
	// One replica needs no leader election.
	if _, err := helm("install", "joiner", chartDir, "--dry-run=server", "--namespace", "joiner-mistakes", "--set", "replicas=1,leaderElection.enabled=false"); err != nil {
		t.Error(err)
	}
}

// TestChartCRDsAreTheGenerated: the chart installs the CRDs the binary
// validates with (controller-gen's, with crds.Patch's additions).
func TestChartCRDsAreTheGenerated(t *testing.T) {
	want, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(chartDir, "crds", "*.yaml"))
	if err != nil || len(files) != len(want) {
		t.Fatalf("%d CRD files in the chart (%v), want %d", len(files), err, len(want))
	}
	got := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		got[crd.Name] = crd
	}
	for _, w := range want {
		g, ok := got[w.Name]
		if !ok {
			t.Errorf("the chart lacks CRD %s", w.Name)
			continue
		}
		if !equality.Semantic.DeepEqual(g.Spec, w.Spec) {
			t.Errorf("the chart's CRD %s differs from pkg/apis/crds (with crds.Patch): run hack/codegen.sh", w.Name)
		}
	}
}

// TestTemplateRecorderRole: recorder.clusterRole renders the read-only
// ClusterRole `joiner record` needs — get, list and watch on every kind a
// trace records (pkg/trace.Kinds), nothing on Secrets or ConfigMaps, no
// write verb — and recorder.subjects binds it.
func TestTemplateRecorderRole(t *testing.T) {
	if slices.ContainsFunc(render(t), func(o *unstructured.Unstructured) bool { return strings.HasSuffix(o.GetName(), "-recorder") }) {
		t.Error("the recorder's ClusterRole renders by default")
	}
	objs := render(t, "--set", "recorder.clusterRole=true", "--set", "recorder.subjects[0].kind=Group", "--set", "recorder.subjects[0].name=platform-team",
		"--set", "recorder.subjects[0].apiGroup=rbac.authorization.k8s.io")
	var role *rbacv1.ClusterRole
	var binding *rbacv1.ClusterRoleBinding
	for _, o := range objs {
		if o.GetName() != "joiner-recorder" {
			continue
		}
		b, _ := o.MarshalJSON()
		switch o.GetKind() {
		case "ClusterRole":
			role = &rbacv1.ClusterRole{}
			if err := json.Unmarshal(b, role); err != nil {
				t.Fatal(err)
			}
		case "ClusterRoleBinding":
			binding = &rbacv1.ClusterRoleBinding{}
			if err := json.Unmarshal(b, binding); err != nil {
				t.Fatal(err)
			}
		}
	}
	if role == nil || binding == nil || binding.RoleRef.Name != "joiner-recorder" || len(binding.Subjects) != 1 || binding.Subjects[0].Name != "platform-team" {
		t.Fatalf("role %v, binding %+v", role != nil, binding)
	}
	scheme, err := trace.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	groupOf := map[string]string{}
	for gvk := range scheme.AllKnownTypes() {
		groupOf[gvk.Kind] = gvk.Group
	}
	granted := map[string]bool{}
	for _, r := range role.Rules {
		for _, v := range r.Verbs {
			if v != "get" && v != "list" && v != "watch" {
				t.Errorf("rule %+v grants %s", r, v)
			}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if res == "secrets" || res == "configmaps" {
					t.Errorf("rule %+v reaches %s", r, res)
				}
				granted[g+"/"+res] = slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch")
			}
		}
	}
	for _, k := range trace.Kinds {
		plural := strings.ToLower(k.Name) + "s"
		if strings.HasSuffix(k.Name, "s") {
			plural = strings.ToLower(k.Name) + "es"
		}
		if key := groupOf[k.Name] + "/" + plural; !granted[key] {
			t.Errorf("the recorder records %s but the ClusterRole does not let it list and watch %s", k.Name, key)
		}
	}
}

// TestTemplateDRA: by default the controller ignores device claims, as
// upstream's, and the ClusterRole reaches no resource.k8s.io object; with
// settings.ignoreDRARequests false the flag reaches the controller (where
// upstream's chart's `with` drops a false) and the ClusterRole lists and
// watches the four kinds device claims are allocated from, and no more.
func TestTemplateDRA(t *testing.T) {
	dra := func(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
		var out []rbacv1.PolicyRule
		for _, r := range rules {
			if slices.Contains(r.APIGroups, "resource.k8s.io") {
				out = append(out, r)
			}
		}
		return out
	}
	objs := render(t)
	if args := one[appsv1.Deployment](t, objs, "Deployment").Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--ignore-dra-requests=true") {
		t.Errorf("default args %v lack --ignore-dra-requests=true", args)
	}
	if rules := dra(one[rbacv1.ClusterRole](t, objs, "ClusterRole").Rules); len(rules) != 0 {
		t.Errorf("the default ClusterRole reaches resource.k8s.io: %+v", rules)
	}
	objs = render(t, "--set", "settings.ignoreDRARequests=false")
	if args := one[appsv1.Deployment](t, objs, "Deployment").Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--ignore-dra-requests=false") {
		t.Errorf("args %v lack --ignore-dra-requests=false", args)
	}
	rules := dra(one[rbacv1.ClusterRole](t, objs, "ClusterRole").Rules)
	if len(rules) != 1 || !slices.Equal(rules[0].Verbs, []string{"list", "watch"}) ||
		!slices.Equal(rules[0].Resources, []string{"resourceclaims", "resourceclaimtemplates", "deviceclasses", "resourceslices"}) {
		t.Errorf("resource.k8s.io rules %+v: want list and watch on the four kinds", rules)
	}
}
