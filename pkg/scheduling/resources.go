package scheduling

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodRequests is what a pod needs from a node: the effective requests of its
// containers (init and sidecar containers as the kubelet accounts for them,
// pod-level resources when set) plus its overhead, plus one pod slot. A
// container being resized in place counts at the larger of its spec and
// what its status says the kubelet holds (status.containerStatuses[].
// resources, allocatedResources), as kube-scheduler counts it with
// InPlacePodVerticalScaling (on by default since Kubernetes 1.33) and
// upstream Karpenter since v1.14 (UseStatusResources).
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	out := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true})
	out[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return out
}

// Add returns the sum of resource lists.
func Add(lists ...corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, l := range lists {
		for k, v := range l {
			q := out[k]
			q.Add(v)
			out[k] = q
		}
	}
	return out
}

// Subtract returns a minus b, per resource (it may go negative).
func Subtract(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for k, v := range b {
		q := out[k]
		q.Sub(v)
		out[k] = q
	}
	return out
}

// InsufficientError names the first resource (by name) that does not fit.
type InsufficientError struct {
	Resource         corev1.ResourceName
	Requested, Avail resource.Quantity
}

func (e *InsufficientError) Error() string {
	return fmt.Sprintf("needs %s %s, only %s available", e.Requested.String(), e.Resource, e.Avail.String())
}

// Fits reports whether requests fit in available; a resource missing from
// available counts as zero.
func Fits(requests, available corev1.ResourceList) error {
	names := make([]string, 0, len(requests))
	for k := range requests {
		names = append(names, string(k))
	}
	sort.Strings(names)
	for _, n := range names {
		k := corev1.ResourceName(n)
		req := requests[k]
		if req.IsZero() {
			continue
		}
		avail := available[k]
		if req.Cmp(avail) > 0 {
			return &InsufficientError{Resource: k, Requested: req, Avail: avail}
		}
	}
	return nil
}

// DefaultRequestsFromLimits fills in what the API server defaults when it
// creates a pod: a container (init containers included) that sets a limit
// and no request for a resource requests its limit — cpu, memory and
// extended resources such as nvidia.com/gpu alike — and so do pod-level
// resources (which know only cpu, memory and hugepages). It changes spec in
// place; callers pass a copy they own.
func DefaultRequestsFromLimits(spec *corev1.PodSpec) {
	defaultRequirements := func(r *corev1.ResourceRequirements, podLevel bool) {
		for name, limit := range r.Limits {
			if _, ok := r.Requests[name]; ok {
				continue
			}
			if podLevel && name != corev1.ResourceCPU && name != corev1.ResourceMemory && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
				continue
			}
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests[name] = limit.DeepCopy()
		}
	}
	for i := range spec.Containers {
		defaultRequirements(&spec.Containers[i].Resources, false)
	}
	for i := range spec.InitContainers {
		defaultRequirements(&spec.InitContainers[i].Resources, false)
	}
	if spec.Resources != nil {
		defaultRequirements(spec.Resources, true)
	}
}
