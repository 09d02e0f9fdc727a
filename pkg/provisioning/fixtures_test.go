package provisioning

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

var zones = []string{"zone-a", "zone-b", "zone-c"}

// it builds an instance type: family-size with cpu cores and 4 GiB per
// core, priced per core (spot at 30 %), offered in every zone.
func it(family string, cpu int64, extra ...func(*cloudprovider.InstanceType)) *cloudprovider.InstanceType {
	name := fmt.Sprintf("%s.%dx", family, cpu)
	price := 0.05 * float64(cpu)
	var offerings cloudprovider.Offerings
	for _, z := range zones {
		offerings = append(offerings,
			&cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: price, Available: true},
			&cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeSpot, Price: price * 0.3, Available: true})
	}
	t := &cloudprovider.InstanceType{
		Name: name,
		Requirements: scheduling.NewRequirements(
			scheduling.NewRequirement(v1.LabelInstanceType, corev1.NodeSelectorOpIn, name),
			scheduling.NewRequirement("family", corev1.NodeSelectorOpIn, family),
			scheduling.NewRequirement("cpu", corev1.NodeSelectorOpIn, strconv.FormatInt(cpu, 10)),
			scheduling.NewRequirement(v1.LabelArch, corev1.NodeSelectorOpIn, "amd64"),
			scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, zones...),
			scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, v1.CapacityTypeSpot, v1.CapacityTypeOnDemand),
		),
		Offerings: offerings,
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(4*cpu<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
		},
	}
	for _, f := range extra {
		f(t)
	}
	return t
}

func withGPU(n int64) func(*cloudprovider.InstanceType) {
	return func(t *cloudprovider.InstanceType) {
		t.Capacity["nvidia.com/gpu"] = *resource.NewQuantity(n, resource.DecimalSI)
	}
}

func standardTypes() []*cloudprovider.InstanceType {
	return []*cloudprovider.InstanceType{it("m", 2), it("m", 4), it("m", 8), it("c", 2), it("c", 4), it("r", 16)}
}

type poolOpt func(*v1.NodePool)

func pool(name string, opts ...poolOpt) *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{
		Spec: v1.NodeClaimTemplateSpec{NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}}}}}
	for _, o := range opts {
		o(np)
	}
	return np
}

func weight(w int32) poolOpt { return func(np *v1.NodePool) { np.Spec.Weight = &w } }

func taint(key, value string, effect corev1.TaintEffect) poolOpt {
	return func(np *v1.NodePool) {
		np.Spec.Template.Spec.Taints = append(np.Spec.Template.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	}
}

func startupTaint(key string) poolOpt {
	return func(np *v1.NodePool) {
		np.Spec.Template.Spec.StartupTaints = append(np.Spec.Template.Spec.StartupTaints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
	}
}

func requirement(key string, op corev1.NodeSelectorOperator, values ...string) poolOpt {
	return func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values})
	}
}

func minValues(key string, n int, values ...string) poolOpt {
	return func(np *v1.NodePool) {
		np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values, MinValues: &n})
	}
}

func limits(l corev1.ResourceList) poolOpt {
	return func(np *v1.NodePool) { np.Spec.Limits = v1.Limits(l) }
}

type podOpt func(*corev1.Pod)

var podSeq int

func pod(cpu, mem string, opts ...podOpt) *corev1.Pod {
	podSeq++
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", podSeq), Namespace: "default", Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func label(k, v string) podOpt { return func(p *corev1.Pod) { p.Labels[k] = v } }

func tolerate(key string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists})
	}
}

func nodeSelector(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[k] = v
	}
}

func gpu(n string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse(n)
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
	}
}

func affinity(a *corev1.Affinity) podOpt { return func(p *corev1.Pod) { p.Spec.Affinity = a } }

func spread(key string, maxSkew int32, opts ...func(*corev1.TopologySpreadConstraint)) podOpt {
	return func(p *corev1.Pod) {
		tsc := corev1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": p.Labels["app"]}}}
		for _, o := range opts {
			o(&tsc)
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, tsc)
	}
}

func hostPortOpt(port int32) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port})
	}
}

func times(n int, f func() *corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		out = append(out, f())
	}
	return out
}

func solve(t *testing.T, pools []*v1.NodePool, its []*cloudprovider.InstanceType, pods []*corev1.Pod, mutate ...func(*Snapshot)) *Results {
	t.Helper()
	snap := &Snapshot{NodePools: pools, InstanceTypes: map[string][]*cloudprovider.InstanceType{}, Pods: pods}
	for _, p := range pools {
		snap.InstanceTypes[p.Name] = its
	}
	for _, m := range mutate {
		m(snap)
	}
	return Solve(context.Background(), snap)
}

// zoneOf is the zone a plan is pinned to ("" when not pinned).
func zoneOf(p *NodeClaimPlan) string {
	if v := p.Requirements.Get(v1.LabelZone).Values(); len(v) == 1 {
		return v[0]
	}
	return ""
}

func zoneCounts(res *Results) string {
	counts := map[string]int{}
	for _, nc := range res.NewNodeClaims {
		counts[zoneOf(nc)] += len(nc.Pods)
	}
	var parts []string
	for z, n := range counts {
		parts = append(parts, fmt.Sprintf("%s=%d", z, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func requireAllPlaced(t *testing.T, res *Results) {
	t.Helper()
	for _, e := range res.Unschedulable {
		t.Errorf("pod %s unschedulable: %s", e.Pod.Name, e.Reason)
	}
}

// readyNode is an existing node with cpu cores and 4 GiB per core.
func readyNode(name, zone string, cpu int64, pods ...*corev1.Pod) *Node {
	for _, p := range pods {
		p.Spec.NodeName = name
	}
	return &Node{Name: name, Labels: map[string]string{v1.LabelHostname: name, v1.LabelZone: zone},
		Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(4*cpu<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
		}, Pods: pods}
}
