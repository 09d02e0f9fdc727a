package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ProcessSpec is a binary to run until the test or benchmark ends.
type ProcessSpec struct {
	// Name names the process in messages and its log file (Name.log).
	Name string
	// Path is the binary.
	Path string
	Args []string
	// Env is added to the test's environment.
	Env []string
	// LogDir receives the log; a temporary directory of the test when empty.
	LogDir string
	// MetricsAddr is where the process serves /metrics (host:port), if it does.
	MetricsAddr string
}

// Process is a ProcessSpec that runs (again, after Stop or Kill) until
// the test or benchmark ends. Exiting while it runs, rather than by Stop or
// Kill, fails the test. It is safe for concurrent use.
type Process struct {
	Spec ProcessSpec
	// LogPath holds the output of every run, each after the first under a
	// line naming it.
	LogPath string

	tb       testing.TB
	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	stopping bool
	runs     int
}

// NewProcess prepares spec (Start runs it). When the test ends the process
// is stopped, and the tail of its log is logged if the test failed.
func NewProcess(tb testing.TB, spec ProcessSpec) *Process {
	tb.Helper()
	logDir := spec.LogDir
	if logDir == "" {
		logDir = tb.TempDir()
	}
	p := &Process{Spec: spec, LogPath: filepath.Join(logDir, spec.Name+".log"), tb: tb}
	tb.Cleanup(func() {
		p.Stop()
		if tb.Failed() {
			if out, err := os.ReadFile(p.LogPath); err == nil {
				tb.Logf("%s log (tail):\n%s", spec.Name, tail(string(out), 6000))
			}
		}
	})
	return p
}

// StartProcess is NewProcess and Start.
func StartProcess(tb testing.TB, spec ProcessSpec) (*Process, error) {
	tb.Helper()
	p := NewProcess(tb, spec)
	return p, p.Start()
}

// Start runs the process, appending its output to LogPath.
func (p *Process) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return fmt.Errorf("%s is already running", p.Spec.Name)
	}
	logFile, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	p.runs++
	if p.runs > 1 {
		_, _ = fmt.Fprintf(logFile, "=== %s run %d, started %s\n", p.Spec.Name, p.runs, time.Now().Format(time.RFC3339Nano))
	}
	cmd := exec.Command(p.Spec.Path, p.Spec.Args...)
	cmd.Env = append(os.Environ(), p.Spec.Env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("starting %s: %w", p.Spec.Name, err)
	}
	exited, run := make(chan struct{}), p.runs
	p.cmd, p.exited, p.stopping = cmd, exited, false
	go func() {
		err := cmd.Wait()
		_ = logFile.Close()
		p.mu.Lock()
		if !p.stopping {
			p.tb.Errorf("%s (run %d) exited while the test ran: %v (log: %s)", p.Spec.Name, run, err, p.LogPath)
		}
		if p.cmd == cmd {
			p.cmd = nil
		}
		p.mu.Unlock()
		close(exited)
	}()
	return nil
}

// PID is the running process's ID, 0 when it is not running.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Stop sends SIGTERM, SIGKILL after 10 s, and waits for the process to go.
func (p *Process) Stop() { p.end(syscall.SIGTERM, 10*time.Second) }

// Kill sends SIGKILL — no shutdown, nothing released, whatever the process
// was in the middle of left half done — and waits for it to go.
func (p *Process) Kill() { p.end(syscall.SIGKILL, 0) }

// end signals the running process and waits for it, killing it after
// grace (when not 0).
func (p *Process) end(sig syscall.Signal, grace time.Duration) {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.stopping = true
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	if grace == 0 {
		<-exited
		return
	}
	select {
	case <-exited:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-exited
	}
}

// running is the channel closed when the current run ends (nil when none).
func (p *Process) running() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return nil
	}
	return p.exited
}

// Usage is what a process has used so far, as /proc says.
type Usage struct {
	// PeakRSSBytes is VmHWM: the most resident memory at any moment.
	PeakRSSBytes float64
	// RSSBytes is VmRSS, now.
	RSSBytes float64
	// RSSFileBytes is RssFile, now: the part of RSSBytes that is pages of
	// files, the binary's code and data most of it, which no heap tuning
	// changes.
	RSSFileBytes float64
	// CPUSeconds is user + system time.
	CPUSeconds float64
}

// clockTicks is the unit of /proc/PID/stat's times (USER_HZ), 100 on every
// Linux architecture Go runs on.
const clockTicks = 100

