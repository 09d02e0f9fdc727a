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
	"sync/atomic"
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

// Process is a running ProcessSpec. Exiting before Stop fails the test.
type Process struct {
	Spec    ProcessSpec
	LogPath string

	cmd      *exec.Cmd
	exited   chan struct{}
	stopping atomic.Bool
}

// StartProcess starts spec; the process gets SIGTERM (SIGKILL after 10 s)
// when the test ends, and the tail of its log is logged if the test failed.
func StartProcess(tb testing.TB, spec ProcessSpec) (*Process, error) {
	tb.Helper()
	logDir := spec.LogDir
	if logDir == "" {
		logDir = tb.TempDir()
	}
	p := &Process{Spec: spec, LogPath: filepath.Join(logDir, spec.Name+".log"), exited: make(chan struct{})}
	logFile, err := os.Create(p.LogPath)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(spec.Path, spec.Args...)
	p.cmd.Env = append(os.Environ(), spec.Env...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", spec.Name, err)
	}
	go func() {
		err := p.cmd.Wait()
		_ = logFile.Close()
		if !p.stopping.Load() {
			tb.Errorf("%s exited while the test ran: %v (log: %s)", spec.Name, err, p.LogPath)
		}
		close(p.exited)
	}()
	tb.Cleanup(func() {
		p.Stop()
		if tb.Failed() {
			if out, err := os.ReadFile(p.LogPath); err == nil {
				tb.Logf("%s log (tail):\n%s", spec.Name, tail(string(out), 6000))
			}
		}
	})
	return p, nil
}

// PID is the process's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Stop sends SIGTERM, SIGKILL after 10 s, and waits for the process to go.
func (p *Process) Stop() {
	if !p.stopping.CompareAndSwap(false, true) {
		<-p.exited
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// Usage is what a process has used so far, as /proc says.
type Usage struct {
	// PeakRSSBytes is VmHWM: the most resident memory at any moment.
	PeakRSSBytes float64
	// RSSBytes is VmRSS, now.
	RSSBytes float64
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
	if p.Spec.MetricsAddr == "" {
		return fmt.Errorf("%s serves no metrics endpoint", p.Spec.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := p.get(ctx, "/debug/pprof/heap")
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
		case <-p.exited:
			return fmt.Errorf("%s exited (log: %s)", p.Spec.Name, p.LogPath)
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
