package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/joiner-autoscaler/joiner/pkg/manifest"
)

// TestBuffersInEveryHost: a CapacityBuffer and its PodTemplate beside
// the NodePools are held by every host: simulate says what the buffer held
// (and leaves nothing out), plan — over manifests and over a scenario —
// says where it puts the chunks, in text and JSON. A plan reads pods, not
// their Deployment: that is named as left out.
func TestBuffersInEveryHost(t *testing.T) {
	dir := writeDir(t, map[string]string{"pool.yaml": pool, "class.yaml": nodeClass, "app.yaml": deployment, "buffer.yaml": capacityBuffer})

	out, err := run(t, "simulate", dir, "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Buffers        CapacityBuffer shop/warm: 3 chunk(s) at the end") || strings.Contains(out, "Left out") {
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

	// From manifests no node exists: the chunks go on the claims to create.
	out, err = run(t, "plan", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "note: CapacityBuffer shop/warm: 0 chunk(s) on existing nodes, 3 on NodeClaims to create, 0 held by none") {
		t.Errorf("plan does not place the buffer:\n%s", out)
	}
	// In the simulated cluster the buffer's node is there.
	out, err = run(t, "plan", "--scenario", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "note: CapacityBuffer shop/warm: 3 chunk(s) on existing nodes, 0 on NodeClaims to create, 0 held by none") {
		t.Errorf("plan --scenario does not place the buffer:\n%s", out)
	}
	out, err = run(t, "plan", dir, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Ignored []manifest.Ignored
		Buffers []struct {
			Name  string
			OnNew int
		}
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	kinds := []string{}
	for _, i := range p.Ignored {
		kinds = append(kinds, i.Kind)
	}
	if got := strings.Join(kinds, ","); got != "Deployment" || len(p.Buffers) != 1 || p.Buffers[0].OnNew != 3 {
		t.Errorf("plan -o json: ignored kinds %s, buffers %+v", got, p.Buffers)
	}
}
