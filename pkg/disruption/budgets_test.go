package disruption

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

func budget(nodes string, schedule string, duration time.Duration, reasons ...v1.DisruptionReason) v1.Budget {
	b := v1.Budget{Nodes: nodes, Reasons: reasons}
	if schedule != "" {
		b.Schedule = &schedule
		b.Duration = &metav1.Duration{Duration: duration}
	}
	return b
}

func poolWith(budgets ...v1.Budget) *v1.NodePool {
	np := &v1.NodePool{}
	np.Spec.Disruption.Budgets = budgets
	return np
}

// The seeds' production budgets: drift 10 % in the weekday window from
// 09:00 for 8 hours, 50 % otherwise.
func seedPool() *v1.NodePool {
	return poolWith(
		budget("10%", "0 9 * * mon-fri", 8*time.Hour, v1.DisruptionReasonDrifted),
		budget("50%", "", 0, v1.DisruptionReasonDrifted),
	)
}

func at(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04:05 Mon", s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestSeedWeekdayWindow(t *testing.T) {
	nodes := PoolNodes{Total: 20}
	tests := []struct {
		when    string
		allowed int
		binding int
	}{
		{"2026-11-30 08:59:59 Mon", 10, 1}, // before the window: 50 % of 20
		{"2026-11-30 09:00:00 Mon", 2, 0},  // opens on the hit: 10 % of 20
		{"2026-11-30 12:00:00 Mon", 2, 0},
		{"2026-11-30 16:59:59 Mon", 2, 0},  // last second of the 8 hours
		{"2026-11-30 17:00:00 Mon", 10, 1}, // closed exactly 8 h after the hit
		{"2026-12-04 10:00:00 Fri", 2, 0},
		{"2026-12-05 10:00:00 Sat", 10, 1}, // weekend: no window
		{"2026-12-06 09:30:00 Sun", 10, 1},
	}
	for _, tc := range tests {
		a := Allowed(seedPool(), v1.DisruptionReasonDrifted, nodes, at(tc.when))
		if a.Allowed != tc.allowed || a.Binding != tc.binding {
			t.Errorf("%s: %s, want %d allowed by budget %d", tc.when, a, tc.allowed, tc.binding)
		}
	}
	// The seeds' budgets name only Drifted: other reasons are unbounded.
	if a := Allowed(seedPool(), v1.DisruptionReasonEmpty, nodes, at("2026-11-30 12:00:00 Mon")); a.Binding != -1 {
		t.Errorf("Empty is not limited by Drifted budgets: %s", a)
	}
}

