package fake

import (
	"strconv"
	"strings"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

// instanceTypeInfo is DescribeInstanceTypes' InstanceTypeInfo, as the SDK's
// deserializer reads it.
type instanceTypeInfo struct {
	InstanceType         string               `xml:"instanceType"`
	CurrentGeneration    bool                 `xml:"currentGeneration"`
	UsageClasses         []string             `xml:"supportedUsageClasses>item"`
	RootDeviceTypes      []string             `xml:"supportedRootDeviceTypes>item"`
	VirtualizationTypes  []string             `xml:"supportedVirtualizationTypes>item"`
	BareMetal            bool                 `xml:"bareMetal"`
	Hypervisor           string               `xml:"hypervisor,omitempty"`
	Processor            xmlProcessor         `xml:"processorInfo"`
	VCPU                 xmlVCPU              `xml:"vCpuInfo"`
	Memory               xmlMemory            `xml:"memoryInfo"`
	InstanceStorage      bool                 `xml:"instanceStorageSupported"`
	Storage              *xmlStorage          `xml:"instanceStorageInfo,omitempty"`
	EBS                  xmlEBS               `xml:"ebsInfo"`
	Network              xmlNetwork           `xml:"networkInfo"`
	GPU                  *xmlGPUInfo          `xml:"gpuInfo,omitempty"`
	Inference            *xmlInferenceInfo    `xml:"inferenceAcceleratorInfo,omitempty"`
	Neuron               *xmlNeuronInfo       `xml:"neuronInfo,omitempty"`
	Burstable            bool                 `xml:"burstablePerformanceSupported"`
	HibernationSupported bool                 `xml:"hibernationSupported"`
	DedicatedHosts       bool                 `xml:"dedicatedHostsSupported"`
	AutoRecovery         bool                 `xml:"autoRecoverySupported"`
	BootModes            []string             `xml:"supportedBootModes>item"`
	NitroEnclaves        string               `xml:"nitroEnclavesSupport,omitempty"`
	FreeTierEligible     bool                 `xml:"freeTierEligible"`
	PlacementGroup       *xmlPlacementGroupIn `xml:"placementGroupInfo,omitempty"`
}

type xmlProcessor struct {
	Architectures []string `xml:"supportedArchitectures>item"`
	ClockGHz      *float64 `xml:"sustainedClockSpeedInGhz,omitempty"`
	Manufacturer  string   `xml:"manufacturer,omitempty"`
}

type xmlVCPU struct {
	DefaultVCPUs   int64 `xml:"defaultVCpus"`
	DefaultCores   int64 `xml:"defaultCores"`
	ThreadsPerCore int64 `xml:"defaultThreadsPerCore"`
}

type xmlMemory struct {
	SizeInMiB int64 `xml:"sizeInMiB"`
}

type xmlStorage struct {
	TotalSizeInGB int64     `xml:"totalSizeInGB"`
	Disks         []xmlDisk `xml:"disks>item"`
	NVMeSupport   string    `xml:"nvmeSupport"`
	Encryption    string    `xml:"encryptionSupport"`
}

type xmlDisk struct {
	SizeInGB int64  `xml:"sizeInGB"`
	Count    int64  `xml:"count"`
	Type     string `xml:"type"`
}

type xmlEBS struct {
	OptimizedSupport string           `xml:"ebsOptimizedSupport"`
	Encryption       string           `xml:"encryptionSupport"`
	Optimized        *xmlEBSOptimized `xml:"ebsOptimizedInfo,omitempty"`
	NVMeSupport      string           `xml:"nvmeSupport"`
}

type xmlEBSOptimized struct {
	BaselineMbps int64 `xml:"baselineBandwidthInMbps"`
	MaximumMbps  int64 `xml:"maximumBandwidthInMbps"`
}

type xmlNetwork struct {
	Performance          string           `xml:"networkPerformance,omitempty"`
	MaxInterfaces        int64            `xml:"maximumNetworkInterfaces"`
	MaxCards             int64            `xml:"maximumNetworkCards"`
	DefaultCardIndex     int64            `xml:"defaultNetworkCardIndex"`
	Cards                []xmlNetworkCard `xml:"networkCards>item"`
	IPv4PerInterface     int64            `xml:"ipv4AddressesPerInterface"`
	IPv6PerInterface     int64            `xml:"ipv6AddressesPerInterface"`
	IPv6Supported        bool             `xml:"ipv6Supported"`
	ENASupport           string           `xml:"enaSupport"`
	EFASupported         bool             `xml:"efaSupported"`
	EFA                  *xmlEFA          `xml:"efaInfo,omitempty"`
	EncryptionInTransit  bool             `xml:"encryptionInTransitSupported"`
	ENASrdSupported      bool             `xml:"enaSrdSupported"`
	BandwidthWeightings  []string         `xml:"bandwidthWeightings>item"`
	SecondaryNetworkSupp bool             `xml:"secondaryNetworkSupported"`
}

type xmlNetworkCard struct {
	Index           int64    `xml:"networkCardIndex"`
	Performance     string   `xml:"networkPerformance,omitempty"`
	MaxInterfaces   int64    `xml:"maximumNetworkInterfaces"`
	BaselineGbps    *float64 `xml:"baselineBandwidthInGbps,omitempty"`
	PeakGbps        *float64 `xml:"peakBandwidthInGbps,omitempty"`
	DefaultENAQueue int64    `xml:"defaultEnaQueueCountPerInterface,omitempty"`
}

type xmlEFA struct {
	MaxInterfaces int64 `xml:"maximumEfaInterfaces"`
}

type xmlGPUInfo struct {
	GPUs        []xmlDevice `xml:"gpus>item"`
	TotalMemory int64       `xml:"totalGpuMemoryInMiB"`
}

type xmlDevice struct {
	Name         string     `xml:"name"`
	Manufacturer string     `xml:"manufacturer,omitempty"`
	Count        int64      `xml:"count"`
	Memory       *xmlMemory `xml:"memoryInfo,omitempty"`
}

type xmlInferenceInfo struct {
	Accelerators []xmlDevice `xml:"accelerators>item"`
}

type xmlNeuronInfo struct {
	Devices     []xmlNeuronDevice `xml:"neuronDevices>item"`
	TotalMemory int64             `xml:"totalNeuronDeviceMemoryInMiB,omitempty"`
}

type xmlNeuronDevice struct {
	Name   string         `xml:"name"`
	Count  int64          `xml:"count"`
	Cores  *xmlNeuronCore `xml:"coreInfo,omitempty"`
	Memory *xmlMemory     `xml:"memoryInfo,omitempty"`
}

type xmlNeuronCore struct {
	Count   int64 `xml:"count"`
	Version int64 `xml:"version"`
}

// neuronDevices are AWS's Neuron chips: NeuronCores per device, their
// version, and memory per device.
var neuronDevices = map[string]struct{ cores, version, memoryMiB int64 }{
	"inferentia":  {4, 1, 8 * 1024},
	"inferentia2": {2, 2, 32 * 1024},
	"trainium":    {2, 2, 32 * 1024},
	"trainium2":   {8, 3, 96 * 1024},
}

func neuronInfo(model string, count int64) *xmlNeuronInfo {
	dev := xmlNeuronDevice{Name: awsName(model), Count: count}
	info := &xmlNeuronInfo{}
	if d, ok := neuronDevices[model]; ok {
		dev.Cores = &xmlNeuronCore{Count: d.cores, Version: d.version}
		dev.Memory = &xmlMemory{SizeInMiB: d.memoryMiB}
		info.TotalMemory = d.memoryMiB * count
	}
	info.Devices = []xmlNeuronDevice{dev}
	return info
}

type xmlPlacementGroupIn struct {
	Strategies []string `xml:"supportedStrategies>item"`
}

// ec2Arch is EC2's name for a Kubernetes architecture.
func ec2Arch(arch string) string {
	if arch == "amd64" {
		return "x86_64"
	}
	return arch
}

// awsName spells a catalog (label) name as AWS does, so that upstream's
// lower-kebab-casing of it gives the label back: radeon-pro-v520 → Radeon
// Pro V520, a10g → A10G, inferentia2 → Inferentia2.
func awsName(label string) string {
	known := map[string]string{
		"radeon-pro-v520": "Radeon Pro V520", "gaudi-hl-205": "Gaudi HL-205", "t4g": "T4g",
		"inferentia": "Inferentia", "inferentia2": "Inferentia2", "trainium": "Trainium", "trainium2": "Trainium2",
		"qualcomm-ai100": "Qualcomm AI100",
	}
	if n, ok := known[label]; ok {
		return n
	}
	return strings.ToUpper(strings.ReplaceAll(label, "-", " "))
}

// awsManufacturer: nvidia → NVIDIA, aws → AWS, intel → Intel, ….
func awsManufacturer(m string) string {
	switch m {
	case "nvidia", "aws", "amd":
		return strings.ToUpper(m)
	case "":
		return ""
	}
	return strings.ToUpper(m[:1]) + m[1:]
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// describeType is what DescribeInstanceTypes says of a catalog entry.
func describeType(e *catalog.Entry) instanceTypeInfo {
	t := instanceTypeInfo{
		InstanceType:        e.Name,
		CurrentGeneration:   true,
		UsageClasses:        []string{"on-demand", "spot"},
		RootDeviceTypes:     []string{"ebs"},
		VirtualizationTypes: []string{"hvm"},
		BareMetal:           e.BareMetal,
		Hypervisor:          e.Hypervisor,
		Processor: xmlProcessor{
			Architectures: []string{ec2Arch(e.Arch)},
			Manufacturer:  awsManufacturer(e.CPUManufacturer),
		},
		VCPU:      xmlVCPU{DefaultVCPUs: e.VCPU, DefaultCores: max(e.VCPU/2, 1), ThreadsPerCore: 2},
		Memory:    xmlMemory{SizeInMiB: e.MemoryMiB},
		Burstable: e.Burstable,
		BootModes: []string{"uefi", "legacy-bios"},
		EBS:       xmlEBS{OptimizedSupport: "default", Encryption: "supported", NVMeSupport: "required"},
		Network: xmlNetwork{
			IPv6Supported: true, ENASupport: "required", EFASupported: e.EFA > 0,
			EncryptionInTransit: e.Hypervisor == "nitro",
		},
	}
	if e.Arch == "arm64" || e.CPUManufacturer == "aws" {
		t.VCPU.DefaultCores, t.VCPU.ThreadsPerCore = e.VCPU, 1
	}
	if e.CPUSustainedClockMHz != nil {
		ghz := float64(*e.CPUSustainedClockMHz) / 1000
		t.Processor.ClockGHz = &ghz
	}
	if e.LocalNVMeGiB != nil {
		t.InstanceStorage = true
		t.Storage = &xmlStorage{TotalSizeInGB: *e.LocalNVMeGiB, NVMeSupport: "required", Encryption: "required",
			Disks: []xmlDisk{{SizeInGB: *e.LocalNVMeGiB, Count: 1, Type: "ssd"}}}
	}
	if e.EBSBandwidthMbps != nil {
		t.EBS.Optimized = &xmlEBSOptimized{BaselineMbps: *e.EBSBandwidthMbps, MaximumMbps: *e.EBSBandwidthMbps}
	}
	if e.EFA > 0 {
		t.Network.EFA = &xmlEFA{MaxInterfaces: e.EFA}
	}
	describeNetwork(&t.Network, e)
	if e.GPUs > 0 || e.GPUManufacturer != nil {
		dev := xmlDevice{Name: awsName(deref(e.GPUModel)), Manufacturer: awsManufacturer(deref(e.GPUManufacturer)), Count: e.GPUs}
		if e.GPUMemoryMiBPerGPU != nil {
			dev.Memory = &xmlMemory{SizeInMiB: *e.GPUMemoryMiBPerGPU}
		}
		t.GPU = &xmlGPUInfo{GPUs: []xmlDevice{dev}, TotalMemory: deref(e.GPUMemoryMiBPerGPU) * max(e.GPUs, 1)}
	}
	if e.Accelerators > 0 {
		name, mfr := awsName(deref(e.AcceleratorModel)), awsManufacturer(deref(e.AcceleratorManufacturer))
		t.Inference = &xmlInferenceInfo{Accelerators: []xmlDevice{{Name: name, Manufacturer: mfr, Count: e.Accelerators}}}
		if deref(e.AcceleratorManufacturer) == "aws" {
			t.Neuron = neuronInfo(deref(e.AcceleratorModel), e.Accelerators)
		}
	}
	return t
}

// describeNetwork fills the ENI limits and bandwidth: the default card has
// maxENIsDefaultCard interfaces, the others share the rest.
func describeNetwork(n *xmlNetwork, e *catalog.Entry) {
	var gbps *float64
	if e.NetworkBandwidthMbps != nil {
		g := float64(*e.NetworkBandwidthMbps) / 1000
		gbps = &g
		n.Performance = strconv.FormatFloat(g, 'f', -1, 64) + " Gigabit"
	}
	if e.ENI == nil {
		n.MaxCards = 1
		n.Cards = []xmlNetworkCard{{Index: 0, BaselineGbps: gbps, PeakGbps: gbps}}
		return
	}
	n.MaxInterfaces = e.ENI.MaxENIs
	n.IPv4PerInterface = e.ENI.IPv4PerENI
	n.IPv6PerInterface = e.ENI.IPv4PerENI
	cards := max(e.ENI.NetworkCards, 1)
	n.MaxCards = cards
	for i := int64(0); i < cards; i++ {
		c := xmlNetworkCard{Index: i, Performance: n.Performance, BaselineGbps: gbps, PeakGbps: gbps}
		if i == 0 {
			c.MaxInterfaces = e.ENI.MaxENIsDefaultCard
		} else {
			c.MaxInterfaces = (e.ENI.MaxENIs - e.ENI.MaxENIsDefaultCard) / (cards - 1)
		}
		n.Cards = append(n.Cards, c)
	}
}

// attributes are DescribeInstanceTypes' filters on t.
func (t instanceTypeInfo) attributes(name string) ([]string, bool) {
	switch name {
	case "instance-type":
		return values(t.InstanceType), true
	case "current-generation":
		return values(strconv.FormatBool(t.CurrentGeneration)), true
	case "bare-metal":
		return values(strconv.FormatBool(t.BareMetal)), true
	case "burstable-performance-supported":
		return values(strconv.FormatBool(t.Burstable)), true
	case "hypervisor":
		return values(t.Hypervisor), true
	case "processor-info.supported-architecture":
		return t.Processor.Architectures, true
	case "supported-usage-class":
		return t.UsageClasses, true
	case "supported-virtualization-type":
		return t.VirtualizationTypes, true
	case "vcpu-info.default-vcpus":
		return values(strconv.FormatInt(t.VCPU.DefaultVCPUs, 10)), true
	case "memory-info.size-in-mib":
		return values(strconv.FormatInt(t.Memory.SizeInMiB, 10)), true
	case "instance-storage-supported":
		return values(strconv.FormatBool(t.InstanceStorage)), true
	case "network-info.efa-supported":
		return values(strconv.FormatBool(t.Network.EFASupported)), true
	}
	return nil, false
}
