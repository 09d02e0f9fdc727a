package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestComparisonWarnings: --compare says when the runs are not alike.
func TestComparisonWarnings(t *testing.T) {
	mon := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	run := func(start time.Time, d time.Duration) *Report {
		return &Report{Scenario: "x", Start: start, End: start.Add(d), Pods: PodStats{ByWorkload: map[string]Startup{}, Histogram: []Bucket{{UpTo: 1}}},
			Timeline: []Sample{{Minute: 0, NodesByPool: map[string]int{"general": 0}}, {Minute: 1, NodesByPool: map[string]int{"general": 0}}}}
	}
	for _, tc := range []struct {
		name string
		a, b *Report
		want []string
	}{
		{"alike", run(mon, 24*time.Hour), run(mon, 24*time.Hour), nil},
		{"same instant, other zone", run(mon, 24*time.Hour), run(mon.In(time.FixedZone("CET", 3600)), 24*time.Hour), nil},
		{"duration", run(mon, 24*time.Hour), run(mon, 6*time.Hour), []string{"warning: the runs differ in duration: 24h vs 6h"}},
		{"duration in minutes", run(mon, 90*time.Minute), run(mon, 6*time.Hour+30*time.Minute), []string{"warning: the runs differ in duration: 1h30m vs 6h30m"}},
		{"start", run(mon, 24*time.Hour), run(mon.Add(24*time.Hour), 24*time.Hour),
			[]string{"warning: the runs differ in start: Mon 2026-11-30 00:00 UTC vs Tue 2026-12-01 00:00 UTC"}},
		{"both", run(mon, 168*time.Hour), run(mon.Add(8*time.Hour), 45*time.Second), []string{
			"warning: the runs differ in duration: 168h vs 45s",
			"warning: the runs differ in start: Mon 2026-11-30 00:00 UTC vs Mon 2026-11-30 08:00 UTC"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ComparisonWarnings(tc.a, tc.b)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("warnings %q, want %q", got, tc.want)
			}
			var b bytes.Buffer
			WriteComparison(&b, tc.a, tc.b)
			lines := strings.Split(b.String(), "\n")
			for i, w := range tc.want {
				if lines[i] != w {
					t.Errorf("comparison line %d %q, want %q", i+1, lines[i], w)
				}
			}
			if len(tc.want) == 0 && strings.Contains(b.String(), "warning") {
				t.Errorf("warning for alike runs:\n%s", b.String())
			}
			if !strings.Contains(b.String(), "startup p50 / p99 (s)  no pod ran") {
				t.Errorf("comparison of runs without pods:\n%s", b.String())
			}
		})
	}
}
