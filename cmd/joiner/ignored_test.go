package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/manifest"
)

// TestLeftOutIsNamed: a CapacityBuffer and its PodTemplate beside the
// NodePools — which simulate models and plan and explain do not yet — are
// held by simulate (its summary says what they held) and named by plan
// (text and JSON) and explain, with file, line and what leaving them out
// means, over manifests and over a scenario: never dropped in silence.
func TestLeftOutIsNamed(t *testing.T) {
	dir := writeDir(t, map[string]string{"pool.yaml": pool, "class.yaml": nodeClass, "app.yaml": deployment, "buffer.yaml": capacityBuffer})
	const buffer = "buffer.yaml:1): simulate and the controller (its CapacityBuffer gate on) hold a CapacityBuffer's spare capacity; plan and explain do not model buffers yet"

	out, err := run(t, "simulate", dir, "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Buffers        CapacityBuffer shop/warm: ") || strings.Contains(out, "Left out") {
		t.Errorf("simulate's summary does not say what the buffer held, or leaves something out:\n%s", out)
	}
	out, err = run(t, "simulate", dir, "--quiet", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Ignored []manifest.Ignored
		Buffers *struct{ Buffers []struct{ Name string } }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Ignored) != 0 || rep.Buffers == nil || len(rep.Buffers.Buffers) != 1 || rep.Buffers.Buffers[0].Name != "shop/warm" {
		t.Errorf("simulate --json: ignored %+v, buffers %+v", rep.Ignored, rep.Buffers)
	}

	for _, args := range [][]string{{"plan", dir}, {"plan", "--scenario", dir}, {"explain", "nodepool", "general", dir}} {
		out, err := run(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		// From manifests the file is named as given (here, by its full path).
		if !strings.Contains(out, "note: left out: CapacityBuffer shop/warm (") || !strings.Contains(out, buffer) {
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
	// A plan reads pods, not their Deployment or PodTemplate: that is named too.
	if got := strings.Join(kinds, ","); got != "Deployment,CapacityBuffer,PodTemplate" {
		t.Errorf("plan -o json ignored kinds %s", got)
	}
}
