// Package v1beta1 holds Joiner's Go types for the autoscaling.x-k8s.io/v1beta1
// API's CapacityBuffer: spare capacity held by virtual pods, field for field
// compatible with upstream Karpenter's (behind its CapacityBuffer feature
// gate) and SIG Autoscaling's, with the kubebuilder markers from which
// hack/codegen.sh generates the CRD.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.x-k8s.io
package v1beta1
