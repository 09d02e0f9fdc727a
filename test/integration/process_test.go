//go:build integration

package integration

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// buildJoiner builds the joiner binary (cmd/joiner) for the test: the
// crash and leader election tests need Joiner as a process they can
// SIGKILL. A warm build cache makes this a link, a few seconds.
func buildJoiner(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "joiner")
	start := time.Now()
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/joiner").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/joiner: %v\n%s", err, out)
	}
	t.Logf("built joiner in %s", time.Since(start).Round(100*time.Millisecond))
	return bin
}

// joinerProcess is `joiner controller` run as a process of its own, which
// the test may SIGKILL and start again. Its output, every run of it, goes
// to one log file whose tail is logged if the test fails.
type joinerProcess struct {
	t           *testing.T
	name        string
	bin         string
	args        []string
	metricsAddr string
	logPath     string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	killing bool
	runs    int
}

// newJoiner prepares (does not start) `joiner controller` with the kwok
// provider against kubeconfig, serving /metrics on a loopback port of its
// own; extra are more flags. The process is killed when the test ends.
// Its log is kept in $JOINER_PROCESS_LOGS, when set.
func newJoiner(t *testing.T, bin, name, kubeconfig string, extra ...string) *joinerProcess {
	t.Helper()
	addr := freeLoopbackAddr(t)
	logDir := os.Getenv("JOINER_PROCESS_LOGS") // to keep the logs of a run that passed
	if logDir == "" {
		logDir = t.TempDir()
	}
	p := &joinerProcess{t: t, name: name, bin: bin, metricsAddr: addr, logPath: filepath.Join(logDir, t.Name()+"-"+name+".log"),
		args: append([]string{"controller", "--kubeconfig=" + kubeconfig, "--cloud-provider=kwok",
			"--metrics-bind-address=" + addr, "--health-probe-bind-address=0"}, extra...)}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			if out, err := os.ReadFile(p.logPath); err == nil {
				t.Logf("%s log (tail):\n%s", name, tail(string(out), 8000))
			}
		}
	})
	return p
}

// freeLoopbackAddr is a loopback address whose port was free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// start runs the process (again). Exiting on its own, rather than by kill,
// fails the test: Joiner should not crash.
func (p *joinerProcess) start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		p.t.Fatalf("%s is already running", p.name)
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	p.runs++
	_, _ = fmt.Fprintf(logFile, "=== %s run %d, started %s\n", p.name, p.runs, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		p.t.Fatalf("starting %s: %v", p.name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.killing = cmd, exited, false
	go func() {
		err := cmd.Wait()
		_ = logFile.Close()
		p.mu.Lock()
		if !p.killing {
			p.t.Errorf("%s (run %d) exited on its own: %v", p.name, p.runs, err)
		}
		if p.cmd == cmd {
			p.cmd = nil
		}
		p.mu.Unlock()
		close(exited)
	}()
}

// kill sends SIGKILL — no shutdown, no Lease released, whatever Joiner was
// in the middle of left half done — and waits for the process to go.
func (p *joinerProcess) kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.killing = true
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// metrics scrapes the process's /metrics.
func (p *joinerProcess) metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.metricsAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s /metrics: %s", p.name, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// scraped sums the values (counters and gauges) of family name whose
// labels include labels; absent, it is 0.
func scraped(families map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	total := 0.0
	f := families[name]
	if f == nil {
		return 0
	}
metrics:
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
				continue metrics
			}
		}
		total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return total
}
