package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestVersionMatchesChart: the Helm chart installs the image of the version
// `joiner version` reports, so the two are released together.
func TestVersionMatchesChart(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "charts", "joiner", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		t.Fatalf("charts/joiner/Chart.yaml: %v", err)
	}
	if chart.AppVersion != release || "v"+chart.Version != release {
		t.Errorf("charts/joiner/Chart.yaml has version %q, appVersion %q; cmd/joiner's release is %q: bump them together",
			chart.Version, chart.AppVersion, release)
	}
	// The Dockerfile labels its image with the version too.
	dockerfile, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if label := `org.opencontainers.image.version="` + release + `"`; !strings.Contains(string(dockerfile), label) {
		t.Errorf("the Dockerfile lacks the label %s", label)
	}
	out, err := run(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(out, "\n"); first != "joiner "+release && !strings.HasPrefix(first, "joiner "+release+" ") {
		t.Errorf("joiner version printed %q, want joiner %s", first, release)
	}
}
