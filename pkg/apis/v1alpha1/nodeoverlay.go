package v1alpha1

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeOverlay changes, for the scheduling simulation only, what Joiner
// believes of the instance types its requirements select: their price (a
// negotiated discount, a licence fee) and extended resources their nodes
// will have (a device plugin's, say). It changes nothing the cloud does.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:path=nodeoverlays,scope=Cluster,categories=karpenter,shortName=overlays
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1,description=""
// +kubebuilder:subresource:status
type NodeOverlay struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:message="cannot set both 'price' and 'priceAdjustment'",rule="!has(self.price) || !has(self.priceAdjustment)"
	Spec   NodeOverlaySpec   `json:"spec"`
	Status NodeOverlayStatus `json:"status,omitempty"`
}

// NodeOverlaySpec selects instance types and says what to believe of them.
type NodeOverlaySpec struct {
	// Requirements select the instance types (and, through zone and
	// capacity type, the offerings) the overlay applies to: well-known
	// labels, karpenter.sh/nodepool, and a NodePool's template labels.
	// +kubebuilder:validation:XValidation:message="requirements with operator 'NotIn' must have a value defined",rule="self.all(x, x.operator == 'NotIn' ? x.values.size() != 0 : true)"
	// +kubebuilder:validation:XValidation:message="requirements with operator 'In' must have a value defined",rule="self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)"
	// +kubebuilder:validation:XValidation:message="requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer value",rule="self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)"
	// +kubebuilder:validation:MaxItems:=100
	// +required
	Requirements []Requirement `json:"requirements"`
	// PriceAdjustment changes the selected offerings' price: by an amount
	// ("-0.5", "+1.2") or a percentage ("+10%", "-15%", down to "-100%").
	// A price below zero is zero.
	// +kubebuilder:validation:Pattern=`^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$`
	// +optional
	PriceAdjustment *string `json:"priceAdjustment,omitempty"`
	// Price replaces the selected offerings' price (USD per hour).
	// +kubebuilder:validation:Pattern=`^\d+(\.\d+)?$`
	// +optional
	Price *string `json:"price,omitempty"`
	// Capacity adds extended resources to the selected instance types; it
	// cannot change cpu, memory, ephemeral-storage or pods.
	// +kubebuilder:validation:XValidation:message="invalid resource restricted",rule="self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))"
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Weight orders overlays: where several set the same offering's price
	// or the same resource, the highest weight's value holds. Unset is 0.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=10000
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// Requirement is a node selector requirement on a label an instance type
// or NodePool sets.
type Requirement struct {
	// Key is the label key the requirement applies to.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// +kubebuilder:validation:XValidation:message="label domain \"karpenter.sh\" is restricted",rule="self in [\"karpenter.sh/capacity-type\", \"karpenter.sh/nodepool\"] || !self.find(\"^([^/]+)\").endsWith(\"karpenter.sh\")"
	// +kubebuilder:validation:XValidation:message="label \"kubernetes.io/hostname\" is restricted",rule="self != \"kubernetes.io/hostname\""
	// +kubebuilder:validation:XValidation:message="label domain \"karpenter.k8s.aws\" is restricted",rule="self in [\"karpenter.k8s.aws/instance-tenancy\", \"karpenter.k8s.aws/capacity-reservation-type\", \"karpenter.k8s.aws/capacity-reservation-id\", \"karpenter.k8s.aws/capacity-reservation-interruptible\", \"karpenter.k8s.aws/ec2nodeclass\", \"karpenter.k8s.aws/instance-encryption-in-transit-supported\", \"karpenter.k8s.aws/nitro-sandbox\", \"karpenter.k8s.aws/instance-category\", \"karpenter.k8s.aws/instance-hypervisor\", \"karpenter.k8s.aws/instance-family\", \"karpenter.k8s.aws/instance-generation\", \"karpenter.k8s.aws/instance-local-nvme\", \"karpenter.k8s.aws/instance-size\", \"karpenter.k8s.aws/instance-cpu\", \"karpenter.k8s.aws/instance-cpu-manufacturer\", \"karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz\", \"karpenter.k8s.aws/instance-memory\", \"karpenter.k8s.aws/instance-ebs-bandwidth\", \"karpenter.k8s.aws/instance-network-bandwidth\", \"karpenter.k8s.aws/instance-gpu-name\", \"karpenter.k8s.aws/instance-gpu-manufacturer\", \"karpenter.k8s.aws/instance-gpu-count\", \"karpenter.k8s.aws/instance-gpu-memory\", \"karpenter.k8s.aws/instance-accelerator-name\", \"karpenter.k8s.aws/instance-accelerator-manufacturer\", \"karpenter.k8s.aws/instance-accelerator-count\", \"karpenter.k8s.aws/instance-capability-flex\", \"karpenter.k8s.aws/placement-group-id\", \"karpenter.k8s.aws/placement-group-partition\"] || !self.find(\"^([^/]+)\").endsWith(\"karpenter.k8s.aws\")"
	// +required
	Key string `json:"key"`
	// Operator relates the key to the values.
	// +kubebuilder:validation:Enum:={Gte,Lte,In,NotIn,Exists,DoesNotExist,Gt,Lt}
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values of the key: one or more for In and NotIn, none for Exists and
	// DoesNotExist, one non-negative integer for Gt, Lt, Gte and Lte.
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// NodeSelectorRequirement is the requirement as Kubernetes spells it.
func (r Requirement) NodeSelectorRequirement() corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values}
}

// NodeOverlayStatus is what the controller found of the overlay.
type NodeOverlayStatus struct {
	// Conditions: ValidationSucceeded (False with reason Conflict when an
	// overlay of the same weight sets the same price or resource, or
	// RuntimeValidation when a requirement or resource is not allowed),
	// and Ready.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeOverlayList is a list of NodeOverlays.
//
// +kubebuilder:object:root=true
type NodeOverlayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeOverlay `json:"items"`
}

// Condition types and reasons of a NodeOverlay's status, as upstream's.
const (
	ConditionValidationSucceeded = "ValidationSucceeded"
	ConditionReady               = "Ready"
	ReasonConflict               = "Conflict"
	ReasonRuntimeValidation      = "RuntimeValidation"
)

// AppliedAnnotationKey is the annotation Joiner puts on a NodeClaim whose
// instance types NodeOverlays changed: the overlays' names, comma-separated,
// highest weight first.
const AppliedAnnotationKey = "joiner.sh/nodeoverlays-applied"

// WeightOf is the overlay's weight, 0 when unset.
func (o *NodeOverlay) WeightOf() int32 {
	if o.Spec.Weight == nil {
		return 0
	}
	return *o.Spec.Weight
}

// OrderByWeight sorts overlays as they take precedence: the highest
// weight first, and among equal weights the name later in the alphabet
// first (upstream's order).
func OrderByWeight(os []*NodeOverlay) {
	sort.SliceStable(os, func(i, j int) bool {
		wi, wj := os[i].WeightOf(), os[j].WeightOf()
		if wi != wj {
			return wi > wj
		}
		return os[i].Name > os[j].Name
	})
}
