//go:build integration

package chart

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// prometheusOperator is the Prometheus Operator release whose CRDs the
// ServiceMonitor and PrometheusRule are installed against.
const prometheusOperator = "github.com/prometheus-operator/prometheus-operator@v0.85.0"

// TestChartMonitoringObjectsInstall: with the Prometheus Operator's own
// CRDs (its module, from the Go module proxy) in the API server, helm
// installs the chart with the ServiceMonitor, PrometheusRule and dashboard
// on, and the API server accepts them with no unknown field.
func TestChartMonitoringObjectsInstall(t *testing.T) {
	out, err := exec.Command("go", "mod", "download", "-json", prometheusOperator).Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", prometheusOperator, err)
	}
	var dir string
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), `"Dir": "`); ok {
			dir = strings.TrimSuffix(v, `",`)
		}
	}
	if dir == "" {
		t.Fatalf("go mod download %s named no directory:\n%s", prometheusOperator, out)
	}
	crdDir := filepath.Join(dir, "example", "prometheus-operator-crd")
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{ErrorIfPathMissing: true, Paths: []string{
		filepath.Join(crdDir, "monitoring.coreos.com_servicemonitors.yaml"),
		filepath.Join(crdDir, "monitoring.coreos.com_prometheusrules.yaml"),
	}}); err != nil {
		t.Fatal(err)
	}
	const ns = "joiner-monitoring"
	_, stderr, err := helmWithStderr("install", "monitoring", chartDir, "--namespace", ns, "--create-namespace",
		"--values", filepath.Join("testdata", "production.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The API server warns of fields its schema does not know (and drops them).
	if strings.Contains(stderr, "unknown field") {
		t.Errorf("the API server dropped fields of the chart's objects:\n%s", stderr)
	}
	admin := adminClient(t)
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"},
		{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"},
		{Version: "v1", Kind: "ConfigMap"},
	} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := admin.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/instance": "monitoring"}); err != nil {
			t.Errorf("%s: %v", gvk.Kind, err)
			continue
		}
		if len(list.Items) != 1 {
			t.Errorf("%d %s objects installed, want 1", len(list.Items), gvk.Kind)
		}
	}
	if _, err := helm("uninstall", "monitoring", "--namespace", ns, "--wait"); err != nil {
		t.Error(err)
	}
}
