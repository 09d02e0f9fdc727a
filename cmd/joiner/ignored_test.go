package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/manifest"
)

// TestLeftOutIsNamed: a CapacityBuffer and its PodTemplate beside the
// NodePools — which Joiner does not model yet — are named, with file, line
// and what leaving them out means, by simulate (summary and JSON), plan
// (text and JSON) and explain, over manifests and over a scenario: never
// dropped in silence.
func TestLeftOutIsNamed(t *testing.T) {
	dir := writeDir(t, map[string]string{"pool.yaml": pool, "class.yaml": nodeClass, "app.yaml": deployment, "buffer.yaml": capacityBuffer})
	const buffer = "CapacityBuffer shop/warm (buffer.yaml:1): CapacityBuffers are not modelled yet"
	const template = "PodTemplate shop/warm (buffer.yaml:8)"

	out, err := run(t, "simulate", dir, "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Left out       "+buffer) || !strings.Contains(out, template) {
		t.Errorf("simulate's summary does not name the buffer and its template:\n%s", out)
	}
	out, err = run(t, "simulate", dir, "--quiet", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct{ Ignored []manifest.Ignored }
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Ignored) != 2 || rep.Ignored[0].Kind != "CapacityBuffer" || rep.Ignored[0].Line != 1 || rep.Ignored[1].Kind != "PodTemplate" {
		t.Errorf("simulate --json ignored: %+v", rep.Ignored)
	}

	for _, args := range [][]string{{"plan", dir}, {"plan", "--scenario", dir}, {"explain", "nodepool", "general", dir}} {
		out, err := run(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		// From manifests the file is named as given (here, by its full path).
		if !strings.Contains(out, "note: left out: CapacityBuffer shop/warm (") || !strings.Contains(out, "buffer.yaml:1): CapacityBuffers are not modelled yet") {
			t.Errorf("%v does not name the buffer:\n%s", args, out)
		}
	}
	out, err = run(t, "plan", dir, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Ignored []manifest.Ignored }
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	kinds := []string{}
	for _, i := range p.Ignored {
		kinds = append(kinds, i.Kind)
	}
	// A plan reads pods, not their Deployment: that is named too.
	if got := strings.Join(kinds, ","); got != "Deployment,CapacityBuffer,PodTemplate" {
		t.Errorf("plan -o json ignored kinds %s", got)
	}
}
