package autoscale

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// HPA is one HorizontalPodAutoscaler on a CPU utilization target,
// run with the upstream controller's algorithm: the replica calculator
// (tolerance, pending pods counted at zero usage when scaling up), then
// either the classic normalization (no behavior: 5-minute scale-down
// stabilization, at most max(2×, 4) up) or the behavior one (stabilization
// windows both ways, and policies limiting the change within each policy's
// periodSeconds, measured from the scale events actually made).
type HPA struct {
	Object *autoscalingv2.HorizontalPodAutoscaler
	// Load is what its target serves over time; CPUPerUnit the cores one
	// unit of it uses; TargetUtilization the CPU target, in percent;
	// RequestCores a pod's CPU request.
	Load                     *Load
	CPUPerUnit               float64
	TargetUtilization        float64
	RequestCores             float64
	MinReplicas, MaxReplicas int

	recommendations []timed
	scaleUps        []timed // replicas added, when
	scaleDowns      []timed // replicas removed, when
}

type timed struct {
	at time.Time
	n  int
}

const (
	hpaTolerance                 = 0.1
	hpaDownscaleStabilization    = 5 * time.Minute
	hpaScaleUpLimitFactor        = 2
	hpaScaleUpLimitMinimum       = 4
	hpaDefaultScaleUpPeriod      = 15
	hpaDefaultScaleUpPods        = 4
	hpaDefaultScaleUpPercent     = 100
	hpaDefaultScaleDownPeriod    = 15
	hpaDefaultScaleDownPercent   = 100
	hpaDefaultScaleUpWindowSecs  = 0
	hpaDefaultScaleDownWindowSec = 300
)

// Evaluate is one sync of the HPA at now (start: the run's, which the load
// is an offset from) of a target with current replicas, ready (running)
// and unready (pending) pods; it returns the new replica count.
func (h *HPA) Evaluate(now, start time.Time, current, ready, unready int) int {
	var desired int
	switch {
	case current == 0:
		return 0 // scaling is disabled while the target has no replicas
	case current > h.MaxReplicas:
		desired = h.MaxReplicas
	case current < h.MinReplicas:
		desired = h.MinReplicas
	default:
		desired = h.replicasForLoad(now.Sub(start), current, ready, unready)
		if h.Object.Spec.Behavior == nil {
			desired = h.normalize(now, current, desired)
		} else {
			desired = h.normalizeWithBehavior(now, current, desired)
		}
	}
	if desired != current && h.Object.Spec.Behavior != nil {
		h.storeScaleEvent(now, current, desired)
	}
	return desired
}

// replicasForLoad is the replica calculator for a CPU utilization target.
func (h *HPA) replicasForLoad(offset time.Duration, current, ready, unready int) int {
	if ready == 0 || h.RequestCores <= 0 {
		return current // no metrics: the controller does not scale
	}
	total := h.Load.At(offset) * h.CPUPerUnit
	ratio := total / float64(ready) / h.RequestCores * 100 / h.TargetUtilization
	upTol, downTol := h.tolerances()
	within := func(r float64) bool { return r >= 1-downTol && r <= 1+upTol }
	if unready == 0 || ratio <= 1 {
		if within(ratio) {
			return current
		}
		return int(math.Ceil(ratio * float64(ready)))
	}
	// Scaling up with pods not ready yet: count them at zero usage, so
	// capacity already on its way is not asked for twice.
	all := ready + unready
	newRatio := total / float64(all) / h.RequestCores * 100 / h.TargetUtilization
	if within(newRatio) || newRatio < 1 {
		return current
	}
	n := int(math.Ceil(newRatio * float64(all)))
	if n < current {
		return current
	}
	return n
}

func (h *HPA) tolerances() (up, down float64) {
	up, down = hpaTolerance, hpaTolerance
	if b := h.Object.Spec.Behavior; b != nil {
		if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
			up = b.ScaleUp.Tolerance.AsApproximateFloat64()
		}
		if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
			down = b.ScaleDown.Tolerance.AsApproximateFloat64()
		}
	}
	return up, down
}

// normalize is the controller's path for HPAs without behavior.
func (h *HPA) normalize(now time.Time, current, desired int) int {
	stabilized := desired
	cutoff := now.Add(-hpaDownscaleStabilization)
	kept := h.recommendations[:0]
	for _, r := range h.recommendations {
		if r.at.Before(cutoff) {
			continue
		}
		kept = append(kept, r)
		stabilized = max(stabilized, r.n)
	}
	h.recommendations = append(kept, timed{now, desired})
	upLimit := max(hpaScaleUpLimitFactor*current, hpaScaleUpLimitMinimum)
	return Clamp(stabilized, h.MinReplicas, min(h.MaxReplicas, upLimit))
}

