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
