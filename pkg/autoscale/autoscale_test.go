package autoscale

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

var t0 = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)

var constant = ConstantLoad

// target is an HPA and its target's replicas, as the simulator keeps them.
type target struct {
	h        *HPA
	replicas int
}

func (tg *target) evaluate(now, start time.Time, ready, unready int) int {
	return tg.h.Evaluate(now, start, tg.replicas, ready, unready)
}

func newHPA(replicas, minR, maxR int, load *Load) *target {
	return &target{replicas: replicas, h: &HPA{Object: &autoscalingv2.HorizontalPodAutoscaler{}, Load: load,
		CPUPerUnit: 0.01, TargetUtilization: 70, RequestCores: 0.5, MinReplicas: minR, MaxReplicas: maxR}}
}

func TestHPAAlgorithm(t *testing.T) {
	tests := []struct {
		name              string
		replicas, pending int
		load              float64
		want              int
	}{
		// Pods request 0.5 cores; the load uses load×0.01 cores in total.
		{"scale up by the ratio", 2, 0, 100, 3},                     // 1 core: 100 % vs 70 % → ceil(2×1.43)
		{"within 10 % tolerance", 2, 0, 75, 2},                      // 75 % vs 70 %
		{"rate limited to max(2×, 4)", 2, 0, 2000, 4},               // wants 58
		{"clamped to max", 10, 0, 2000, 12},                         // max 12
		{"no history: straight to min", 4, 0, 0, 1},                 // wants 0
		{"pending pods are not scaled away", 10, 8, 100, 10},        // 2 ready would say 3
		{"pending pods count as capacity on the way", 4, 2, 400, 8}, // 12 counting them at zero, limit 8
		{"zero replicas: scaling is off", 0, 0, 2000, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHPA(tc.replicas, 1, 12, constant(tc.load))
			if got := h.evaluate(t0, t0, tc.replicas-tc.pending, tc.pending); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
	// Scale-down stabilization: the highest recommendation of the last 5
	// minutes wins; after the window, the lower one applies.
	load := 200.0
	h := newHPA(4, 1, 20, &Load{at: func(time.Duration) float64 { return load }})
	h.replicas = h.evaluate(t0, t0, 4, 0) // 2 cores over 4 pods: 100 % → 6
	if h.replicas != 6 {
		t.Fatalf("scale up: %d", h.replicas)
	}
	load = 20
	if got := h.evaluate(t0.Add(2*time.Minute), t0, 6, 0); got != 6 {
		t.Errorf("within the stabilization window: %d, want 6", got)
	}
	if got := h.evaluate(t0.Add(6*time.Minute), t0, 6, 0); got >= 6 {
		t.Errorf("after the window it scales down: %d", got)
	}
}

// TestHPABehaviorPolicies: policies limit the change over their whole
// periodSeconds, counted from the scale events made, not per sync.
func TestHPABehaviorPolicies(t *testing.T) {
	pods, percent := autoscalingv2.PodsScalingPolicy, autoscalingv2.PercentScalingPolicy
	zero, sixty := int32(0), int32(60)
	disabled := autoscalingv2.DisabledPolicySelect
	run := func(h *target, ready func() int, steps int) []int {
		var out []int
		for i := 0; i < steps; i++ {
			h.replicas = h.evaluate(t0.Add(time.Duration(i)*15*time.Second), t0, ready(), 0)
			out = append(out, h.replicas)
		}
		return out
	}
	t.Run("scale up 2 pods per 60 s", func(t *testing.T) {
		h := newHPA(2, 1, 50, constant(5000))
		h.h.Object.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: pods, Value: 2, PeriodSeconds: 60}}}}
		got := run(h, func() int { return h.replicas }, 9)
		want := []int{4, 4, 4, 4, 6, 6, 6, 6, 8}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("replicas every 15 s: %v, want %v", got, want)
		}
	})
	t.Run("scale down 50 % per 60 s, no stabilization", func(t *testing.T) {
		h := newHPA(16, 1, 50, constant(0))
		h.h.Object.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: &zero, Policies: []autoscalingv2.HPAScalingPolicy{{Type: percent, Value: 50, PeriodSeconds: 60}}}}
		got := run(h, func() int { return h.replicas }, 9)
		want := []int{8, 8, 8, 8, 4, 4, 4, 4, 2}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("replicas every 15 s: %v, want %v", got, want)
		}
	})
	t.Run("default behavior: 4 pods or 100 % per 15 s up", func(t *testing.T) {
		h := newHPA(3, 1, 100, constant(5000))
		h.h.Object.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
		got := run(h, func() int { return h.replicas }, 4)
		want := []int{7, 14, 28, 56}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("replicas every 15 s: %v, want %v", got, want)
		}
	})
	t.Run("scale-up stabilization window holds back a spike", func(t *testing.T) {
		load := 100.0 // 2 replicas at 100 % → 3
		h := newHPA(3, 1, 50, &Load{at: func(time.Duration) float64 { return load }})
		h.h.Object.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &sixty}}
		h.replicas = h.evaluate(t0, t0, 3, 0) // 1 core over 3: 67 % → within tolerance, 3
		load = 400
		if got := h.evaluate(t0.Add(15*time.Second), t0, 3, 0); got != 3 {
			t.Errorf("spike inside the window: %d, want 3", got)
		}
		if got := h.evaluate(t0.Add(75*time.Second), t0, 3, 0); got <= 3 {
			t.Errorf("after the window the spike is acted on: %d", got)
		}
	})
	t.Run("selectPolicy Min takes the smaller change", func(t *testing.T) {
		minimum := autoscalingv2.MinChangePolicySelect
		h := newHPA(4, 1, 50, constant(5000))
		h.h.Object.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{SelectPolicy: &minimum,
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: pods, Value: 1, PeriodSeconds: 15}, {Type: percent, Value: 100, PeriodSeconds: 15}}}}
		if got := run(h, func() int { return h.replicas }, 3); fmt.Sprint(got) != "[5 6 7]" {
			t.Errorf("replicas: %v, want one pod per sync", got)
		}
	})
	t.Run("disabled scale down", func(t *testing.T) {
		h := newHPA(8, 1, 50, constant(0))
		h.h.Object.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{SelectPolicy: &disabled, StabilizationWindowSeconds: &zero}}
		if got := run(h, func() int { return h.replicas }, 3); fmt.Sprint(got) != "[8 8 8]" {
			t.Errorf("replicas: %v, want no change", got)
		}
	})
}

