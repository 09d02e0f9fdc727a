package aws

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// withKubelet makes an instance type's pods and overhead what spec.kubelet
// makes the kubelet report, as upstream computes them: maxPods (a number)
// and podsPerCore cap the pods; kubeReserved and systemReserved
// quantities replace the defaults' for their resources; evictionHard and
// evictionSoft (the larger) set the memory and ephemeral-storage
// thresholds. Values written as expressions keep the defaults. The
// kubelet gets the same settings in the user data.
func withKubelet(it *cloudprovider.InstanceType, kc *awsv1.KubeletConfiguration) {
	if kc == nil {
		return
	}
	it.Capacity = it.Capacity.DeepCopy()
	pods := it.Capacity.Pods().Value()
	if kc.MaxPods != nil && kc.MaxPods.Type == intstr.Int {
		pods = int64(kc.MaxPods.IntVal)
	}
	if kc.PodsPerCore != nil && *kc.PodsPerCore > 0 {
		pods = min(pods, int64(*kc.PodsPerCore)*it.Capacity.Cpu().Value())
	}
	it.Capacity[corev1.ResourcePods] = *resource.NewQuantity(pods, resource.DecimalSI)
	it.Overhead.KubeReserved = reserved(it.Overhead.KubeReserved, kc.KubeReserved)
	it.Overhead.SystemReserved = reserved(it.Overhead.SystemReserved, kc.SystemReserved)
	it.Overhead.EvictionThreshold = it.Overhead.EvictionThreshold.DeepCopy()
	if it.Overhead.EvictionThreshold == nil {
		it.Overhead.EvictionThreshold = corev1.ResourceList{}
	}
	for signal, name := range map[string]corev1.ResourceName{"memory.available": corev1.ResourceMemory, "nodefs.available": corev1.ResourceEphemeralStorage} {
		var best *resource.Quantity
		for _, thresholds := range []map[string]awsv1.EvictionThreshold{kc.EvictionHard, kc.EvictionSoft} {
			v, ok := thresholds[signal]
			if !ok {
				continue
			}
			if q := threshold(string(v), it.Capacity[name]); q != nil && (best == nil || q.Cmp(*best) > 0) {
				best = q
			}
		}
		if best != nil {
			it.Overhead.EvictionThreshold[name] = *best
		}
	}
}

// reserved is defaults with the quantities of spec's resources (cpu,
// memory, ephemeral-storage) in their place.
func reserved(defaults corev1.ResourceList, spec map[string]string) corev1.ResourceList {
	out := defaults.DeepCopy()
	for k, v := range spec {
		q, err := resource.ParseQuantity(v)
		if err != nil || k == "pid" {
			continue
		}
		if out == nil {
			out = corev1.ResourceList{}
		}
		out[corev1.ResourceName(k)] = q
	}
	return out
}

// threshold is an eviction threshold as a quantity: "500Mi", or "5%" of
// the capacity.
func threshold(v string, capacity resource.Quantity) *resource.Quantity {
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		p, err := resource.ParseQuantity(pct)
		if err != nil {
			return nil
		}
		return resource.NewQuantity(int64(float64(capacity.Value())*p.AsApproximateFloat64()/100), capacity.Format)
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return nil
	}
	return &q
}
