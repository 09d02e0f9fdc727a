package manifest

import (
	"strings"
)

// currentAPI is the apiVersion each Karpenter kind Joiner validates is
// served under, and the kinds older Karpenter releases used in their place.
var currentAPI = map[string]string{
	"NodePool":     "karpenter.sh/v1",
	"NodeClaim":    "karpenter.sh/v1",
	"EC2NodeClass": "karpenter.k8s.aws/v1",
	// Alpha upstream (behind its NodeOverlay feature gate); Joiner's
	// simulations apply it, its controller behind the same gate.
	"NodeOverlay": "karpenter.sh/v1alpha1",
	// SIG Autoscaling's API, served by upstream Karpenter behind its
	// CapacityBuffer feature gate.
	"CapacityBuffer": "autoscaling.x-k8s.io/v1beta1",
}

// bufferGroup is CapacityBuffer's API group.
const bufferGroup = "autoscaling.x-k8s.io"

// oldKinds are Karpenter kinds that no longer exist, with their replacement.
var oldKinds = map[string]string{
	"Provisioner":     "NodePool",
	"Machine":         "NodeClaim",
	"AWSNodeTemplate": "EC2NodeClass",
}

// upstreamOnlyKinds are kinds upstream Karpenter serves that Joiner does not
// model yet, with where upstream serves them.
var upstreamOnlyKinds = map[string]string{}

// oldVersions are the Karpenter API versions releases once served, and
// when they stopped.
var oldVersions = map[string]string{
	"provisioning.karpenter.sh/v1alpha1": "an early alpha API of Karpenter v0.x",
	"provisioning.karpenter.sh/v1alpha2": "an early alpha API of Karpenter v0.x",
	"karpenter.sh/v1alpha1":              "an early alpha API of Karpenter v0.x",
	"karpenter.sh/v1alpha2":              "an early alpha API of Karpenter v0.x",
	"karpenter.sh/v1alpha3":              "an early alpha API of Karpenter v0.x",
	"karpenter.sh/v1alpha4":              "an early alpha API of Karpenter v0.x",
	"karpenter.sh/v1alpha5":              "served until Karpenter v0.32",
	"karpenter.sh/v1beta1":               "served until Karpenter v1.0",
	"karpenter.k8s.aws/v1alpha1":         "served until Karpenter v0.32",
	"karpenter.k8s.aws/v1beta1":          "served until Karpenter v1.0",
}

// versionNote says what an apiVersion that is not current was.
func versionNote(apiVersion string) string {
	if n, ok := oldVersions[apiVersion]; ok {
		return apiVersion + " is no longer served (" + n + ")"
	}
	if apiVersion == "" {
		return "apiVersion is missing"
	}
	return apiVersion + " is not an API version Karpenter serves"
}

func splitAPIVersion(apiVersion string) (group, version string) {
	if i := strings.LastIndex(apiVersion, "/"); i >= 0 {
		return apiVersion[:i], apiVersion[i+1:]
	}
	return "", apiVersion
}

// isKarpenterGroup: karpenter.sh, karpenter.k8s.aws, provisioning.karpenter.sh
// and any other group of Karpenter's (karpenter.azure.com, …).
func isKarpenterGroup(group string) bool {
	return group == "karpenter.sh" || strings.HasSuffix(group, ".karpenter.sh") || strings.HasPrefix(group, "karpenter.")
}

// canonicalKind returns the properly spelled Karpenter kind for kind
// (case-insensitive), or "".
func canonicalKind(kind string) string {
	for _, set := range []map[string]string{currentAPI, oldKinds, upstreamOnlyKinds} {
		for k := range set {
			if strings.EqualFold(k, kind) {
				return k
			}
		}
	}
	return ""
}

// IsKarpenter reports whether d is Karpenter input that Joiner answers:
// anything of a Karpenter API group (current, old or unknown versions), and a
// Karpenter kind written without a group (apiVersion: v1, or none). Another
// project's kind of the same name (hypershift.openshift.io NodePool) is not.
func IsKarpenter(d *Document) bool {
	group, _ := splitAPIVersion(d.APIVersion)
	if isKarpenterGroup(group) {
		return true
	}
	if group == bufferGroup {
		return strings.EqualFold(d.Kind, "CapacityBuffer") // not the group's other kinds (ProvisioningRequest)
	}
	return group == "" && canonicalKind(d.Kind) != ""
}