// normalizeWithBehavior is the controller's path for HPAs with behavior:
// stabilization windows, then the policies' rate limits.
func (h *HPA) normalizeWithBehavior(now time.Time, current, desired int) int {
	up, down := h.rules()
	upCutoff := now.Add(-time.Duration(*up.StabilizationWindowSeconds) * time.Second)
	downCutoff := now.Add(-time.Duration(*down.StabilizationWindowSeconds) * time.Second)
	upRec, downRec := desired, desired
	kept := h.recommendations[:0]
	for _, r := range h.recommendations {
		if r.at.After(upCutoff) {
			upRec = min(upRec, r.n)
		}
		if r.at.After(downCutoff) {
			downRec = max(downRec, r.n)
		}
		if r.at.After(upCutoff) || r.at.After(downCutoff) {
			kept = append(kept, r)
		}
	}
	h.recommendations = append(kept, timed{now, desired})
	stabilized := min(max(current, upRec), downRec)

	switch {
	case stabilized > current:
		limit := max(h.policyLimit(now, current, up, scalingUp), current)
		return min(stabilized, min(h.MaxReplicas, limit))
	case stabilized < current:
		limit := min(h.policyLimit(now, current, down, scalingDown), current)
		return max(stabilized, max(h.MinReplicas, limit))
	}
	return stabilized
}

// rules returns the behavior's scale-up and scale-down rules with the API
// server's defaults filled in.
func (h *HPA) rules() (up, down *autoscalingv2.HPAScalingRules) {
	maxPolicy := autoscalingv2.MaxChangePolicySelect
	upWindow, downWindow := int32(hpaDefaultScaleUpWindowSecs), int32(hpaDefaultScaleDownWindowSec)
	up = &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &upWindow, SelectPolicy: &maxPolicy, Policies: []autoscalingv2.HPAScalingPolicy{
		{Type: autoscalingv2.PodsScalingPolicy, Value: hpaDefaultScaleUpPods, PeriodSeconds: hpaDefaultScaleUpPeriod},
		{Type: autoscalingv2.PercentScalingPolicy, Value: hpaDefaultScaleUpPercent, PeriodSeconds: hpaDefaultScaleUpPeriod}}}
	down = &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &downWindow, SelectPolicy: &maxPolicy, Policies: []autoscalingv2.HPAScalingPolicy{
		{Type: autoscalingv2.PercentScalingPolicy, Value: hpaDefaultScaleDownPercent, PeriodSeconds: hpaDefaultScaleDownPeriod}}}
	merge := func(from, to *autoscalingv2.HPAScalingRules) {
		if from == nil {
			return
		}
		if from.SelectPolicy != nil {
			to.SelectPolicy = from.SelectPolicy
		}
		if from.StabilizationWindowSeconds != nil {
			to.StabilizationWindowSeconds = from.StabilizationWindowSeconds
		}
		if from.Policies != nil {
			to.Policies = from.Policies
		}
	}
	merge(h.Object.Spec.Behavior.ScaleUp, up)
	merge(h.Object.Spec.Behavior.ScaleDown, down)
	return up, down
}

// changedWithin sums the replica changes made in the last period seconds.
func changedWithin(events []timed, now time.Time, periodSeconds int32) int {
	cutoff := now.Add(-time.Duration(periodSeconds) * time.Second)
	n := 0
	for _, e := range events {
		if e.at.After(cutoff) {
			n += e.n
		}
	}
	return n
}

// scaleDirection is which way an HPA scales.
type scaleDirection bool

const (
	scalingUp   scaleDirection = true
	scalingDown scaleDirection = false
)

// policyLimit is how far the policies let replicas go from current, in
// direction dir: per policy, from the replicas at the start of its period by what
// it allows; selectPolicy Max takes the largest change, Min the smallest,
// Disabled none.
func (h *HPA) policyLimit(now time.Time, current int, rules *autoscalingv2.HPAScalingRules, dir scaleDirection) int {
	up := dir == scalingUp
	sel := *rules.SelectPolicy
	if sel == autoscalingv2.DisabledPolicySelect {
		return current
	}
	var change int
	for i, p := range rules.Policies {
		periodStart := current - changedWithin(h.scaleUps, now, p.PeriodSeconds) + changedWithin(h.scaleDowns, now, p.PeriodSeconds)
		var proposed int
		switch {
		case up && p.Type == autoscalingv2.PercentScalingPolicy:
			proposed = int(math.Ceil(float64(periodStart) * (1 + float64(p.Value)/100)))
		case up:
			proposed = periodStart + int(p.Value)
		case p.Type == autoscalingv2.PercentScalingPolicy:
			proposed = int(float64(periodStart) * (1 - float64(p.Value)/100))
		default:
			proposed = periodStart - int(p.Value)
		}
		c := proposed - current
		if !up {
			c = -c
		}
		if i == 0 || (sel == autoscalingv2.MinChangePolicySelect) == (c < change) {
			change = c
		}
	}
	if up {
		return current + change
	}
	return current - change
}

// storeScaleEvent records a change for the policies' periods, dropping
// events older than the longest period.
func (h *HPA) storeScaleEvent(now time.Time, from, to int) {
	up, down := h.rules()
	prune := func(events []timed, rules *autoscalingv2.HPAScalingRules) []timed {
		var longest int32
		for _, p := range rules.Policies {
			longest = max(longest, p.PeriodSeconds)
		}
		cutoff := now.Add(-time.Duration(longest) * time.Second)
		kept := events[:0]
		for _, e := range events {
			if !e.at.Before(cutoff) {
				kept = append(kept, e)
			}
		}
		return kept
	}
	if to > from {
		h.scaleUps = append(prune(h.scaleUps, up), timed{now, to - from})
	} else {
		h.scaleDowns = append(prune(h.scaleDowns, down), timed{now, from - to})
	}
}
