package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CapacityBuffer is spare capacity kept ready for pods that are not there
// yet: an autoscaler provisions room for its virtual pods — chunks shaped
// by a PodTemplate or by a workload's pod template — which take part in
// provisioning and consolidation and never bind.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=capacitybuffers,scope=Namespaced,shortName=cb,categories=autoscaling
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Strategy",type="string",JSONPath=".spec.provisioningStrategy",description="The strategy to be used."
// +kubebuilder:printcolumn:name="PodTemplate",type="string",JSONPath=".status.podTemplateRef.name",description="The name of the PodTemplate used."
// +kubebuilder:printcolumn:name="Replicas",type="integer",JSONPath=".status.replicas",description="The actual number of buffer chunks."
// +kubebuilder:printcolumn:name="ConditionsType",type="string",JSONPath=".status.conditions[*].type",description="List of all condition types."
// +kubebuilder:printcolumn:name="ConditionsStatus",type="string",JSONPath=".status.conditions[*].status",description="List of all condition statuses."
// +kubebuilder:printcolumn:name="ConditionsReason",type="string",JSONPath=".status.conditions[*].reason",description="List of all condition reasons."
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="The age of the CapacityBuffer."
type CapacityBuffer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// spec defines the desired characteristics of the buffer.
	// +required
	Spec CapacityBufferSpec `json:"spec"`
	// status represents the current state of the buffer and its readiness for autoprovisioning.
	// +optional
	Status CapacityBufferStatus `json:"status,omitempty"`
}

// Limits caps the buffer's chunks by their summed requests.
type Limits corev1.ResourceList

// LocalObjectRef is a reference to an object in the same namespace.
type LocalObjectRef struct {
	// name of the referent.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ScalableRef is a reference to an object with a scale subresource.
type ScalableRef struct {
	// apiGroup is the API group of the referent.
	// Empty string for the core API group.
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`
	// kind is the kind of the referent.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
	// name is the name of the referent.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// CapacityBufferSpec defines the desired state of CapacityBuffer.
// +kubebuilder:validation:XValidation:rule="!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)",message="If podTemplateRef is set, replicas or limits must also be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.podTemplateRef) && has(self.scalableRef))",message="You must define either PodTemplateRef or ScalableRef, but not both"
type CapacityBufferSpec struct {
	// provisioningStrategy defines how the buffer is utilized.
	// "buffer.x-k8s.io/active-capacity" is the default strategy, where the buffer actively scales up the cluster by creating placeholder pods.
	// +default="buffer.x-k8s.io/active-capacity"
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
	// podTemplateRef is a reference to a PodTemplate resource in the same namespace
	// that declares the shape of a single chunk of the buffer.
	// Exactly one of `podTemplateRef`, `scalableRef` should be specified.
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`
	// scalableRef is a reference to a workload (Deployment, StatefulSet or
	// ReplicaSet) whose pod template shapes a chunk and whose replicas
	// `percentage` is taken of.
	// Exactly one of `podTemplateRef`, `scalableRef` should be specified.
	// +optional
	ScalableRef *ScalableRef `json:"scalableRef,omitempty"`
	// replicas defines the desired number of buffer chunks to provision.
	// If both replicas and percentage are set, the larger of the two is used
	// (as upstream Karpenter computes it); limits then cap it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:ExclusiveMinimum=false
	Replicas *int32 `json:"replicas,omitempty"`
	// percentage defines the desired buffer capacity as a percentage of the
	// `scalableRef`'s current replicas, rounded up to at least 1. This is
	// only applicable if `scalableRef` is set.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:ExclusiveMinimum=false
	Percentage *int32 `json:"percentage,omitempty"`
	// limits specifies resource constraints that limit the number of chunks created for this buffer
	// based on total resource requests (e.g., CPU, memory). If `replicas` and `percentage` are
	// not set, as many chunks as fit into these limits are created.
	// +optional
	Limits Limits `json:"limits,omitempty"`
}

// CapacityBufferStatus defines the observed state of CapacityBuffer.
type CapacityBufferStatus struct {
	// podTemplateRef is the observed reference to the PodTemplate that was used
	// to provision the buffer.
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`
	// replicas is the number of buffer chunks the autoscaler provisions for.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// podTemplateGeneration is the observed generation of the PodTemplate.
	// +optional
	PodTemplateGeneration *int64 `json:"podTemplateGeneration,omitempty"`
	// conditions: ReadyForProvisioning (the template resolved) and
	// Provisioning (whether the chunks fit existing capacity).
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	// provisioningStrategy defines how the buffer should be utilized.
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
}

// CapacityBufferList is a list of CapacityBuffers.
// +kubebuilder:object:root=true
type CapacityBufferList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CapacityBuffer `json:"items"`
}

// The strategy, the condition types and reasons, and the annotations of a
// virtual pod, as upstream's.
const (
	ActiveProvisioningStrategy = "buffer.x-k8s.io/active-capacity"

	ConditionReadyForProvisioning = "ReadyForProvisioning"
	ConditionProvisioning         = "Provisioning"

	ReasonResolved             = "Resolved"
	ReasonResolutionFailed     = "ResolutionFailed"
	ReasonPodTemplateNotFound  = "PodTemplateNotFound"
	ReasonScalableRefNotFound  = "ScalableRefNotFound"
	ReasonNotReady             = "NotReadyForProvisioning"
	ReasonBufferEmpty          = "BufferEmpty"
	ReasonRequiresNewCapacity  = "RequiresNewCapacity"
	ReasonFitsExistingCapacity = "FitsExistingCapacity"
	AnnotationVirtualPod       = "karpenter.sh/capacity-buffer-fake-pod"
	AnnotationBufferName       = "karpenter.sh/capacity-buffer-name"
	AnnotationBufferNamespace  = "karpenter.sh/capacity-buffer-namespace"
)
