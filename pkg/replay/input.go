package replay

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// Input is the recording as the simulator runs it: its start and length,
// its configuration and its workloads. over, when set, is a scenario
// directory's load whose NodePools, EC2NodeClasses and NodeOverlays
// replace the recorded ones — the candidate change a replay tries — and
// whose scenario.yaml, when it has one, gives the run's seed, region,
// zones, catalog, events and faults (the start and length are the
// recording's). What over holds beyond that is named in the notes.
func (r *Recording) Input(name string, over *scenario.Input) (*scenario.Input, error) {
	in := &scenario.Input{Name: name, Scenario: scenario.DefaultScenario()}
	spec := &in.Scenario.Spec
	spec.Start = r.Start
	spec.Duration = metav1.Duration{Duration: r.End.Sub(r.Start)}
	spec.Region = r.Region
	in.NodePools, in.NodeClasses, in.NodeOverlays = r.NodePools, r.NodeClasses, r.NodeOverlays
	in.DaemonSets, in.PDBs = r.DaemonSets, r.PDBs
	in.PersistentVolumeClaims, in.PersistentVolumes, in.StorageClasses = r.Claims, r.Volumes, r.StorageClasses
	replay := r.Replay
	in.Replay = &replay
	in.Notes = append(in.Notes, fmt.Sprintf("replaying the trace %s: %d workloads and %d bare pods as recorded from %s for %s",
		name, len(replay.Workloads), len(replay.Pods), r.Start.Format("Mon 2006-01-02 15:04 MST"), spec.Duration.Duration.Round(time.Second)))
	if over != nil {
		if err := r.override(in, over); err != nil {
			return nil, err
		}
	}
	if len(in.NodePools) == 0 {
		return nil, fmt.Errorf("the trace %s holds no NodePool (was it recorded with the RBAC of docs/trace.md?): give a directory of NodePools to replay it under", name)
	}
	r.calibrate(in)
	in.Notes = append(in.Notes, r.Notes...)
	in.Notes = append(in.Notes, "the replay starts with no nodes: the pods running when the recording began are pending at its start")
	return in, nil
}

// override takes over's NodePools, classes and overlays, and its settings.
func (r *Recording) override(in, over *scenario.Input) error {
	if len(over.NodePools) == 0 {
		return fmt.Errorf("%s: no NodePool to replay the trace under", over.Name)
	}
	in.NodePools, in.NodeClasses, in.NodeOverlays = over.NodePools, over.NodeClasses, over.NodeOverlays
	if n := len(in.Replay.NodePools); n > 0 {
		in.Notes = append(in.Notes, fmt.Sprintf("the %d changes to the recorded NodePools during the recording are not replayed: %s's NodePools replace them", n, over.Name))
		in.Replay.NodePools = nil
	}
	if n := len(in.Replay.NodeClasses); n > 0 {
		in.Notes = append(in.Notes, fmt.Sprintf("the %d changes to the recorded EC2NodeClasses during the recording are not replayed: %s's classes replace them", n, over.Name))
		in.Replay.NodeClasses = nil
	}
	in.Notes = append(in.Notes, fmt.Sprintf("the NodePools, EC2NodeClasses and NodeOverlays are %s's (%d NodePools), not the recorded ones", over.Name, len(over.NodePools)))
	if over.ScenarioFile != "" {
		start, length := in.Scenario.Spec.Start, in.Scenario.Spec.Duration
		in.Scenario = over.Scenario
		in.Scenario.Spec.Start, in.Scenario.Spec.Duration = start, length
		if len(over.Scenario.Spec.Loads) > 0 || len(over.Scenario.Spec.Jobs) > 0 {
			in.Notes = append(in.Notes, fmt.Sprintf("%s: spec.loads and spec.jobs are not used: the trace's workloads scale and run as recorded", over.ScenarioFile))
		}
		in.Scenario.Spec.Loads, in.Scenario.Spec.Jobs = nil, nil
		if r := in.Scenario.Spec.Faults.SpotInterruptionsPerNodeHour; r > 0 && len(in.Replay.Interruptions) > 0 {
			in.Notes = append(in.Notes, fmt.Sprintf("%s: spec.faults.spotInterruptionsPerNodeHour (%v) interrupts spot nodes at random as well as the trace's %d recorded interruptions (0 replays the recorded ones alone)",
				over.ScenarioFile, r, len(in.Replay.Interruptions)))
		}
	}
	ignored := map[string]int{"Deployment": len(over.Deployments), "StatefulSet": len(over.StatefulSets), "DaemonSet": len(over.DaemonSets),
		"Job": len(over.Jobs), "CronJob": len(over.CronJobs), "HorizontalPodAutoscaler": len(over.HPAs), "ScaledObject": len(over.ScaledObjects),
		"PodDisruptionBudget": len(over.PDBs), "Pod": len(over.Pods)}
	kinds := make([]string, 0, len(ignored))
	for k, n := range ignored {
		if n > 0 {
			kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
		}
	}
	sort.Strings(kinds)
	if len(kinds) > 0 {
		in.Notes = append(in.Notes, fmt.Sprintf("%s also holds %s: not used, the trace's workloads, DaemonSets and budgets are replayed", over.Name, strings.Join(kinds, ", ")))
	}
	return nil
}
