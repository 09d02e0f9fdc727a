package v1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DoNotDisruptUntil reads a pod's karpenter.sh/do-not-disrupt annotation as
// upstream Karpenter does: "true" protects the pod for good (permanent), a
// Go duration ("30m") protects it for that long after it started running
// (until; a pod not started yet is protected), and any other value is
// ignored (upstream also emits an event saying so).
func DoNotDisruptUntil(p *corev1.Pod) (until time.Time, permanent, protected bool) {
	v, ok := p.Annotations[AnnotationDoNotDisrupt]
	if !ok {
		return time.Time{}, false, false
	}
	if v == "true" {
		return time.Time{}, true, true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return time.Time{}, false, false
	}
	if p.Status.StartTime == nil {
		return time.Time{}, true, true // the duration runs from the start, which has not come
	}
	return p.Status.StartTime.Add(d), false, true
}

// DoNotDisruptAt reports whether the annotation protects the pod at now.
func DoNotDisruptAt(p *corev1.Pod, now time.Time) bool {
	until, permanent, protected := DoNotDisruptUntil(p)
	return protected && (permanent || now.Before(until))
}