// Usage reads /proc/PID/status and /proc/PID/stat of the running process.
func (p *Process) Usage() (Usage, error) {
	var u Usage
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.PID()))
	if err != nil {
		return u, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		switch key {
		case "VmHWM":
			u.PeakRSSBytes = kb * 1024
		case "VmRSS":
			u.RSSBytes = kb * 1024
		case "RssFile":
			u.RSSFileBytes = kb * 1024
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID()))
	if err != nil {
		return u, err
	}
	// The command name, in parentheses, may hold spaces: count fields after
	// its closing parenthesis. utime and stime are fields 14 and 15 of the
	// line, the 12th and 13th after it.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return u, fmt.Errorf("/proc/%d/stat: no command name", p.PID())
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 13 {
		return u, fmt.Errorf("/proc/%d/stat: %d fields after the command name", p.PID(), len(fields))
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return u, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", p.PID(), fields[11], fields[12])
	}
	u.CPUSeconds = (utime + stime) / clockTicks
	return u, nil
}

// Metrics scrapes the process's /metrics.
func (p *Process) Metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	if p.Spec.MetricsAddr == "" {
		return nil, fmt.Errorf("%s serves no /metrics", p.Spec.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := p.get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	return parseMetrics(resp.Body)
}

// get GETs path from the process's metrics server; an answer other than
// 200 is an error.
func (p *Process) get(ctx context.Context, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Spec.MetricsAddr+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %s", p.Spec.Name, path, resp.Status)
	}
	return resp, nil
}

// SaveHeapProfile writes the process's heap profile (its metrics
// server's /debug/pprof/heap: joiner's --enable-profiling) to file.
func (p *Process) SaveHeapProfile(ctx context.Context, file string) error {
	return p.save(ctx, "/debug/pprof/heap", file)
}

// SaveMetrics writes what the process's /metrics says now to file.
func (p *Process) SaveMetrics(ctx context.Context, file string) error {
	return p.save(ctx, "/metrics", file)
}

// SaveCPUProfile writes a CPU profile of the process's next d to file (its
// pprof endpoints must be served).
func (p *Process) SaveCPUProfile(ctx context.Context, file string, d time.Duration) error {
	return p.saveWithin(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds())), file, d+30*time.Second)
}

// save writes what the process's metrics server says at path to file.
func (p *Process) save(ctx context.Context, path, file string) error {
	return p.saveWithin(ctx, path, file, 30*time.Second)
}

// saveWithin is save, its answer waited for at most timeout.
func (p *Process) saveWithin(ctx context.Context, path, file string, timeout time.Duration) error {
	if p.Spec.MetricsAddr == "" {
		return fmt.Errorf("%s serves no metrics endpoint", p.Spec.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := p.get(ctx, path)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// WaitMetrics waits up to timeout for the process to serve /metrics.
func (p *Process) WaitMetrics(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		_, err := p.Metrics(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s served no /metrics within %s: %w", p.Spec.Name, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.running():
			return fmt.Errorf("%s is not running (log: %s)", p.Spec.Name, p.LogPath)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// ParseMetrics parses Prometheus's text format.
func ParseMetrics(b []byte) (map[string]*dto.MetricFamily, error) {
	return parseMetrics(bytes.NewReader(b))
}

func parseMetrics(r io.Reader) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(r)
}

// Sum adds the values (counters, gauges, untyped) of family name whose
// labels match every one of match; absent, it is 0.
func Sum(families map[string]*dto.MetricFamily, name string, match func(labels map[string]string) bool) float64 {
	total := 0.0
	for _, m := range families[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if match != nil && !match(labels) {
			continue
		}
		total += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
	}
	return total
}

// Labels matches the metrics whose labels have these values.
func Labels(want map[string]string) func(labels map[string]string) bool {
	return func(labels map[string]string) bool {
		for k, v := range want {
			if labels[k] != v {
				return false
			}
		}
		return true
	}
}

// SumBy adds family name's values as Sum does, grouped by the value of
// label key.
func SumBy(families map[string]*dto.MetricFamily, name, key string, match func(labels map[string]string) bool) map[string]float64 {
	out := map[string]float64{}
	for _, m := range families[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if match != nil && !match(labels) {
			continue
		}
		out[labels[key]] += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
	}
	return out
}

// FreeLoopbackAddr is a loopback address whose port was free a moment ago.
func FreeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
