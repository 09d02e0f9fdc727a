package sim

import (
	"os"
	"testing"
	"time"
)

func TestProfileWeek(t *testing.T) {
	fsys := weekScenario()
	in, err := Load(fsys, "sc", "w")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := time.ParseDuration(os.Getenv("SIMDUR"))
	in.Scenario.Spec.Duration.Duration = d
	start := time.Now()
	rep, err := Run(in, fsys, "sc", Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v in %v: nodes %d pods %d, disruptions %v", d, time.Since(start), rep.Nodes.Launched, rep.Pods.Ran, rep.Disruptions)
}
