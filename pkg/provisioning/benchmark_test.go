package provisioning

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// The workload of upstream Karpenter's scheduling benchmark, so the numbers
// compare: one NodePool with huge limits, 400 instance types, "diverse" pods.

func BenchmarkScheduling1(b *testing.B)     { benchmarkScheduling(b, diversePods(1)) }
func BenchmarkScheduling50(b *testing.B)    { benchmarkScheduling(b, diversePods(50)) }
func BenchmarkScheduling100(b *testing.B)   { benchmarkScheduling(b, diversePods(100)) }
func BenchmarkScheduling500(b *testing.B)   { benchmarkScheduling(b, diversePods(500)) }
func BenchmarkScheduling1000(b *testing.B)  { benchmarkScheduling(b, diversePods(1000)) }
func BenchmarkScheduling2000(b *testing.B)  { benchmarkScheduling(b, diversePods(2000)) }
func BenchmarkScheduling5000(b *testing.B)  { benchmarkScheduling(b, diversePods(5000)) }
func BenchmarkScheduling10000(b *testing.B) { benchmarkScheduling(b, diversePods(10000)) }
func BenchmarkScheduling20000(b *testing.B) { benchmarkScheduling(b, diversePods(20000)) }

// BenchmarkSchedulingPreferences is upstream's BenchmarkRespectPreferences.
func BenchmarkSchedulingPreferences(b *testing.B) {
	benchmarkScheduling(b, preferencePods(4000))
}

// BenchmarkSchedulingIgnorePreferences is upstream's
// BenchmarkIgnorePreferences: the same pods, PreferencePolicy Ignore.
func BenchmarkSchedulingIgnorePreferences(b *testing.B) {
	benchmarkScheduling(b, preferencePods(4000), func(s *Snapshot) { s.IgnorePreferences = true })
}

func benchmarkScheduling(b *testing.B, pods []*corev1.Pod, opts ...func(*Snapshot)) {
	snap := &Snapshot{
		NodePools:     []*v1.NodePool{benchNodePool()},
		InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": fakeInstanceTypes(400)},
		Pods:          pods,
	}
	for _, o := range opts {
		o(snap)
	}
	var res *Results
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		res = Solve(context.Background(), snap)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if n := len(res.Unschedulable); n > 0 {
		b.Fatalf("%d pods left unscheduled, first: %s", n, res.Unschedulable[0].Reason)
	}
	price := 0.0
	placed := 0
	for _, nc := range res.NewNodeClaims {
		price += nc.Price()
		placed += len(nc.Pods)
	}
	if placed != len(pods) {
		b.Fatalf("placed %d of %d pods", placed, len(pods))
	}
	b.ReportMetric(float64(len(pods))/(elapsed.Seconds()/float64(b.N)), "pods/sec")
	b.ReportMetric(float64(len(res.NewNodeClaims)), "nodes")
	b.ReportMetric(price, "usd/h")
}

func benchNodePool() *v1.NodePool {
	return &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
			}},
			Limits: v1.Limits{corev1.ResourceCPU: resource.MustParse("10000000"), corev1.ResourceMemory: resource.MustParse("10000000Gi")},
		},
	}
}

// fakeInstanceTypes: type i has i+1 vCPU, 2(i+1) GiB, 10(i+1) pods; spot in
// two zones, on-demand in three; price 0.1×vCPU + 0.1×memory bytes/1e9.
func fakeInstanceTypes(n int) []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for i := 0; i < n; i++ {
		cpu := int64(i + 1)
		mem := 2 * cpu * 1024 * 1024 * 1024
		price := 0.1*float64(cpu) + 0.1*float64(mem)/1e9
		var offerings cloudprovider.Offerings
		for _, z := range []string{"test-zone-1", "test-zone-2"} {
			offerings = append(offerings, &cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeSpot, Price: price, Available: true})
		}
		for _, z := range []string{"test-zone-1", "test-zone-2", "test-zone-3"} {
			offerings = append(offerings, &cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true})
		}
		name := fmt.Sprintf("fake-it-%d", i)
		out = append(out, &cloudprovider.InstanceType{
			Name: name,
			Requirements: scheduling.NewRequirements(
				scheduling.NewRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, name),
				scheduling.NewRequirement(v1.LabelArch, corev1.NodeSelectorOpIn, "amd64"),
				scheduling.NewRequirement(v1.LabelOS, corev1.NodeSelectorOpIn, "linux"),
				scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, "test-zone-1", "test-zone-2", "test-zone-3"),
				scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot, v1.CapacityTypeOnDemand),
			),
			Offerings: offerings,
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(10*cpu, resource.DecimalSI),
			},
			Overhead: cloudprovider.Overhead{KubeReserved: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("10Mi")}},
		})
	}
	return out
}

type podMaker struct {
	r *rand.Rand
	n int
}

