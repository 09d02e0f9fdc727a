package v1

import corev1 "k8s.io/api/core/v1"

// Well-known labels, annotations and taints, spelled as upstream Karpenter
// spells them so existing selectors, dashboards and alerts keep working.
const (
	LabelNodePool        = Group + "/nodepool"
	LabelCapacityType    = Group + "/capacity-type"
	LabelNodeInitialized = Group + "/initialized"
	LabelNodeRegistered  = Group + "/registered"

	LabelInstanceType = corev1.LabelInstanceTypeStable
	LabelZone         = corev1.LabelTopologyZone
	LabelRegion       = corev1.LabelTopologyRegion
	LabelArch         = corev1.LabelArchStable
	LabelOS           = corev1.LabelOSStable
	LabelHostname     = corev1.LabelHostname

	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"

	AnnotationDoNotDisrupt = Group + "/do-not-disrupt"
	// AnnotationDisruptionCost on a pod tells consolidation how costly it
	// is to evict: a 32-bit integer (see disruption's eviction cost).
	AnnotationDisruptionCost = Group + "/disruption-cost"
	AnnotationNodePoolHash   = Group + "/nodepool-hash"
	// AnnotationDeprovisioningPriority on a static NodePool's NodeClaim:
	// on a scale-down, claims of a higher value go first (an integer).
	AnnotationDeprovisioningPriority = Group + "/deprovisioning-priority"
	// AnnotationMinValuesRelaxed marks a NodeClaim whose minValues
	// MinValuesPolicy BestEffort lowered ("true").
	AnnotationMinValuesRelaxed = Group + "/nodeclaim-min-values-relaxed"
	// AnnotationDRADrivers lists, comma-separated, the DRA drivers whose
	// devices the NodeClaim's pods were planned onto: it is not
	// Initialized until each has published a complete pool for its node.
	AnnotationDRADrivers = Group + "/requested-dra-drivers"
	// AnnotationNodePoolHashVersion names the hashing scheme of
	// AnnotationNodePoolHash: hashes of different versions do not compare.
	AnnotationNodePoolHashVersion = Group + "/nodepool-hash-version"

	TerminationFinalizer = Group + "/termination"
)

// DisruptedTaint marks a node that is being disrupted: nothing new schedules to it.
var DisruptedTaint = corev1.Taint{Key: Group + "/disrupted", Effect: corev1.TaintEffectNoSchedule}

// UnregisteredTaint keeps pods off a node until Joiner has registered it.
var UnregisteredTaint = corev1.Taint{Key: Group + "/unregistered", Effect: corev1.TaintEffectNoExecute}