func TestBudgetShapes(t *testing.T) {
	noon := at("2026-11-30 12:00:00 Mon")
	tests := []struct {
		name   string
		np     *v1.NodePool
		nodes  PoolNodes
		reason v1.DisruptionReason
		want   int
		err    string
	}{
		{"default 10% rounds up", poolWith(budget("10%", "", 0)), PoolNodes{Total: 11}, v1.DisruptionReasonEmpty, 2, ""},
		{"percentage of few nodes rounds up to 1", poolWith(budget("5%", "", 0)), PoolNodes{Total: 3}, v1.DisruptionReasonEmpty, 1, ""},
		{"0% blocks", poolWith(budget("0%", "", 0)), PoolNodes{Total: 30}, v1.DisruptionReasonEmpty, 0, ""},
		{"count", poolWith(budget("3", "", 0)), PoolNodes{Total: 30}, v1.DisruptionReasonEmpty, 3, ""},
		{"most restrictive wins", poolWith(budget("3", "", 0), budget("50%", "", 0), budget("1", "", 0, v1.DisruptionReasonUnderutilized)), PoolNodes{Total: 30}, v1.DisruptionReasonUnderutilized, 1, ""},
		{"reason filter", poolWith(budget("3", "", 0), budget("0", "", 0, v1.DisruptionReasonDrifted)), PoolNodes{Total: 30}, v1.DisruptionReasonEmpty, 3, ""},
		{"disrupting nodes count against it", poolWith(budget("5", "", 0)), PoolNodes{Total: 30, Disrupting: 2}, v1.DisruptionReasonEmpty, 3, ""},
		{"floor 0", poolWith(budget("1", "", 0)), PoolNodes{Total: 30, Disrupting: 4}, v1.DisruptionReasonEmpty, 0, ""},
		{"inactive window does not constrain", poolWith(budget("0", "0 0 * * *", time.Hour), budget("4", "", 0)), PoolNodes{Total: 30}, v1.DisruptionReasonEmpty, 4, ""},
		{"active window constrains", poolWith(budget("0", "0 11 * * *", 2*time.Hour), budget("4", "", 0)), PoolNodes{Total: 30}, v1.DisruptionReasonEmpty, 0, ""},
		{"@daily macro", poolWith(budget("0", "@daily", 13*time.Hour)), PoolNodes{Total: 30}, v1.DisruptionReasonEmpty, 0, ""},
		{"bad cron fails closed", poolWith(budget("5", "61 * * * *", time.Hour)), PoolNodes{Total: 30}, v1.DisruptionReasonEmpty, 0, "schedule"},
		{"bad nodes fails closed", poolWith(budget("lots", "", 0)), PoolNodes{Total: 30}, v1.DisruptionReasonEmpty, 0, "nodes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Allowed(tc.np, tc.reason, tc.nodes, noon)
			if a.Allowed != tc.want {
				t.Errorf("allowed %d, want %d (%s)", a.Allowed, tc.want, a)
			}
			if (tc.err == "") != (a.Err == nil) || (a.Err != nil && !strings.Contains(a.Err.Error(), tc.err)) {
				t.Errorf("err = %v, want one mentioning %q", a.Err, tc.err)
			}
		})
	}
	if a := Allowed(poolWith(), v1.DisruptionReasonEmpty, PoolNodes{Total: 5}, noon); a.Binding != -1 || !strings.Contains(a.String(), "unbounded") {
		t.Errorf("no budgets: %s", a)
	}
	if got := len(AllowedByReason(seedPool(), PoolNodes{Total: 4}, noon)); got != 3 {
		t.Errorf("one allowance per reason: %d", got)
	}
}

func TestBudgetWindow(t *testing.T) {
	sched, eight := "0 9 * * mon-fri", metav1.Duration{Duration: 8 * time.Hour}
	b := &v1.Budget{Nodes: "0", Schedule: &sched, Duration: &eight}
	monday := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		at     time.Duration
		active bool
		next   time.Time
	}{
		{10 * time.Hour, true, monday.Add(17 * time.Hour)},                               // Monday 10:00: open until 17:00
		{20 * time.Hour, false, monday.Add(33 * time.Hour)},                              // Monday 20:00: opens Tuesday 09:00
		{4*24*time.Hour + 18*time.Hour, false, monday.Add(7*24*time.Hour + 9*time.Hour)}, // Friday 18:00: opens next Monday
	} {
		active, next, err := Window(b, monday.Add(tc.at))
		if err != nil || active != tc.active || !next.Equal(tc.next) {
			t.Errorf("at +%s: active %v next %s (%v), want %v %s", tc.at, active, next, err, tc.active, tc.next)
		}
	}
	if active, next, err := Window(&v1.Budget{Nodes: "10%"}, monday); !active || !next.IsZero() || err != nil {
		t.Errorf("a budget without a schedule is always active: %v %s %v", active, next, err)
	}
}

// TestAllowanceExplain: an allowance in words — the binding budget as
// written, what it allows, and until when its window holds.
func TestAllowanceExplain(t *testing.T) {
	np := nodePool("p", func(np *v1.NodePool) {
		schedule := "0 9 * * mon-fri"
		np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: "10%"},
			{Nodes: "0", Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}, Schedule: &schedule, Duration: &metav1.Duration{Duration: 8 * time.Hour}}}
	})
	monday10 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	a := Allowed(np, v1.DisruptionReasonDrifted, PoolNodes{Total: 10}, monday10)
	want := `budgets[1] (nodes 0, reasons Drifted, from "0 9 * * mon-fri" for 8h0m0s) allows 0 Drifted disruption(s) until Mon 17:00 UTC`
	if got := a.Explain(np, monday10); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := Allowed(np, v1.DisruptionReasonEmpty, PoolNodes{Total: 10}, monday10).Explain(np, monday10); got != "budgets[0] (nodes 10%) allows 1 Empty disruption(s)" {
		t.Errorf("got %s", got)
	}
}
