// Package v1alpha1 holds Joiner's Go types for the karpenter.sh/v1alpha1 API:
// NodeOverlay, field for field compatible with upstream Karpenter's (alpha,
// behind its NodeOverlay feature gate), with the kubebuilder markers from
// which hack/codegen.sh generates the CRD.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1alpha1
