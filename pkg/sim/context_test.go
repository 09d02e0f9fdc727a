package sim

import (
	"context"
	"errors"
	"testing"

	"github.com/joiner-autoscaler/joiner/examples"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
)

// TestRunStopsWithItsContext: a run whose context has ended stops and says
// so (and when it stopped), instead of running its week to the end; a
// cause given to the cancel comes through.
func TestRunStopsWithItsContext(t *testing.T) {
	in, err := scenario.Load(examples.Scenarios, "scenarios/default", "default")
	if err != nil {
		t.Fatal(err)
	}
	stopped := errors.New("the user pressed Ctrl-C")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(stopped)
	rep, err := Run(ctx, in, examples.Scenarios, "scenarios/default", Options{})
	if rep != nil || !errors.Is(err, stopped) {
		t.Fatalf("report %v, error %v; want no report and the cause", rep != nil, err)
	}
	if _, err := RunUntil(ctx, in, examples.Scenarios, "scenarios/default", in.Scenario.Spec.Start.Add(in.Scenario.Spec.Duration.Duration/2), Options{}); !errors.Is(err, stopped) {
		t.Fatalf("RunUntil: %v, want the cause", err)
	}
}
