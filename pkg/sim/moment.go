package sim

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/state"
)

// Moment is the simulated cluster at one time of a run: what plan and
// explain read of it, as they read a live cluster.
type Moment struct {
	At time.Time
	// Start and End of the run the moment is of.
	Start, End time.Time
	// Cluster is every object the simulated API server holds at At, with
	// the simulated EC2's offerings (capacity it knows to be short left
	// out) and its drift check.
	Cluster *state.Objects
	// GaveUp are the pods ("namespace/name") the simulator's launch-loop
	// guard stopped launching nodes for, and why: provisioning would plan
	// for them, the simulator does not.
	GaveUp map[string]string
}

// RunUntil simulates a loaded scenario up to at (events at at included)
// and returns the cluster as it is then. at must lie within the run. A run
// to its end gives the state the report of Run describes. The cluster grows
// under opts.Policy, as Run's would (its Progress and OnProvision are not
// called), or stops with ctx's error if ctx ends first.
func RunUntil(ctx context.Context, in *scenario.Input, fsys fs.FS, dir string, at time.Time, opts Options) (*Moment, error) {
	e, err := newSimulation(in, fsys, dir, opts)
	if err != nil {
		return nil, err
	}
	if at.Before(e.start) || at.After(e.end) {
		return nil, fmt.Errorf("%s is outside the run (%s to %s)", at.UTC().Format(time.RFC3339), e.start.Format(time.RFC3339), e.end.Format(time.RFC3339))
	}
	e.schedule()
	if err := e.clk.run(ctx, at, nil); err != nil {
		return nil, err
	}
	// What a disruption pass would read now; the store has the PDBs and
	// offerings of the last pass only.
	e.st.SetPDBs(e.pdbs())
	e.syncOfferings()
	c := e.st.Objects()
	c.AppliedOverlays = e.cloud.Overlays()
	c.Drifted = func(nc *v1.NodeClaim) cloudprovider.DriftReason {
		why, _ := e.cloud.IsDrifted(context.Background(), nc) // the closure outlives ctx
		return why
	}
	m := &Moment{At: at.UTC(), Start: e.start, End: e.end, Cluster: c, GaveUp: map[string]string{}}
	for p := range e.pending {
		if p.loop != "" {
			m.GaveUp[p.pod.Namespace+"/"+p.pod.Name] = p.reason
		}
	}
	return m, nil
}
