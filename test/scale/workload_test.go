//go:build scale

package scale

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// The workload of issue 25: one NodePool, four Deployments.
const (
	poolName  = "scale"
	namespace = "scale"
	// revLabel is the NodePool template's label the drift phase changes.
	revLabel = "scale-rev"
)

// nodePool is on-demand instances of categories c, m and r, generation
// above 4 (the kwok provider's instance types carry the EC2 catalog's
// karpenter.k8s.aws labels), consolidated when empty or underutilized
// after 1 minute, within the default budget of 10 % of the nodes.
func nodePool() *v1.NodePool {
	np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: poolName}}
	np.Spec.Template.Labels = map[string]string{revLabel: "a"}
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
		{Key: awsv1.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
		{Key: awsv1.LabelInstanceGeneration, Operator: corev1.NodeSelectorOpGt, Values: []string{"4"}},
	}
	np.Spec.Disruption = v1.Disruption{
		ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
		ConsolidateAfter:    v1.MustParseNillableDuration("1m"),
		Budgets:             []v1.Budget{{Nodes: "10%"}},
	}
	return np
}

// size is one Deployment's pods' requests, and whether they spread over
// zones.
type size struct {
	name, cpu, mem string
	spread         bool
}

// sizes: 100m/128Mi, 500m/512Mi, 1/2Gi, 2/4Gi; the second and fourth
// spread over topology.kubernetes.io/zone (maxSkew 1, DoNotSchedule).
var sizes = []size{
	{"xs", "100m", "128Mi", false},
	{"s", "500m", "512Mi", true},
	{"m", "1", "2Gi", false},
	{"l", "2", "4Gi", true},
}

// deployment is one size's Deployment, at 0 replicas.
func deployment(s size) *appsv1.Deployment {
	labels := map[string]string{"app": s.name}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s.cpu), corev1.ResourceMemory: resource.MustParse(s.mem)}}}}}
	if s.spread {
		spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}}
	}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: namespace}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}
}
