package scenario

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// defaultPodSpecs applies to a freshly decoded object what the API server
// applies to every pod created from it: requests default from limits. The
// usual way to ask for a GPU is a limit alone, and the pod then requests it.
func defaultPodSpecs(obj any) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		scheduling.DefaultRequestsFromLimits(&o.Spec.Template.Spec)
	case *appsv1.StatefulSet:
		scheduling.DefaultRequestsFromLimits(&o.Spec.Template.Spec)
	case *appsv1.DaemonSet:
		scheduling.DefaultRequestsFromLimits(&o.Spec.Template.Spec)
	case *batchv1.Job:
		scheduling.DefaultRequestsFromLimits(&o.Spec.Template.Spec)
	case *batchv1.CronJob:
		scheduling.DefaultRequestsFromLimits(&o.Spec.JobTemplate.Spec.Template.Spec)
	case *corev1.Pod:
		scheduling.DefaultRequestsFromLimits(&o.Spec)
	case *resourceapi.ResourceClaimTemplate:
		DefaultDeviceClaim(&o.Spec.Spec)
	case *resourceapi.ResourceClaim:
		DefaultDeviceClaim(&o.Spec)
	}
}

// DefaultDeviceClaim gives a claim's device requests the API server's
// defaults: allocationMode ExactCount, and then count 1, in a request and
// in each of its firstAvailable alternatives.
func DefaultDeviceClaim(spec *resourceapi.ResourceClaimSpec) {
	def := func(mode *resourceapi.DeviceAllocationMode, count *int64) {
		if *mode == "" {
			*mode = resourceapi.DeviceAllocationModeExactCount
		}
		if *mode == resourceapi.DeviceAllocationModeExactCount && *count == 0 {
			*count = 1
		}
	}
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		if r.Exactly != nil {
			def(&r.Exactly.AllocationMode, &r.Exactly.Count)
		}
		for j := range r.FirstAvailable {
			def(&r.FirstAvailable[j].AllocationMode, &r.FirstAvailable[j].Count)
		}
	}
}
