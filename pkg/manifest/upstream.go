package manifest

import "strings"

// upstreamFields are the spec fields of upstream Karpenter's newest CRDs
// (aws/karpenter-provider-aws pkg/apis/crds at 1d927085, August 2026, which
// carries kubernetes-sigs/karpenter's karpenter.sh CRDs), list items written
// as []. A field Joiner's
// schema lacks but upstream accepts is answered "not supported yet", never
// "remove it": removing it would switch a feature off in the user's cluster.
var upstreamFields = map[string][]string{
	"EC2NodeClass": {
		"spec.amiFamily", "spec.amiSelectorTerms", "spec.amiSelectorTerms[].alias", "spec.amiSelectorTerms[].id",
		"spec.amiSelectorTerms[].name", "spec.amiSelectorTerms[].owner", "spec.amiSelectorTerms[].ssmParameter",
		"spec.amiSelectorTerms[].tags", "spec.associatePublicIPAddress", "spec.blockDeviceMappings",
		"spec.blockDeviceMappings[].deviceName", "spec.blockDeviceMappings[].ebs",
		"spec.blockDeviceMappings[].ebs.deleteOnTermination", "spec.blockDeviceMappings[].ebs.encrypted",
		"spec.blockDeviceMappings[].ebs.iops", "spec.blockDeviceMappings[].ebs.kmsKeyID",
		"spec.blockDeviceMappings[].ebs.snapshotID", "spec.blockDeviceMappings[].ebs.throughput",
		"spec.blockDeviceMappings[].ebs.volumeInitializationRate", "spec.blockDeviceMappings[].ebs.volumeSize",
		"spec.blockDeviceMappings[].ebs.volumeType", "spec.blockDeviceMappings[].rootVolume",
		"spec.capacityReservationSelectorTerms", "spec.capacityReservationSelectorTerms[].id",
		"spec.capacityReservationSelectorTerms[].instanceMatchCriteria",
		"spec.capacityReservationSelectorTerms[].ownerID", "spec.capacityReservationSelectorTerms[].tags",
		"spec.connectionTracking", "spec.connectionTracking.tcpEstablishedTimeout",
		"spec.connectionTracking.udpStreamTimeout", "spec.connectionTracking.udpTimeout", "spec.context",
		"spec.cpuOptions", "spec.cpuOptions.nestedVirtualization", "spec.detailedMonitoring",
		"spec.instanceProfile", "spec.instanceStorePolicy", "spec.ipPrefixCount", "spec.kubelet",
		"spec.metadataOptions", "spec.metadataOptions.httpEndpoint", "spec.metadataOptions.httpProtocolIPv6",
		"spec.metadataOptions.httpPutResponseHopLimit", "spec.metadataOptions.httpTokens",
		"spec.networkInterfaces", "spec.networkInterfaces[].deviceIndex", "spec.networkInterfaces[].interfaceType",
		"spec.networkInterfaces[].networkCardIndex", "spec.placementGroupSelector",
		"spec.placementGroupSelector.id", "spec.placementGroupSelector.name", "spec.role",
		"spec.securityGroupSelectorTerms", "spec.securityGroupSelectorTerms[].id",
		"spec.securityGroupSelectorTerms[].name", "spec.securityGroupSelectorTerms[].tags",
		"spec.subnetSelectorTerms", "spec.subnetSelectorTerms[].id", "spec.subnetSelectorTerms[].tags",
		"spec.tags", "spec.userData",
	},
	"NodeClaim": {
		"spec.expireAfter", "spec.nodeClassRef", "spec.nodeClassRef.group", "spec.nodeClassRef.kind",
		"spec.nodeClassRef.name", "spec.requirements", "spec.requirements[].key", "spec.requirements[].minValues",
		"spec.requirements[].operator", "spec.requirements[].values", "spec.resources", "spec.resources.requests",
		"spec.startupTaints", "spec.startupTaints[].effect", "spec.startupTaints[].key",
		"spec.startupTaints[].timeAdded", "spec.startupTaints[].value", "spec.taints", "spec.taints[].effect",
		"spec.taints[].key", "spec.taints[].timeAdded", "spec.taints[].value", "spec.terminationGracePeriod",
	},
	"NodePool": {
		"spec.disruption", "spec.disruption.budgets", "spec.disruption.budgets[].duration",
		"spec.disruption.budgets[].nodes", "spec.disruption.budgets[].reasons",
		"spec.disruption.budgets[].schedule", "spec.disruption.consolidateAfter",
		"spec.disruption.consolidationPolicy", "spec.limits", "spec.replicas", "spec.template",
		"spec.template.metadata", "spec.template.metadata.annotations", "spec.template.metadata.labels",
		"spec.template.spec", "spec.template.spec.expireAfter", "spec.template.spec.nodeClassRef",
		"spec.template.spec.nodeClassRef.group", "spec.template.spec.nodeClassRef.kind",
		"spec.template.spec.nodeClassRef.name", "spec.template.spec.requirements",
		"spec.template.spec.requirements[].key", "spec.template.spec.requirements[].minValues",
		"spec.template.spec.requirements[].operator", "spec.template.spec.requirements[].values",
		"spec.template.spec.startupTaints", "spec.template.spec.startupTaints[].effect",
		"spec.template.spec.startupTaints[].key", "spec.template.spec.startupTaints[].timeAdded",
		"spec.template.spec.startupTaints[].value", "spec.template.spec.taints",
		"spec.template.spec.taints[].effect", "spec.template.spec.taints[].key",
		"spec.template.spec.taints[].timeAdded", "spec.template.spec.taints[].value",
		"spec.template.spec.terminationGracePeriod", "spec.weight",
	},
}

// upstreamOpenMaps are fields upstream keeps open (any key): upstream's
// EC2NodeClass spec.kubelet takes every KubeletConfiguration field.
var upstreamOpenMaps = map[string][]string{
	"EC2NodeClass": {"spec.kubelet"},
}

// upstreamAccepts reports whether upstream Karpenter's schema has the field
// (a path as the pruner reports it: spec.a[0].b).
func upstreamAccepts(kind, path string) bool {
	norm := indexRE.ReplaceAllString(path, "[]")
	for _, p := range upstreamFields[kind] {
		if p == norm {
			return true
		}
	}
	for _, p := range upstreamOpenMaps[kind] {
		if strings.HasPrefix(norm, p+".") {
			return true
		}
	}
	return false
}
