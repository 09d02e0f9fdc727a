package provisioning

import (
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
)

// StaticPlan is one NodeClaim a static NodePool (spec.replicas) launches
// to reach its replica count: the pool's requirements, every type they
// allow cheapest first, no pods, the DaemonSet overhead of the cheapest
// type as its requests. Nil when no type can be launched.
func StaticPlan(np *v1.NodePool, its []*cloudprovider.InstanceType, daemonSets []*corev1.Pod) *NodeClaimPlan {
	d := newDims()
	for _, it := range its {
		d.addAll(it.Capacity)
	}
	p := newPoolInfo(np, its, daemonSets, d)
	reqs := p.reqs.Copy()
	plan := &NodeClaimPlan{NodePool: np, Requirements: reqs}
	for _, i := range p.priceOrder(reqs.Get(v1.LabelZone), reqs.Get(v1.LabelCapacityType)) {
		if plan.InstanceTypes == nil {
			plan.Requests = d.list(p.its[i].daemon)
		}
		plan.InstanceTypes = append(plan.InstanceTypes, p.its[i].it)
	}
	if len(plan.InstanceTypes) == 0 {
		return nil
	}
	return plan
}
