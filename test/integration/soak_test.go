//go:build integration && soak

package integration

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCrashSoak is TestCrashSafety at length, not run by CI: cycles of
// scale-up, drift, scale-down halfway and to zero, ten kills a cycle, until
// JOINER_SOAK_KILLS kills (100 by default) have been made. Run it with
//
//	KUBEBUILDER_ASSETS=$(hack/control-plane.sh) go test -tags integration,soak -run TestCrashSoak -timeout 3h -v ./test/integration/
//
// and JOINER_CRASH_SEED=n to repeat a run's kill points.
func TestCrashSoak(t *testing.T) {
	want := 100
	if s := os.Getenv("JOINER_SOAK_KILLS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("JOINER_SOAK_KILLS=%q: want a positive number", s)
		}
		want = v
	}
	start := time.Now()
	r := newCrashRun(t, "soak", 9)
	for cycle := 1; len(r.kills) < want; cycle++ {
		before := len(r.kills)
		began := time.Now()
		r.cycle(crashPlan{scaleUp: 3, drift: 3, scaleDown: 2, toZero: 2, halfway: true})
		t.Logf("cycle %d: %d kills in %s (%d in all, %s)", cycle, len(r.kills)-before, time.Since(began).Round(time.Second),
			len(r.kills), time.Since(start).Round(time.Second))
	}
	unseen := 0
	for _, k := range r.kills {
		if strings.Contains(k, "not seen") {
			unseen++
		}
	}
	t.Logf("%d kills in %s (seed %d), %d of them at a phase's end (kill point not seen first); every invariant held",
		len(r.kills), time.Since(start).Round(time.Second), r.seed, unseen)
	t.Logf("kill points: %s", strings.Join(r.kills, "; "))
}
