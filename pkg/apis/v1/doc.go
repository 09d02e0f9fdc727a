// Package v1 holds Joiner's Go types for the karpenter.sh/v1 API: NodePool and
// NodeClaim, field for field compatible with upstream Karpenter v1, with the
// kubebuilder markers from which hack/codegen.sh generates the CRDs (OpenAPI
// schema, defaults and CEL validation).
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is the API group of NodePool and NodeClaim.
const Group = "karpenter.sh"

// SchemeGroupVersion is karpenter.sh/v1.
var SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: "v1"}

// AddToScheme registers NodePool and NodeClaim with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion,
		&NodePool{}, &NodePoolList{},
		&NodeClaim{}, &NodeClaimList{},
	)
	metav1AddToGroupVersion(s)
	return nil
}
