// Package promrules checks the Helm chart's PrometheusRule and Grafana
// dashboard with Prometheus's own libraries, as `promtool check rules`
// would: every rule parses and validates (expressions, durations, label
// names, annotation templates), every alert links its runbook paragraph in
// docs/alerts.md, and the metric names the PromQL selects are the list in
// metrics.txt, which test/chart checks against the controller's real
// /metrics.
//
// It is its own Go module so that the main module does not take on the
// Prometheus server's module graph (a higher go directive and newer
// client_golang and common than controller-runtime's) to parse PromQL in a test.
//
// HELM names a helm binary (hack/helm.sh builds one); go test -update
// rewrites metrics.txt.
package promrules

import (
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite metrics.txt with the metrics the rules and dashboard use")

var chartDir = filepath.Join("..", "..", "charts", "joiner")

// render is one template of the chart, with the rule and dashboard on.
func render(t *testing.T, template string) []byte {
	t.Helper()
	helm := os.Getenv("HELM")
	if helm == "" {
		t.Fatal("HELM is not set: run hack/test.sh, or export HELM=$(hack/helm.sh)")
	}
	cmd := exec.Command(helm, "template", "joiner", chartDir, "--namespace", "joiner-system",
		"--set", "prometheusRule.enabled=true,dashboard.enabled=true", "--show-only", template)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template --show-only %s: %v", template, err)
	}
	return out
}

var promql = parser.NewParser(parser.Options{})

// TestPrometheusRule validates the rendered PrometheusRule's groups as
// Prometheus loads a rule file, and its alerts' runbooks.
func TestPrometheusRule(t *testing.T) {
	groups := ruleGroups(t)
	if len(groups.Groups) == 0 {
		t.Fatal("the PrometheusRule has no groups")
	}
	docs, err := os.ReadFile(filepath.Join("..", "..", "docs", "alerts.md"))
	if err != nil {
		t.Fatal(err)
	}
	var alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts = append(alerts, r.Alert)
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("alert %s: labels %v, annotations %v; want a severity and a summary", r.Alert, r.Labels, r.Annotations)
			}
			if want := "#" + strings.ToLower(r.Alert); !strings.HasSuffix(r.Annotations["runbook_url"], want) {
				t.Errorf("alert %s: runbook_url %q, want it to end %s", r.Alert, r.Annotations["runbook_url"], want)
			}
			// A heading of its own, followed by a paragraph.
			if !regexp.MustCompile(`(?m)^## ` + r.Alert + `\n\n\S`).Match(docs) {
				t.Errorf("docs/alerts.md has no runbook paragraph under \"## %s\"", r.Alert)
			}
		}
	}
	for _, want := range []string{"JoinerControllerDown", "JoinerCloudProviderErrors", "JoinerPodStartupSlow", "JoinerNodeClaimLaunchFailing", "JoinerNodeClaimLifecycleErrors", "JoinerNodePoolAtLimit"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("the PrometheusRule lacks alert %s", want)
		}
	}
	// NodeClaimNotFoundError is what a deleted instance reports: not a
	// cloud problem worth waking anyone for.
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "JoinerCloudProviderErrors" && !strings.Contains(r.Expr, `error!="NodeClaimNotFoundError"`) {
				t.Errorf("JoinerCloudProviderErrors counts NodeClaimNotFoundError: %s", r.Expr)
			}
		}
	}
}

func ruleGroups(t *testing.T) *rulefmt.RuleGroups {
	t.Helper()
	var rule struct {
		Kind string         `json:"kind"`
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(render(t, "templates/prometheusrule.yaml"), &rule); err != nil {
		t.Fatal(err)
	}
	if rule.Kind != "PrometheusRule" {
		t.Fatalf("rendered a %q, want a PrometheusRule", rule.Kind)
	}
	spec, err := yaml.Marshal(rule.Spec)
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, promql, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, err := range errs {
		t.Errorf("the PrometheusRule's groups: %v", err)
	}
	if groups == nil {
		t.FailNow()
	}
	return groups
}

// grafanaVariables are what Grafana substitutes before a query reaches
// Prometheus, with a value of the same syntax.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// dashboardExprs parses every panel's queries and checks the panels.
func dashboardExprs(t *testing.T) map[string]parser.Expr {
	t.Helper()
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(render(t, "templates/dashboard-configmap.yaml"), &cm); err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title      string `json:"title"`
			Datasource struct {
				UID string `json:"uid"`
			} `json:"datasource"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(cm.Data["joiner.json"]), &dash); err != nil {
		t.Fatalf("the dashboard's joiner.json: %v", err)
	}
	if dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatalf("dashboard uid %q, %d panels", dash.UID, len(dash.Panels))
	}
	exprs := map[string]parser.Expr{}
	for _, p := range dash.Panels {
		if p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %q, %d queries; want the dashboard's datasource variable and a query", p.Title, p.Datasource.UID, len(p.Targets))
		}
		for _, q := range p.Targets {
			expr := grafanaVariables.Replace(q.Expr)
			if strings.Contains(expr, "$") {
				t.Errorf("panel %q: a Grafana variable this test does not know in %s", p.Title, q.Expr)
				continue
			}
			e, err := promql.ParseExpr(expr)
			if err != nil {
				t.Errorf("panel %q: %s: %v", p.Title, q.Expr, err)
				continue
			}
			exprs["panel "+p.Title+": "+q.Expr] = e
		}
	}
	return exprs
}

// TestMetricsUsed: the metric names the rules and panels select are
// metrics.txt's (test/chart finds each on the controller's /metrics).
func TestMetricsUsed(t *testing.T) {
	exprs := dashboardExprs(t)
	for _, g := range ruleGroups(t).Groups {
		for _, r := range g.Rules {
			e, err := promql.ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("%s: %v", r.Expr, err) // rulefmt.Parse accepted it
			}
			exprs["alert "+r.Alert+r.Record+": "+r.Expr] = e
		}
	}
	seen := map[string]bool{}
	for where, e := range exprs {
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			if vs.Name == "" {
				t.Errorf("%s: a selector without a metric name (%s)", where, vs)
			}
			seen[vs.Name] = true
			return nil
		})
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	got := strings.Join(names, "\n") + "\n"
	if *update {
		if err := os.WriteFile("metrics.txt", []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != got {
		t.Errorf("the rules and dashboard use\n%s\nbut metrics.txt lists\n%s\n(go test -update rewrites it; test/chart then checks the controller serves them)", got, want)
	}
}
