package harness

import (
	"os"
	"strings"
	"testing"
	"time"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

func TestCatalogPrices(t *testing.T) {
	prices, err := NewCatalogPrices("us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		labels map[string]string
		want   float64
		ok     bool
	}{
		{map[string]string{v1.LabelInstanceType: "m6i.xlarge", v1.LabelCapacityType: v1.CapacityTypeOnDemand, v1.LabelZone: "us-east-1a"}, 0.192, true},
		{map[string]string{v1.LabelInstanceType: "m6i.xlarge", v1.LabelCapacityType: v1.CapacityTypeOnDemand}, 0.192, true},
		{map[string]string{v1.LabelInstanceType: "no.such", v1.LabelCapacityType: v1.CapacityTypeOnDemand}, 0, false},
	} {
		got, ok := prices.Price(tc.labels)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Price(%v) = %v, %v; want %v, %v", tc.labels, got, ok, tc.want, tc.ok)
		}
	}
	spot, ok := prices.Price(map[string]string{v1.LabelInstanceType: "m6i.xlarge", v1.LabelCapacityType: v1.CapacityTypeSpot, v1.LabelZone: "us-east-1a"})
	if !ok || spot <= 0 || spot >= 0.192 {
		t.Errorf("m6i.xlarge spot in us-east-1a: %v, %v; want a price below on-demand's", spot, ok)
	}
}

// A process's usage is read from /proc while it runs, and a process that
// exits on its own fails the test (checked here by stopping it first).
func TestProcessUsage(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	p, err := StartProcess(t, ProcessSpec{Name: "sh", Path: "/bin/sh", Args: []string{"-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	var u Usage
	deadline := time.Now().Add(30 * time.Second)
	for u.CPUSeconds == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		if u, err = p.Usage(); err != nil {
			t.Fatal(err)
		}
	}
	if u.CPUSeconds <= 0 || u.PeakRSSBytes <= 0 || u.RSSBytes <= 0 || u.RSSBytes > u.PeakRSSBytes || u.RSSFileBytes <= 0 || u.RSSFileBytes > u.RSSBytes {
		t.Errorf("usage %+v: want CPU time and a resident set no larger than its peak", u)
	}
	p.Stop()
}

// A process killed and started again runs again, its second run's output
// appended to the first's under a line naming the run; Stop of a process
// that is not running returns at once.
func TestProcessRestart(t *testing.T) {
	p := NewProcess(t, ProcessSpec{Name: "sh", Path: "/bin/sh", Args: []string{"-c", "echo ran; exec sleep 60"}})
	for run := 1; run <= 2; run++ {
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		if err := p.Start(); err == nil {
			t.Errorf("run %d: a second Start of a running process did not fail", run)
		}
		if p.PID() <= 0 {
			t.Errorf("run %d: PID %d", run, p.PID())
		}
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if out, _ := os.ReadFile(p.LogPath); strings.Count(string(out), "ran\n") == run {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		p.Kill()
		if p.PID() != 0 {
			t.Errorf("run %d: PID %d after Kill, want 0", run, p.PID())
		}
	}
	out, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if want := "ran\n=== sh run 2, started "; !strings.HasPrefix(string(out), want) || !strings.HasSuffix(string(out), "ran\n") {
		t.Errorf("log %q: want both runs, the second under its header", out)
	}
	p.Stop()
}

func TestSum(t *testing.T) {
	families, err := ParseMetrics([]byte(`# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="h",method="GET"} 10
rest_client_requests_total{code="201",host="h",method="POST"} 3
rest_client_requests_total{code="409",host="h",method="POST"} 1
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := Sum(families, "rest_client_requests_total", func(l map[string]string) bool { return l["method"] == "POST" }); got != 4 {
		t.Errorf("POSTs: %v, want 4", got)
	}
	by := SumBy(families, "rest_client_requests_total", "method", nil)
	if by["GET"] != 10 || by["POST"] != 4 || len(by) != 2 {
		t.Errorf("by method: %v", by)
	}
	if got := Sum(families, "rest_client_requests_total", Labels(map[string]string{"method": "POST", "code": "201"})); got != 3 {
		t.Errorf("POSTs answered 201: %v, want 3", got)
	}
	if got := Sum(families, "absent", nil); got != 0 {
		t.Errorf("an absent family sums to %v", got)
	}
}
