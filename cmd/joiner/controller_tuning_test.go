package main

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func parseTuning(t *testing.T, env map[string]string, args ...string) (*controllerTuning, error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var tun controllerTuning
	f := pflag.NewFlagSet("controller", pflag.ContinueOnError)
	tun.addFlags(f)
	if err := f.Parse(args); err != nil {
		return nil, err
	}
	return &tun, tun.fromEnv(f)
}

// TestControllerTuning: flags win over the environment, the environment
// over the defaults (upstream's 1 s / 10 s batches, info, no spot-to-spot),
// and a bad value names its variable or flag and what would do.
func TestControllerTuning(t *testing.T) {
	tun, err := parseTuning(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s2s, _ := tun.spotToSpot(); tun.batchIdle != time.Second || tun.batchMax != 10*time.Second || tun.logLevel != "info" || s2s ||
		tun.kubeQPS != 200 || tun.kubeBurst != 300 {
		t.Fatalf("defaults: %+v spot-to-spot %v", tun, s2s)
	}

	t.Run("environment", func(t *testing.T) {
		tun, err := parseTuning(t, map[string]string{"BATCH_IDLE_DURATION": "2s", "BATCH_MAX_DURATION": "20s", "LOG_LEVEL": "debug",
			"FEATURE_GATES": "SpotToSpotConsolidation=true"}, "--batch-max-duration=30s")
		if err != nil {
			t.Fatal(err)
		}
		s2s, err := tun.spotToSpot()
		if err != nil || tun.batchIdle != 2*time.Second || tun.batchMax != 30*time.Second || tun.logLevel != "debug" || !s2s {
			t.Fatalf("from the environment, the flag winning: %+v spot-to-spot %v (%v)", tun, s2s, err)
		}
		if _, err := tun.zapLevel(); err != nil {
			t.Fatal(err)
		}
		if repair, err := tun.nodeRepair(); err != nil || repair {
			t.Errorf("NodeRepair %v (%v): off unless asked for", repair, err)
		}
	})
	t.Run("node repair", func(t *testing.T) {
		tun, err := parseTuning(t, map[string]string{"FEATURE_GATES": "NodeRepair=true,SpotToSpotConsolidation=false"})
		if err != nil {
			t.Fatal(err)
		}
		if repair, err := tun.nodeRepair(); err != nil || !repair {
			t.Errorf("FEATURE_GATES=NodeRepair=true: NodeRepair %v (%v)", repair, err)
		}
	})

	t.Run("ReservedCapacity on by default, as upstream's since v1.6", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want bool
		}{{nil, true}, {[]string{"--feature-gates=ReservedCapacity=false"}, false}} {
			tun, err := parseTuning(t, nil, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			if on, err := tun.gate("ReservedCapacity"); err != nil || on != tc.want {
				t.Errorf("%v: ReservedCapacity %v (%v), want %v", tc.args, on, err, tc.want)
			}
		}
	})

	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{env: map[string]string{"BATCH_IDLE_DURATION": "1"}, want: `$BATCH_IDLE_DURATION="1" (for --batch-idle-duration)`},
		{args: []string{"--batch-idle-duration=20s"}, want: "the idle window no longer than the maximum"},
		{args: []string{"--feature-gates=SpotToSpot=true"}, want: `no gate "SpotToSpot" (known: CapacityBuffer, NodeOverlay, NodeRepair, ReservedCapacity, SpotToSpotConsolidation)`},
		{args: []string{"--feature-gates=SpotToSpotConsolidation"}, want: "is not Name=true or Name=false"},
		{args: []string{"--log-level=warn"}, want: "the levels are debug, info and error"},
		{env: map[string]string{"KUBE_CLIENT_QPS": "fast"}, want: `$KUBE_CLIENT_QPS="fast" (for --kube-client-qps)`},
		{args: []string{"--kube-client-burst=0"}, want: "both must be positive (upstream: 200 and 300)"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			tun, err := parseTuning(t, tc.env, tc.args...)
			if err == nil {
				_, err = tun.spotToSpot()
			}
			if err == nil {
				_, err = tun.zapLevel()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v %v: got %v, want an error with %q", tc.env, tc.args, err, tc.want)
			}
		})
	}
}
