package sim

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// TestRunUntil: the bundled scenario run to its end holds exactly the
// nodes the report says survive it, and the pods that never ran pending;
// a moment mid-run holds the nodes of that moment (launched by then and
// not yet gone); a time outside the run is refused.
func TestRunUntil(t *testing.T) {
	fsys := os.DirFS(filepath.Join("..", "..", "examples", "scenarios", "default"))
	in, err := scenario.Load(fsys, ".", "default")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), in, fsys, ".", Options{})
	if err != nil {
		t.Fatal(err)
	}
	alive := func(at time.Time) string {
		var names []string
		for _, n := range rep.ByNode {
			if !n.Launched.After(at) && (n.Deleted == nil || n.Deleted.After(at)) {
				names = append(names, n.Name)
			}
		}
		sort.Strings(names)
		return strings.Join(names, ",")
	}
	for _, at := range []time.Time{rep.End, rep.Start.Add(10*time.Hour + 15*time.Minute), rep.Start.Add(3 * time.Hour)} {
		in, err := scenario.Load(fsys, ".", "default")
		if err != nil {
			t.Fatal(err)
		}
		m, err := RunUntil(context.Background(), in, fsys, ".", at, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, n := range m.Cluster.StateNodes() {
			if n.Managed() && !n.MarkedForDeletion() {
				names = append(names, n.Name())
			}
		}
		if got, want := strings.Join(names, ","), alive(at); got != want {
			t.Errorf("at %s: nodes %s, want %s", at.Format(time.Kitchen), got, want)
		}
		if at.Equal(rep.End) && len(m.Cluster.PendingPods()) != rep.Pods.NeverRan {
			t.Errorf("at the end: %d pods pending, the report says %d never ran", len(m.Cluster.PendingPods()), rep.Pods.NeverRan)
		}
		if m.Cluster.Drifted == nil {
			t.Error("no drift check: the simulated EC2's AMI drift would go unseen")
		}
	}
	if _, err := RunUntil(context.Background(), in, fsys, ".", rep.End.Add(time.Second), Options{}); err == nil || !strings.Contains(err.Error(), "is outside the run (2026-11-30T00:00:00Z to 2026-12-01T00:00:00Z)") {
		t.Errorf("after the end: %v", err)
	}
}
