//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/joiner-autoscaler/joiner/test/harness"
)

// buildJoiner builds the joiner binary (cmd/joiner) for the test: the
// crash and leader election tests need Joiner as a process they can
// SIGKILL. A warm build cache makes this a link, a few seconds.
func buildJoiner(t *testing.T) string { return harness.JoinerBinary(t) }

// newJoiner prepares (does not start) `joiner controller` with the kwok
// provider against kubeconfig, serving /metrics on a loopback port of its
// own; extra are more flags. The test may Kill it and Start it again; it
// is stopped when the test ends. Its log, every run of it in one file, is
// kept in $JOINER_PROCESS_LOGS/<test>/ when that is set.
func newJoiner(t *testing.T, bin, name, kubeconfig string, extra ...string) *harness.Process {
	t.Helper()
	addr := freeLoopbackAddr(t)
	logDir := t.TempDir()
	if keep := os.Getenv("JOINER_PROCESS_LOGS"); keep != "" { // to keep the logs of a run that passed
		logDir = filepath.Join(keep, t.Name())
		if err := os.MkdirAll(logDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return harness.NewProcess(t, harness.ProcessSpec{Name: name, Path: bin, LogDir: logDir, MetricsAddr: addr,
		Args: append([]string{"controller", "--kubeconfig=" + kubeconfig, "--cloud-provider=kwok",
			"--metrics-bind-address=" + addr, "--health-probe-bind-address=0"}, extra...)})
}

// start runs p (again); Joiner exiting on its own afterwards fails the test.
func start(t *testing.T, p *harness.Process) {
	t.Helper()
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
}

// freeLoopbackAddr is a loopback address whose port was free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	addr, err := harness.FreeLoopbackAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// scraped sums the values (counters and gauges) of family name whose
// labels have these values; absent, it is 0.
func scraped(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	return harness.Sum(families, name, harness.Labels(labels))
}
