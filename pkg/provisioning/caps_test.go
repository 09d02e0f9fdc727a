package provisioning

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// priced is an instance type whose on-demand price per core is perCore.
func priced(family string, cpu int64, perCore float64, extra ...func(*cloudprovider.InstanceType)) *cloudprovider.InstanceType {
	t := it(family, cpu, extra...)
	for _, o := range t.Offerings {
		if o.CapacityType == v1.CapacityTypeOnDemand {
			o.Price = perCore * float64(cpu)
		}
	}
	return t
}

// As on EC2: the best price per core stops at 64 cores (g.64x), and only a
// dearer family is larger. A batch of 600 mixed pods (900 cores) fills
// first-fit claims up to the largest type; with caps Joiner's way plans it
// on the best-priced size, and is cheaper than both its uncapped plan and
// upstream's.
func TestClaimCapsBuyTheBestPricedSize(t *testing.T) {
	its := []*cloudprovider.InstanceType{priced("g", 16, 0.034), priced("g", 32, 0.034), priced("g", 64, 0.034),
		priced("x", 96, 0.047), priced("x", 192, 0.047), priced("x", 384, 0.047)}
	var pods []*corev1.Pod
	for _, size := range []struct{ cpu, mem string }{{"100m", "128Mi"}, {"500m", "512Mi"}, {"1", "2Gi"}, {"2", "4Gi"}} {
		pods = append(pods, times(250, func() *corev1.Pod { return pod(size.cpu, size.mem) })...)
	}
	pools := []*v1.NodePool{pool("general", requirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand))}
	types := func(res *Results) string {
		n := map[string]int{}
		for _, nc := range res.NewNodeClaims {
			n[nc.InstanceTypes[0].Name]++
		}
		return fmt.Sprint(n)
	}

	joiner := solve(t, pools, its, pods)
	uncapped := solve(t, pools, its, pods, func(s *Snapshot) { s.NoClaimCaps = true })
	upstream := solve(t, pools, its, pods, func(s *Snapshot) { s.Policy.Decisions = DecisionsKarpenter })
	for _, res := range []*Results{joiner, uncapped, upstream} {
		requireAllPlaced(t, res)
	}
	t.Logf("joiner %s $%.3f/h; uncapped %s $%.3f/h; upstream %s $%.3f/h",
		types(joiner), joiner.Price(), types(uncapped), uncapped.Price(), types(upstream), upstream.Price())
	for _, nc := range joiner.NewNodeClaims {
		if name := nc.InstanceTypes[0].Name; name[0] != 'g' {
			t.Errorf("Joiner's plan has a claim whose cheapest type is %s, not of the best-priced family", name)
		}
	}
	if joiner.Price() >= uncapped.Price() || joiner.Price() > upstream.Price() {
		t.Errorf("Joiner's plan costs $%.3f/h: want less than uncapped ($%.3f/h) and no more than upstream's ($%.3f/h)",
			joiner.Price(), uncapped.Price(), upstream.Price())
	}
	// 900 cores at $0.034 fill 15 g.64x ($32.64/h) as a fluid; first fit
	// wastes a little at the edges.
	if joiner.Price() > 1.05*0.034*64*15 {
		t.Errorf("Joiner's plan costs $%.3f/h, over 5 %% above the best-priced fluid $%.2f/h", joiner.Price(), 0.034*64*15)
	}
}