func (m *podMaker) value() string { return []string{"a", "b", "c", "d", "e", "f", "g"}[m.r.Intn(7)] }

func (m *podMaker) cpu() resource.Quantity {
	return resource.MustParse(fmt.Sprintf("%dm", []int{100, 250, 500, 1000, 1500}[m.r.Intn(5)]))
}

func (m *podMaker) memory() resource.Quantity {
	return resource.MustParse(fmt.Sprintf("%dMi", []int{100, 256, 512, 1024, 2048, 4096}[m.r.Intn(6)]))
}

// requests draws one request shape: a cpu, then a memory.
func (m *podMaker) requests() corev1.ResourceList {
	cpu := m.cpu()
	return corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: m.memory()}
}

// pod is a pod of a newly drawn request shape.
func (m *podMaker) pod(labels map[string]string, mutate func(*corev1.Pod)) *corev1.Pod {
	return m.podWith(labels, m.requests(), mutate)
}

func (m *podMaker) podWith(labels map[string]string, requests corev1.ResourceList, mutate func(*corev1.Pod)) *corev1.Pod {
	m.n++
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", m.n), Namespace: "default", Labels: labels}}
	if mutate != nil {
		mutate(p)
	}
	p.Spec.Containers = []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: requests}}}
	return p
}

// diversePods: count/5 each of generic, zone spread, hostname spread,
// self pod-affinity on zone and hostname anti-affinity (app=nginx); the
// remainder generic. Seeded, so every run schedules the same pods.
func diversePods(count int) []*corev1.Pod {
	m := &podMaker{r: rand.New(rand.NewSource(42))}
	var pods []*corev1.Pod
	each := count / 5
	generic := func(n int) {
		for i := 0; i < n; i++ {
			pods = append(pods, m.pod(map[string]string{"my-label": m.value()}, nil))
		}
	}
	spread := func(n int, key string) {
		for i := 0; i < n; i++ {
			labels := map[string]string{"my-label": m.value()}
			sel := map[string]string{"my-label": m.value()}
			pods = append(pods, m.pod(labels, func(p *corev1.Pod) {
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: key,
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: sel}}}
			}))
		}
	}
	generic(each)
	spread(each, v1.LabelZone)
	spread(each, v1.LabelHostname)
	for i := 0; i < each; i++ {
		labels := map[string]string{"my-affininity": m.value()}
		pods = append(pods, m.pod(labels, func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, TopologyKey: v1.LabelZone}}}}
		}))
	}
	nginx := map[string]string{"app": "nginx"}
	for i := 0; i < each; i++ {
		pods = append(pods, m.pod(nginx, func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{LabelSelector: &metav1.LabelSelector{MatchLabels: nginx}, TopologyKey: v1.LabelHostname}}}}
		}))
	}
	generic(count - len(pods))
	return pods
}

// preferencePods: app=nginx pods that prefer test-zone-1 and prefer to keep
// away from each other by zone (weight 10, which three zones cannot meet)
// and by hostname (weight 1, which a node each meets). As upstream's
// makePreferencePods, every pod has the same requests, one draw of the
// seeded sizes: 100m cpu and 4096Mi memory (upstream draws once from its
// package-wide source, and gets these when the benchmark runs alone).
func preferencePods(count int) []*corev1.Pod {
	m := &podMaker{r: rand.New(rand.NewSource(42))}
	nginx := map[string]string{"app": "nginx"}
	requests := m.requests()
	var pods []*corev1.Pod
	for i := 0; i < count; i++ {
		pods = append(pods, m.podWith(nginx, requests.DeepCopy(), func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{
				NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
					{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
						{Key: v1.LabelZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"test-zone-1"}}}}}}},
				PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
					{Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: nginx}, TopologyKey: v1.LabelZone}},
					{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: nginx}, TopologyKey: v1.LabelHostname}},
				}},
			}
		}))
	}
	return pods
}

// TestPreferencePodsShape: the preference workload has the one request
// shape its comment names.
func TestPreferencePodsShape(t *testing.T) {
	for _, p := range preferencePods(50) {
		r := p.Spec.Containers[0].Resources.Requests
		if r.Cpu().String() != "100m" || r.Memory().String() != "4Gi" {
			t.Fatalf("%s requests %s cpu, %s memory; want 100m and 4Gi", p.Name, r.Cpu(), r.Memory())
		}
	}
}

// BenchmarkSchedulingKarpenter5000 plans the diverse pods with upstream's
// choices only (Decisions karpenter).
func BenchmarkSchedulingKarpenter5000(b *testing.B) {
	benchmarkScheduling(b, diversePods(5000), func(s *Snapshot) { s.Policy.Decisions = DecisionsKarpenter })
}

func BenchmarkSchedulingKarpenter20000(b *testing.B) {
	benchmarkScheduling(b, diversePods(20000), func(s *Snapshot) { s.Policy.Decisions = DecisionsKarpenter })
}
