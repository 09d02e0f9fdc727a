package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaimSpec is the request for one node: what it must satisfy and what it
// must hold.
type NodeClaimSpec struct {
	// Taints put on the node.
	// +kubebuilder:validation:items:XValidation:message="taint effect must be one of 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",rule="self.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute']"
	// +listType=atomic
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints put on the node at start, removed by something else later.
	// +kubebuilder:validation:items:XValidation:message="taint effect must be one of 'NoSchedule', 'PreferNoSchedule', 'NoExecute'",rule="self.effect in ['NoSchedule', 'PreferNoSchedule', 'NoExecute']"
	// +listType=atomic
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements the node's labels must satisfy.
	// +kubebuilder:validation:XValidation:message="requirements with operator 'In' must have a value defined",rule="self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)"
	// +kubebuilder:validation:XValidation:message="requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value",rule="self.all(x, (x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte') ? (x.values.size() == 1 && x.values[0].matches('^[0-9]+$')) : true)"
	// +kubebuilder:validation:XValidation:message="requirements with 'minValues' must have at least that many values specified in the 'values' field",rule="self.all(x, (x.operator == 'In' && has(x.minValues)) ? x.values.size() >= x.minValues : true)"
	// +kubebuilder:validation:MaxItems:=100
	// +listType=atomic
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// Resources the node must be able to hold.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`
	// NodeClassRef names the provider configuration.
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod bounds how long draining the node may take.
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is the age at which the node is replaced; "Never" disables it.
	// +kubebuilder:default:="720h"
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +kubebuilder:validation:Schemaless
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitempty"`
}

// ResourceRequirements are the resources a NodeClaim must provide.
type ResourceRequirements struct {
	// Requests is the minimum the node must be able to allocate.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// NodeClaimStatus is what the controller observed of a NodeClaim.
type NodeClaimStatus struct {
	// NodeName is the name of the Node that registered for this claim.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ProviderID is the cloud's identifier of the instance.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// ImageID is the image the instance was launched from.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// Capacity is the instance's full capacity.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is capacity less system overhead.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Conditions: Launched, Registered, Initialized, Drifted, Consolidatable,
	// Disrupted, Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []Condition `json:"conditions,omitempty"`
	// LastPodEventTime is when a pod was last scheduled to or removed from the
	// node; consolidateAfter counts from it.
	// +optional
	LastPodEventTime metav1.Time `json:"lastPodEventTime,omitempty"`
}

// Condition is a status condition as upstream's NodeClaim CRD takes it: only
// type, status and lastTransitionTime are required and the reason may be
// empty, so conditions written by older Karpenter versions still load.
type Condition struct {
	// Type of the condition, CamelCase or foo.example.com/CamelCase.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	// +required
	Type string `json:"type"`
	// Status is True, False or Unknown.
	// +kubebuilder:validation:Enum=True;False;Unknown
	// +required
	Status metav1.ConditionStatus `json:"status"`
	// ObservedGeneration is the generation the condition was set for.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastTransitionTime is when the status last changed.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +required
	LastTransitionTime metav1.Time `json:"lastTransitionTime"`
	// Reason is a CamelCase identifier of the last transition's cause.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^([A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?|)$`
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message is a human-readable account of the transition.
	// +kubebuilder:validation:MaxLength=32768
	// +optional
	Message string `json:"message,omitempty"`
}

// NodeClaim is one node Joiner launched (or is launching) for a NodePool.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodeclaims,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".metadata.labels.node\\.kubernetes\\.io/instance-type"
// +kubebuilder:printcolumn:name="Capacity",type="string",JSONPath=".metadata.labels.karpenter\\.sh/capacity-type"
// +kubebuilder:printcolumn:name="Zone",type="string",JSONPath=".metadata.labels.topology\\.kubernetes\\.io/zone"
// +kubebuilder:printcolumn:name="Node",type="string",JSONPath=".status.nodeName"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="ImageID",type="string",JSONPath=".status.imageID",priority=1
// +kubebuilder:printcolumn:name="ID",type="string",JSONPath=".status.providerID",priority=1
// +kubebuilder:printcolumn:name="NodePool",type="string",JSONPath=".metadata.labels.karpenter\\.sh/nodepool",priority=1
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.nodeClassRef.name",priority=1
// +kubebuilder:printcolumn:name="Drifted",type="string",JSONPath=".status.conditions[?(@.type==\"Drifted\")].status",priority=1
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable"
	// +required
	Spec   NodeClaimSpec   `json:"spec"`
	Status NodeClaimStatus `json:"status,omitempty"`
}

// NodeClaimList is a list of NodeClaims.
// +kubebuilder:object:root=true
type NodeClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeClaim `json:"items"`
}

// NodeClaim condition types.
const (
	ConditionLaunched       = "Launched"
	ConditionRegistered     = "Registered"
	ConditionInitialized    = "Initialized"
	ConditionDrifted        = "Drifted"
	ConditionConsolidatable = "Consolidatable"
	ConditionDisrupted      = "Disrupted"
	ConditionReady          = "Ready"
)