// A pod larger than the cap still gets a claim of its own, and a batch
// that fits the best-priced size is planned as before.
func TestClaimCapsKeepLargePodsAndSmallBatches(t *testing.T) {
	its := []*cloudprovider.InstanceType{priced("g", 16, 0.034), priced("g", 64, 0.034), priced("x", 192, 0.047)}
	pools := []*v1.NodePool{pool("general", requirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand))}
	big := pod("150", "100Gi")
	res := solve(t, pools, its, append([]*corev1.Pod{big}, times(100, func() *corev1.Pod { return pod("1", "1Gi") })...))
	requireAllPlaced(t, res)
	for _, nc := range res.NewNodeClaims {
		for _, p := range nc.Pods {
			if p == big && nc.InstanceTypes[0].Name != "x.192x" {
				t.Errorf("the 150-core pod went to a claim of %s, want x.192x", nc.InstanceTypes[0].Name)
			}
		}
	}
	small := solve(t, pools, its, times(10, func() *corev1.Pod { return pod("1", "1Gi") }))
	if len(small.NewNodeClaims) != 1 || small.NewNodeClaims[0].InstanceTypes[0].Name != "g.16x" {
		t.Errorf("10 one-core pods: %d claims, want one of g.16x", len(small.NewNodeClaims))
	}
}

// The scale benchmark's batch (test/scale): 250 pods each of four sizes,
// two of them asking 2 GiB a core, on types with 1.75 GiB a core. Largest
// first fills each claim with the big pods until its memory runs out, a
// tenth of its cores idle; mixed, the claims are full in both resources
// and the batch needs a whole node fewer.
func TestMixedOrderFillsEveryResource(t *testing.T) {
	var its []*cloudprovider.InstanceType
	for _, cpu := range []int64{2, 4, 8, 16, 32, 48} {
		its = append(its, priced("c", cpu, 0.034, func(it *cloudprovider.InstanceType) {
			it.Capacity[corev1.ResourceMemory] = *resource.NewQuantity(cpu*7<<28, resource.BinarySI) // 1.75 GiB a core
		}))
	}
	var pods []*corev1.Pod
	for _, size := range []struct{ cpu, mem string }{{"100m", "128Mi"}, {"500m", "512Mi"}, {"1", "2Gi"}, {"2", "4Gi"}} {
		pods = append(pods, times(250, func() *corev1.Pod { return pod(size.cpu, size.mem) })...)
	}
	pools := []*v1.NodePool{pool("general", requirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand))}
	res := solve(t, pools, its, pods)
	requireAllPlaced(t, res)
	// 1,656.25 GiB at 84 GiB a c.48x: 19.7 nodes' worth, $32.15/h as a fluid.
	fluid := 1656.25 / 84 * 48 * 0.034
	t.Logf("%d claims, $%.3f/h (fluid $%.3f/h)", len(res.NewNodeClaims), res.Price(), fluid)
	if len(res.NewNodeClaims) > 20 || res.Price() > 1.02*fluid {
		t.Errorf("%d claims at $%.3f/h: want at most 20, within 2 %% of the fluid $%.3f/h", len(res.NewNodeClaims), res.Price(), fluid)
	}
}

func TestMixedPodOrder(t *testing.T) {
	big, small, own := pod("2", "4Gi"), pod("100m", "128Mi"), pod("1", "1Gi")
	classOf := map[*corev1.Pod]*podClass{}
	var pods []*corev1.Pod
	add := func(n int, p *corev1.Pod, ownNode bool) {
		c := &podClass{requests: vec{p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue(), p.Spec.Containers[0].Resources.Requests.Memory().Value()}, ownNode: ownNode}
		for i := 0; i < n; i++ {
			q := p.DeepCopy()
			q.Name = fmt.Sprintf("%s-%d", p.Name, i)
			classOf[q] = c
			pods = append(pods, q)
		}
	}
	add(1, own, true)
	add(2, big, false)
	add(4, small, false)
	got := []string{}
	for _, p := range mixedPodOrder(pods, classOf) {
		got = append(got, p.Name)
	}
	// own first; then big at 1/4 and 3/4, small at 1/8, 3/8, 5/8, 7/8.
	want := fmt.Sprint([]string{own.Name + "-0", small.Name + "-0", big.Name + "-0", small.Name + "-1", small.Name + "-2", big.Name + "-1", small.Name + "-3"})
	if fmt.Sprint(got) != want {
		t.Errorf("order %v, want %s", got, want)
	}
	if !mixable(pods, classOf) || mixable(pods[:3], classOf) {
		t.Error("mixable: want true for two sizes besides the own-node pod, false for one")
	}
}