func TestKEDA(t *testing.T) {
	q := 95.0
	so := &scenario.ScaledObject{}
	min0, max8, cool := int32(0), int32(8), int32(300)
	so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount, so.Spec.CooldownPeriod = &min0, &max8, &cool
	so.Spec.Triggers = append(so.Spec.Triggers, struct {
		Type     string            `json:"type"`
		Metadata map[string]string `json:"metadata"`
	}{Type: "aws-sqs-queue", Metadata: map[string]string{"queueLength": "20", "activationQueueLength": "5"}})
	w := &struct{ replicas int }{}
	k, err := NewKEDA(so, &Load{at: func(time.Duration) float64 { return q }})
	if err != nil {
		t.Fatal(err)
	}
	if got := k.Evaluate(t0, t0, w.replicas); got != 5 {
		t.Errorf("95 messages / 20 per replica: %d, want 5", got)
	}
	q = 1000
	if got := k.Evaluate(t0, t0, w.replicas); got != 8 {
		t.Errorf("clamped to max: %d", got)
	}
	w.replicas = 8
	q = 3 // below activation
	if got := k.Evaluate(t0.Add(time.Minute), t0, w.replicas); got != 8 {
		t.Errorf("cooldown keeps replicas: %d", got)
	}
	if got := k.Evaluate(t0.Add(6*time.Minute), t0, w.replicas); got != 0 {
		t.Errorf("after cooldown, to zero: %d", got)
	}
	so.Spec.Triggers[0].Metadata["queueLength"] = "ten"
	if _, err := NewKEDA(so, constant(1)); err == nil || !strings.Contains(err.Error(), `queueLength "ten"`) {
		t.Errorf("bad trigger metadata: %v", err)
	}
}

func TestLoadPatterns(t *testing.T) {
	d, _ := NewLoad(scenario.LoadSpec{Pattern: "diurnal", Base: 100, Peak: 500, PeakHour: 14}, nil, "")
	if v := d.At(14 * time.Hour); math.Abs(v-500) > 1e-9 {
		t.Errorf("diurnal at peak hour = %v", v)
	}
	if v := d.At(2 * time.Hour); math.Abs(v-100) > 1e-9 {
		t.Errorf("diurnal 12 h later = %v", v)
	}
	if v := d.At(38 * time.Hour); math.Abs(v-500) > 1e-9 {
		t.Errorf("diurnal repeats daily: %v", v)
	}
	s, _ := NewLoad(scenario.LoadSpec{Pattern: "steps", Steps: []scenario.Step{{At: durationOf(2 * time.Hour), Value: 7}, {At: durationOf(0), Value: 3}}}, nil, "")
	if s.At(time.Hour) != 3 || s.At(2*time.Hour) != 7 {
		t.Errorf("steps: %v %v", s.At(time.Hour), s.At(2*time.Hour))
	}
	fsys := fstest.MapFS{"sc/trace.csv": {Data: []byte("# offset,value\n0s,10\n30m,40\n")}, "sc/bad.csv": {Data: []byte("0s;10\n")}}
	c, err := NewLoad(scenario.LoadSpec{Pattern: "csv", CSV: "trace.csv"}, fsys, "sc")
	if err != nil || c.At(29*time.Minute) != 10 || c.At(31*time.Minute) != 40 {
		t.Errorf("csv: %v", err)
	}
	// A scenario directory opened as the root of its file system (the CLI's
	// os.DirFS(dir) with dir ".") must work too.
	root := fstest.MapFS{"trace.csv": {Data: []byte("0s,10\n")}}
	if c, err := NewLoad(scenario.LoadSpec{Pattern: "csv", CSV: "trace.csv"}, root, "."); err != nil || c.At(0) != 10 {
		t.Errorf("csv beside scenario.yaml at the root: %v", err)
	}
	if _, err := NewLoad(scenario.LoadSpec{Pattern: "csv", CSV: "missing.csv"}, root, "."); err == nil || !strings.Contains(err.Error(), `csv "missing.csv"`) {
		t.Errorf("missing csv: %v", err)
	}
	if _, err := NewLoad(scenario.LoadSpec{Pattern: "csv", CSV: "bad.csv"}, fsys, "sc"); err == nil || !strings.Contains(err.Error(), "bad.csv:1: want offset,value") {
		t.Errorf("bad csv: %v", err)
	}
}
