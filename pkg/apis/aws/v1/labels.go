package v1

// Well-known EC2 labels, as upstream Karpenter's AWS provider spells them.
const (
	LabelInstanceCategory        = Group + "/instance-category"
	LabelInstanceFamily          = Group + "/instance-family"
	LabelInstanceGeneration      = Group + "/instance-generation"
	LabelInstanceSize            = Group + "/instance-size"
	LabelInstanceCPU             = Group + "/instance-cpu"
	LabelInstanceCPUManufacturer = Group + "/instance-cpu-manufacturer"
	LabelInstanceCPUClockMHz     = Group + "/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceMemory          = Group + "/instance-memory"
	LabelInstanceNetworkBW       = Group + "/instance-network-bandwidth"
	LabelInstanceEBSBW           = Group + "/instance-ebs-bandwidth"
	LabelInstanceHypervisor      = Group + "/instance-hypervisor"
	LabelInstanceLocalNVMe       = Group + "/instance-local-nvme"
	LabelInstanceGPUName         = Group + "/instance-gpu-name"
	LabelInstanceGPUManufacturer = Group + "/instance-gpu-manufacturer"
	LabelInstanceGPUCount        = Group + "/instance-gpu-count"
	LabelInstanceGPUMemory       = Group + "/instance-gpu-memory"
	LabelInstanceAccelName       = Group + "/instance-accelerator-name"
	LabelInstanceAccelMfr        = Group + "/instance-accelerator-manufacturer"
	LabelInstanceAccelCount      = Group + "/instance-accelerator-count"
	LabelNodeClass               = Group + "/ec2nodeclass"

	// ResourceNVIDIAGPU, ResourceAMDGPU, ResourceAWSNeuron and
	// ResourceHabanaGaudi are the extended resources accelerators expose.
	ResourceNVIDIAGPU   = "nvidia.com/gpu"
	ResourceAMDGPU      = "amd.com/gpu"
	ResourceAWSNeuron   = "aws.amazon.com/neuron"
	ResourceHabanaGaudi = "habana.ai/gaudi"
)
