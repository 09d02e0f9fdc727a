package main

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/joiner-autoscaler/joiner/pkg/replay"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/trace"
)

// loadInput loads what a run simulates: the scenario directory arg (the
// bundled default for ""), or, when tracePath is set, that trace replayed
// under arg's NodePools (the recorded ones when arg is "").
func loadInput(tracePath, arg string) (fs.FS, string, *scenario.Input, error) {
	if tracePath == "" {
		fsys, dir, name, err := scenarioFS(arg)
		if err != nil {
			return nil, "", nil, err
		}
		in, err := scenario.Load(fsys, dir, name)
		return fsys, dir, in, err
	}
	rec, err := readRecording(tracePath)
	if err != nil {
		return nil, "", nil, err
	}
	var over *scenario.Input
	fsys, dir := fs.FS(os.DirFS(".")), "."
	if arg != "" {
		var name string
		if fsys, dir, name, err = scenarioFS(arg); err != nil {
			return nil, "", nil, err
		}
		if over, err = scenario.Load(fsys, dir, name); err != nil {
			return nil, "", nil, err
		}
	}
	in, err := rec.Input(tracePath, over)
	return fsys, dir, in, err
}

// readRecording reads a trace file whole.
func readRecording(path string) (*replay.Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	r, err := trace.NewReader(f, path)
	if err != nil {
		return nil, err
	}
	return replay.Read(r)
}

// isTraceFile reports whether arg names a file (a trace) rather than a
// scenario directory.
func isTraceFile(arg string) bool {
	st, err := os.Stat(arg)
	return err == nil && st.Mode().IsRegular()
}
