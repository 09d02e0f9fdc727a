package v1

// Well-known EC2 labels, as upstream Karpenter's AWS provider spells them.
const (
	LabelInstanceCategory                     = Group + "/instance-category"
	LabelInstanceFamily                       = Group + "/instance-family"
	LabelInstanceGeneration                   = Group + "/instance-generation"
	LabelInstanceSize                         = Group + "/instance-size"
	LabelInstanceCPU                          = Group + "/instance-cpu"
	LabelInstanceCPUManufacturer              = Group + "/instance-cpu-manufacturer"
	LabelInstanceCPUClockMHz                  = Group + "/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceMemory                       = Group + "/instance-memory"
	LabelInstanceNetworkBW                    = Group + "/instance-network-bandwidth"
	LabelInstanceEBSBW                        = Group + "/instance-ebs-bandwidth"
	LabelInstanceHypervisor                   = Group + "/instance-hypervisor"
	LabelInstanceLocalNVMe                    = Group + "/instance-local-nvme"
	LabelInstanceGPUName                      = Group + "/instance-gpu-name"
	LabelInstanceGPUManufacturer              = Group + "/instance-gpu-manufacturer"
	LabelInstanceGPUCount                     = Group + "/instance-gpu-count"
	LabelInstanceGPUMemory                    = Group + "/instance-gpu-memory"
	LabelInstanceAccelName                    = Group + "/instance-accelerator-name"
	LabelInstanceAccelMfr                     = Group + "/instance-accelerator-manufacturer"
	LabelInstanceAccelCount                   = Group + "/instance-accelerator-count"
	LabelInstanceCapabilityFlex               = Group + "/instance-capability-flex"
	LabelInstanceEncryptionInTransitSupported = Group + "/instance-encryption-in-transit-supported"
	// LabelNitroSandbox is what upstream calls LabelInstanceNitroEnclavesSupported.
	LabelNitroSandbox                     = Group + "/nitro-sandbox"
	LabelInstanceTenancy                  = Group + "/instance-tenancy"
	LabelCapacityReservationID            = Group + "/capacity-reservation-id"
	LabelCapacityReservationType          = Group + "/capacity-reservation-type"
	LabelCapacityReservationInterruptible = Group + "/capacity-reservation-interruptible"
	LabelPlacementGroupID                 = Group + "/placement-group-id"
	LabelPlacementGroupPartition          = Group + "/placement-group-partition"
	LabelNodeClass                        = Group + "/ec2nodeclass"
	// LabelTopologyZoneID is the zone ID (use1-az1), stable across accounts.
	LabelTopologyZoneID = "topology.k8s.aws/zone-id"

	// ResourceNVIDIAGPU, ResourceAMDGPU, ResourceAWSNeuron and
	// ResourceHabanaGaudi are the extended resources accelerators expose.
	ResourceNVIDIAGPU     = "nvidia.com/gpu"
	ResourceAMDGPU        = "amd.com/gpu"
	ResourceAWSNeuron     = "aws.amazon.com/neuron"
	ResourceAWSNeuronCore = "aws.amazon.com/neuroncore"
	ResourceHabanaGaudi   = "habana.ai/gaudi"
	ResourceEFA           = "vpc.amazonaws.com/efa"
	ResourceAWSPodENI     = "vpc.amazonaws.com/pod-eni"
)

// WellKnownLabels are the labels of the karpenter.k8s.aws domain a NodePool
// or NodeClaim requirement may name, exactly the list upstream's CRDs allow
// (the CEL rule "label domain \"karpenter.k8s.aws\" is restricted" is
// generated from the same names; TestWellKnownLabelsMatchTheCRDRule keeps
// them in step).
var WellKnownLabels = []string{
	LabelInstanceTenancy,
	LabelCapacityReservationType,
	LabelCapacityReservationID,
	LabelCapacityReservationInterruptible,
	LabelNodeClass,
	LabelInstanceEncryptionInTransitSupported,
	LabelNitroSandbox,
	LabelInstanceCategory,
	LabelInstanceHypervisor,
	LabelInstanceFamily,
	LabelInstanceGeneration,
	LabelInstanceLocalNVMe,
	LabelInstanceSize,
	LabelInstanceCPU,
	LabelInstanceCPUManufacturer,
	LabelInstanceCPUClockMHz,
	LabelInstanceMemory,
	LabelInstanceEBSBW,
	LabelInstanceNetworkBW,
	LabelInstanceGPUName,
	LabelInstanceGPUManufacturer,
	LabelInstanceGPUCount,
	LabelInstanceGPUMemory,
	LabelInstanceAccelName,
	LabelInstanceAccelMfr,
	LabelInstanceAccelCount,
	LabelInstanceCapabilityFlex,
	LabelPlacementGroupID,
	LabelPlacementGroupPartition,
}

// AMI families, as amiFamily spells them.
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyAL2023       = "AL2023"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyCustom       = "Custom"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyWindows2025  = "Windows2025"
)
