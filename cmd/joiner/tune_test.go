package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const tinySpace = `apiVersion: joiner.dev/v1alpha1
kind: TuningSpace
metadata: {name: tiny}
spec:
  nodePools:
    - {name: general, consolidateAfter: [1m, 15m]}
  search: {seeds: 2}
`

// TestTuneErrors: what a user gets wrong is answered with the fix.
func TestTuneErrors(t *testing.T) {
	dir := t.TempDir()
	inside := filepath.Join(dir, "scenario")
	if err := os.MkdirAll(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"scenario/space.yaml": tinySpace, "empty.log": "no lines here\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no space", []string{"tune"}, "--space: name the TuningSpace file"},
		{"space inside the scenario", []string{"tune", inside, "--space", filepath.Join(inside, "space.yaml")}, "is inside the scenario directory"},
		{"gather without files", []string{"tune", "--gather"}, "name the files of JSON lines"},
		{"gather of no lines", []string{"tune", "--gather", filepath.Join(dir, "empty.log")}, "no result lines"},
		{"index out of range", []string{"tune", "--space", filepath.Join(inside, "space.yaml"), "--variant-index", "3"}, "variants 0 to 2"},
		{"unknown sampler", []string{"tune", "--space", filepath.Join(inside, "space.yaml"), "--sampler", "sobol"}, "use latinHypercube or random"},
		{"write with gather", []string{"tune", "--gather", filepath.Join(dir, "empty.log"), "--write", dir}, "--write is for a local search"},
		{"index not a number", []string{"tune", "--space", filepath.Join(inside, "space.yaml"), "--variant-index", "x"}, "not a number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestTuneVariantIndexGather: the lines of every --variant-index, gathered,
// are the local search's JSON (the integration test does the same through
// the Job the API server accepted).
func TestTuneVariantIndexGather(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bundled scenario a few times")
	}
	dir := t.TempDir()
	space := filepath.Join(dir, "space.yaml")
	if err := os.WriteFile(space, []byte(tinySpace), 0o644); err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	for i := range 3 {
		out, err := run(t, "tune", "--space", space, "--variant-index", strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		lines.WriteString(out)
	}
	logs := filepath.Join(dir, "lines")
	if err := os.WriteFile(logs, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	gathered, err := run(t, "tune", "--gather", logs, "--json")
	if err != nil {
		t.Fatal(err)
	}
	local, err := run(t, "tune", "--space", space, "--json", "--workers", "2")
	if err != nil {
		t.Fatal(err)
	}
	if gathered != local {
		t.Errorf("gathered:\n%s\nlocal:\n%s", gathered, local)
	}
	if !strings.Contains(local, `"baseline": true`) || !strings.Contains(local, `"perSeed"`) {
		t.Errorf("the result lacks the baseline or the finalists' seeds:\n%s", local)
	}
}
