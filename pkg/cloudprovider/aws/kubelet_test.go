package aws

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

func TestWithKubelet(t *testing.T) {
	base := func() *cloudprovider.InstanceType {
		return &cloudprovider.InstanceType{
			Name: "m5.xlarge",
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
				corev1.ResourcePods: resource.MustParse("58"), corev1.ResourceEphemeralStorage: resource.MustParse("20Gi")},
			Overhead: cloudprovider.Overhead{
				KubeReserved:      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("80m"), corev1.ResourceMemory: resource.MustParse("893Mi")},
				EvictionThreshold: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("100Mi")},
			},
		}
	}
	n := func(i int32) *intstr.IntOrString { v := intstr.FromInt32(i); return &v }
	expr := intstr.FromString("self.max_pods")
	three := int32(3)
	tests := []struct {
		name string
		kc   *awsv1.KubeletConfiguration
		// wants, by what they are of
		pods                         int64
		kubeCPU, systemMem, evictMem string
		evictStorage                 string
	}{
		{"none", nil, 58, "80m", "", "100Mi", ""},
		{"maxPods", &awsv1.KubeletConfiguration{MaxPods: n(110)}, 110, "80m", "", "100Mi", ""},
		{"maxPods as an expression", &awsv1.KubeletConfiguration{MaxPods: &expr}, 58, "80m", "", "100Mi", ""},
		{"podsPerCore caps it", &awsv1.KubeletConfiguration{MaxPods: n(110), PodsPerCore: &three}, 12, "80m", "", "100Mi", ""},
		{"reserved", &awsv1.KubeletConfiguration{KubeReserved: map[string]string{"cpu": "200m", "pid": "100"},
			SystemReserved: map[string]string{"memory": "1Gi", "cpu": "self.vcpus * 10"}}, 58, "200m", "1Gi", "100Mi", ""},
		{"eviction, the larger of hard and soft", &awsv1.KubeletConfiguration{
			EvictionHard: map[string]awsv1.EvictionThreshold{"memory.available": "500Mi", "nodefs.available": "10%"},
			EvictionSoft: map[string]awsv1.EvictionThreshold{"memory.available": "5%"}}, 58, "80m", "", "858993459", "2Gi"}, // 5 % of 16Gi,
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := base()
			withKubelet(it, tt.kc)
			if got := it.Capacity.Pods().Value(); got != tt.pods {
				t.Errorf("pods %d, want %d", got, tt.pods)
			}
			check := func(what string, l corev1.ResourceList, name corev1.ResourceName, want string) {
				got, ok := l[name]
				if want == "" {
					if ok {
						t.Errorf("%s %s = %s, want none", what, name, got.String())
					}
					return
				}
				if w := resource.MustParse(want); got.Cmp(w) != 0 {
					t.Errorf("%s %s = %s, want %s", what, name, got.String(), want)
				}
			}
			check("kube-reserved", it.Overhead.KubeReserved, corev1.ResourceCPU, tt.kubeCPU)
			check("system-reserved", it.Overhead.SystemReserved, corev1.ResourceMemory, tt.systemMem)
			check("eviction", it.Overhead.EvictionThreshold, corev1.ResourceMemory, tt.evictMem)
			check("eviction", it.Overhead.EvictionThreshold, corev1.ResourceEphemeralStorage, tt.evictStorage)
		})
	}
	t.Run("the input is not changed", func(t *testing.T) {
		it, orig := base(), base()
		shared := it.Capacity
		withKubelet(it, &awsv1.KubeletConfiguration{MaxPods: n(10)})
		if !shared.Pods().Equal(*orig.Capacity.Pods()) {
			t.Error("withKubelet wrote to the capacity it was given")
		}
	})
}
