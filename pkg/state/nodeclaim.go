package state

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"strings"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/disruption"
	"github.com/joiner-autoscaler/joiner/pkg/provisioning"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// NewNodeClaim is the NodeClaim a host creates for a provisioning plan, as
// upstream builds it from its NodePool: the template's labels and one for
// every requirement the plan pins to a single value, the NodePool's hash
// (for drift), the plan's requirements with the instance types it chose,
// and the template's taints, startup taints, node class, expiry and
// termination grace period. name is the claim's name ("" to leave it to
// generateName); now is its creation time as the host's clock gives it.
func NewNodeClaim(plan *provisioning.NodeClaimPlan, name string, now metav1.Time) *v1.NodeClaim {
	np := plan.NodePool
	nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: now,
		Labels:      nodeClaimLabels(np, plan.Requirements),
		Annotations: map[string]string{v1.AnnotationNodePoolHash: disruption.NodePoolHash(np)}}}
	if name == "" {
		nc.GenerateName = np.Name + "-"
	}
	if v, ok := np.Annotations[v1.AnnotationNodePoolHashVersion]; ok {
		nc.Annotations[v1.AnnotationNodePoolHashVersion] = v
	}
	if plan.MinValuesRelaxed {
		nc.Annotations[v1.AnnotationMinValuesRelaxed] = "true"
	}
	if len(plan.DRADrivers) > 0 {
		nc.Annotations[v1.AnnotationDRADrivers] = strings.Join(plan.DRADrivers, ",")
	}
	yes := true
	nc.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodePool", Name: np.Name, UID: np.UID, BlockOwnerDeletion: &yes}}
	t := np.Spec.Template.Spec
	nc.Spec.Requirements = plan.NodeClaimRequirements().NodeSelectorRequirements()
	nc.Spec.NodeClassRef = t.NodeClassRef
	nc.Spec.Taints = t.Taints
	nc.Spec.StartupTaints = t.StartupTaints
	nc.Spec.ExpireAfter = t.ExpireAfter
	nc.Spec.TerminationGracePeriod = t.TerminationGracePeriod
	nc.Spec.Resources.Requests = plan.Requests
	return nc
}

// nodeClaimLabels are the labels a NodeClaim (and so its Node) carries
// before the cloud adds its instance type's: the NodePool template's, and
// one for every requirement the scheduled claim pins to a single value — a
// pool allowing capacity-spread In [2,3,4,5] whose claim took a pod that
// selects "3" launches a node labelled 3, as upstream Karpenter does.
func nodeClaimLabels(np *v1.NodePool, reqs scheduling.Requirements) map[string]string {
	out := reqs.Labels()
	delete(out, v1.LabelHostname)
	for k, v := range np.Spec.Template.Labels {
		out[k] = v
	}
	out[v1.LabelNodePool] = np.Name
	return out
}
