package scheduling

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
)

// UntoleratedTaintError names the taint a pod does not tolerate.
type UntoleratedTaintError struct{ Taint corev1.Taint }

func (e *UntoleratedTaintError) Error() string {
	t := e.Taint
	if t.Value == "" {
		return fmt.Sprintf("does not tolerate taint %s:%s", t.Key, t.Effect)
	}
	return fmt.Sprintf("does not tolerate taint %s=%s:%s", t.Key, t.Value, t.Effect)
}

// Tolerates reports the first taint the tolerations do not tolerate. Every
// effect counts, PreferNoSchedule included: like upstream Karpenter, Joiner
// does not launch a node for a pod that would only be tolerated there
// grudgingly.
func Tolerates(taints []corev1.Taint, tolerations []corev1.Toleration) error {
	t, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), taints, tolerations,
		func(*corev1.Taint) bool { return true }, false)
	if untolerated {
		return &UntoleratedTaintError{Taint: t}
	}
	return nil
}

// ToleratesForScheduling is kube-scheduler's TaintToleration filter: only
// NoSchedule and NoExecute taints keep a pod off an existing node.
func ToleratesForScheduling(taints []corev1.Taint, tolerations []corev1.Toleration) error {
	t, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), taints, tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
	if untolerated {
		return &UntoleratedTaintError{Taint: t}
	}
	return nil
}

// UntoleratedPreferNoSchedule counts the PreferNoSchedule taints the
// tolerations do not tolerate: what kube-scheduler's TaintToleration score
// plugin ranks nodes by (fewer is better).
func UntoleratedPreferNoSchedule(taints []corev1.Taint, tolerations []corev1.Toleration) int {
	n := 0
	for i := range taints {
		if taints[i].Effect == corev1.TaintEffectPreferNoSchedule &&
			!corev1helpers.TolerationsTolerateTaint(klog.Background(), tolerations, &taints[i], false) {
			n++
		}
	}
	return n
}

// HasTaint reports whether taints hold one matching t (its key and effect).
func HasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	for i := range taints {
		if taints[i].MatchTaint(&t) {
			return true
		}
	}
	return false
}

// WithTaint returns taints with t added at the end (on) or with every taint
// matching it removed, and whether that changed them. A change is made in
// a new slice; taints is never written into.
func WithTaint(taints []corev1.Taint, t corev1.Taint, on bool) ([]corev1.Taint, bool) {
	if HasTaint(taints, t) == on {
		return taints, false
	}
	out := make([]corev1.Taint, 0, len(taints)+1)
	for _, have := range taints {
		if !have.MatchTaint(&t) {
			out = append(out, have)
		}
	}
	if on {
		out = append(out, t)
	}
	return out, true
}
