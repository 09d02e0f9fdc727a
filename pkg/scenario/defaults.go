package scenario

import (
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
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
		provisioning.DefaultDeviceClaim(&o.Spec.Spec)
	case *resourceapi.ResourceClaim:
		provisioning.DefaultDeviceClaim(&o.Spec)
	}
}
