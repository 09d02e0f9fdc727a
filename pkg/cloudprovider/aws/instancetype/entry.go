package instancetype

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

// familyScheme splits a family into Karpenter's category (the leading
// letters) and generation (the digits after them, past a "-6tb"-style
// memory size): m6i → m, 6; u-6tb1 → u, 1; inf2 → inf, 2.
var familyScheme = regexp.MustCompile(`^([a-z]+)(-[0-9]+tb)?([0-9]+)`)

// architectures maps EC2's architecture names to Kubernetes'; a type
// supporting neither (i386 only, the Mac ones) is not a Kubernetes node.
var architectures = map[ec2types.ArchitectureType]string{
	ec2types.ArchitectureTypeX8664: "amd64",
	ec2types.ArchitectureTypeArm64: "arm64",
}

// entryFrom turns DescribeInstanceTypes' facts about one type into a
// catalog entry, so that catalog.Entry.InstanceType builds its labels,
// capacity and overhead exactly as for the embedded catalog. known is the
// fallback catalog's entry for the type, or nil; it supplies what the API
// does not say: branch ENIs and trunking and network bandwidth (upstream
// keeps them in generated tables), the human category, and the
// allocatable Karpenter publishes for the type. A type the catalog lacks gets the allocatable
// computed as upstream does for AL2023 (allocatableAL2023).
func entryFrom(info ec2types.InstanceTypeInfo, known *catalog.Entry) (catalog.Entry, error) {
	name := string(info.InstanceType)
	e := catalog.Entry{Name: name, SpecSource: "DescribeInstanceTypes"}
	family, size, ok := strings.Cut(name, ".")
	if !ok || family == "" || size == "" {
		return e, fmt.Errorf("instance type %q is not named <family>.<size>", name)
	}
	e.Family, e.Size = family, size
	if m := familyScheme.FindStringSubmatch(family); m != nil {
		e.KarpenterCategory = m[1]
		e.Generation, _ = strconv.Atoi(m[3])
	}
	if info.VCpuInfo == nil || info.VCpuInfo.DefaultVCpus == nil || info.MemoryInfo == nil || info.MemoryInfo.SizeInMiB == nil {
		return e, fmt.Errorf("%s: DescribeInstanceTypes gave no vCPUs or memory", name)
	}
	e.VCPU, e.MemoryMiB = int64(*info.VCpuInfo.DefaultVCpus), *info.MemoryInfo.SizeInMiB
	processor(&e, info.ProcessorInfo)
	if e.Arch == "" {
		var archs []ec2types.ArchitectureType
		if info.ProcessorInfo != nil {
			archs = info.ProcessorInfo.SupportedArchitectures
		}
		return e, fmt.Errorf("%s: architectures %v: neither x86_64 nor arm64", name, archs)
	}
	accelerators(&e, info)
	storageAndNetwork(&e, info)
	return e, fromCatalog(&e, known)
}

// processor takes the architecture, manufacturer and clock.
func processor(e *catalog.Entry, p *ec2types.ProcessorInfo) {
	if p == nil {
		return
	}
	for _, a := range p.SupportedArchitectures {
		if k, ok := architectures[a]; ok {
			e.Arch = k
			break
		}
	}
	if p.Manufacturer != nil {
		e.CPUManufacturer = kebab(*p.Manufacturer)
	}
	if p.SustainedClockSpeedInGhz != nil {
		mhz := int(math.Round(*p.SustainedClockSpeedInGhz * 1000))
		e.CPUSustainedClockMHz = &mhz
	}
}

// accelerators takes the GPUs, Neuron devices and inference accelerators:
// as upstream, name, manufacturer and memory labels only for a type with
// one kind of GPU (or accelerator).
func accelerators(e *catalog.Entry, info ec2types.InstanceTypeInfo) {
	if g := info.GpuInfo; g != nil {
		for _, d := range g.Gpus {
			e.GPUs += int64(deref(d.Count))
		}
		if len(g.Gpus) == 1 {
			d := g.Gpus[0]
			e.GPUModel, e.GPUManufacturer = kebabPtr(d.Name), kebabPtr(d.Manufacturer)
			if d.MemoryInfo != nil && d.MemoryInfo.SizeInMiB != nil {
				mib := int64(*d.MemoryInfo.SizeInMiB)
				e.GPUMemoryMiBPerGPU = &mib
			}
		}
	}
	switch n, a := info.NeuronInfo, info.InferenceAcceleratorInfo; {
	case n != nil && len(n.NeuronDevices) == 1:
		d := n.NeuronDevices[0]
		aws := "aws"
		e.Accelerators, e.AcceleratorModel, e.AcceleratorManufacturer = int64(deref(d.Count)), kebabPtr(d.Name), &aws
	case n == nil && a != nil && len(a.Accelerators) == 1:
		d := a.Accelerators[0]
		e.Accelerators, e.AcceleratorModel, e.AcceleratorManufacturer = int64(deref(d.Count)), kebabPtr(d.Name), kebabPtr(d.Manufacturer)
	}
}

// storageAndNetwork takes local NVMe, EBS bandwidth, the hypervisor,
// metal and burstable, EFA, network bandwidth and ENI limits.
func storageAndNetwork(e *catalog.Entry, info ec2types.InstanceTypeInfo) {
	if s := info.InstanceStorageInfo; s != nil && s.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported && s.TotalSizeInGB != nil {
		gb := *s.TotalSizeInGB
		e.LocalNVMeGiB = &gb
	}
	if b := info.EbsInfo; b != nil && b.EbsOptimizedSupport == ec2types.EbsOptimizedSupportDefault &&
		b.EbsOptimizedInfo != nil && b.EbsOptimizedInfo.MaximumBandwidthInMbps != nil {
		mbps := int64(*b.EbsOptimizedInfo.MaximumBandwidthInMbps)
		e.EBSBandwidthMbps = &mbps
	}
	e.Hypervisor = string(info.Hypervisor)
	e.BareMetal, e.Burstable = deref(info.BareMetal), deref(info.BurstablePerformanceSupported)
	if n := info.NetworkInfo; n != nil {
		if n.EfaInfo != nil {
			e.EFA = int64(deref(n.EfaInfo.MaximumEfaInterfaces))
		}
		e.NetworkBandwidthMbps = baselineBandwidth(n)
		e.ENI = eniLimits(n)
	}
}

// fromCatalog takes what the API does not say from the catalog's entry
// for the type (known), or computes it for a type the catalog lacks.
func fromCatalog(e *catalog.Entry, known *catalog.Entry) error {
	if known == nil {
		e.Category = category(e)
		if e.ENI == nil {
			return fmt.Errorf("%s: DescribeInstanceTypes gave no network interface limits, so its pod limit is unknown", e.Name)
		}
		e.Allocatable = allocatableAL2023(e.VCPU, e.MemoryMiB, e.Arch, e.ENI.MaxPodsENI)
		return nil
	}
	// Upstream labels network bandwidth from its generated table (which
	// the catalog has), the API's card baselines only for other types.
	if known.NetworkBandwidthMbps != nil {
		e.NetworkBandwidthMbps = known.NetworkBandwidthMbps
	}
	e.Category = known.Category
	if e.ENI != nil && known.ENI != nil {
		e.ENI.BranchENIs, e.ENI.TrunkingCompatible = known.ENI.BranchENIs, known.ENI.TrunkingCompatible
	}
	if e.ENI == nil {
		e.ENI = known.ENI
	}
	e.Allocatable = known.Allocatable
	return nil
}

// baselineBandwidth is the type's baseline network bandwidth in Mbps over
// all its network cards, or nil when the API does not say.
func baselineBandwidth(n *ec2types.NetworkInfo) *int64 {
	var gbps float64
	seen := false
	for _, c := range n.NetworkCards {
		if c.BaselineBandwidthInGbps != nil {
			gbps += *c.BaselineBandwidthInGbps
			seen = true
		}
	}
	if !seen {
		return nil
	}
	mbps := int64(math.Round(gbps * 1000))
	return &mbps
}

// eniLimits are the type's network interface limits; the VPC CNI uses the
// default network card's interfaces only, so its pod limit counts those.
func eniLimits(n *ec2types.NetworkInfo) *catalog.ENI {
	if deref(n.MaximumNetworkInterfaces) <= 0 || deref(n.Ipv4AddressesPerInterface) <= 0 {
		return nil
	}
	eni := &catalog.ENI{
		MaxENIs:    int64(*n.MaximumNetworkInterfaces),
		IPv4PerENI: int64(*n.Ipv4AddressesPerInterface),
	}
	eni.MaxENIsDefaultCard = eni.MaxENIs
	defaultCard := deref(n.DefaultNetworkCardIndex)
	for i, c := range n.NetworkCards {
		index := int32(i)
		if c.NetworkCardIndex != nil {
			index = *c.NetworkCardIndex
		}
		if index == defaultCard && c.MaximumNetworkInterfaces != nil {
			eni.MaxENIsDefaultCard = int64(*c.MaximumNetworkInterfaces)
		}
	}
	eni.NetworkCards = int64(deref(n.MaximumNetworkCards))
	if eni.NetworkCards == 0 {
		eni.NetworkCards = int64(max(len(n.NetworkCards), 1))
	}
	eni.MaxPodsENI = maxPods(eni.MaxENIsDefaultCard, eni.IPv4PerENI)
	return eni
}

// maxPods is the VPC CNI's pod limit without prefix delegation: one
// address of every interface is its own, and two host-network pods come
// on top.
func maxPods(enis, ipv4PerENI int64) int64 {
	if enis <= 0 || ipv4PerENI <= 0 {
		return 0
	}
	return enis*(ipv4PerENI-1) + 2
}

// The AL2023 defaults upstream Karpenter computes allocatable with.
const (
	vmMemoryOverhead     = 0.075 // the hypervisor's share of memory
	evictionHardMiB      = 100   // memory.available
	gravitonCMAMiB       = 64    // reserved on arm64, never usable
	kubeReservedBaseMiB  = 255   // kube-reserved memory: 255 MiB + 11 MiB a pod
	kubeReservedPerPodMi = 11
)

// cpuReservedTiers: kube-reserved CPU is 6 % of the first core, 1 % of the
// second, 0.5 % of the third and fourth and 0.25 % of every further one.
var cpuReservedTiers = []struct {
	fromMilli, toMilli int64
	share              float64
}{
	{0, 1000, 0.06},
	{1000, 2000, 0.01},
	{2000, 4000, 0.005},
	{4000, math.MaxInt64, 0.0025},
}

// allocatableAL2023 is what a node of the type offers pods under the
// AL2023 defaults, as upstream Karpenter computes it: ENI-limited pods,
// kube-reserved CPU by tiers and memory 11 MiB × pods + 255 MiB, eviction
// at 100 MiB, after the hypervisor's 7.5 % (and Graviton's 64 MiB) of
// memory; ephemeral storage 17Gi of the 20Gi root volume.
func allocatableAL2023(vcpu, memoryMiB int64, arch string, pods int64) catalog.Allocatable {
	cpu := vcpu * 1000
	reserved := int64(0)
	for _, t := range cpuReservedTiers {
		if cpu <= t.fromMilli {
			break
		}
		reserved += int64(float64(min(cpu, t.toMilli)-t.fromMilli) * t.share)
	}
	mem := memoryMiB
	if arch == "arm64" {
		mem -= gravitonCMAMiB
	}
	mem -= int64(math.Ceil(float64(mem) * vmMemoryOverhead))
	mem -= kubeReservedPerPodMi*pods + kubeReservedBaseMiB + evictionHardMiB
	return catalog.Allocatable{
		CPUMillicores:    cpu - reserved,
		MemoryMiB:        mem,
		Pods:             pods,
		EphemeralStorage: "17Gi",
	}
}

// category is the catalog's human category of a type it does not know.
func category(e *catalog.Entry) string {
	switch {
	case e.GPUManufacturer != nil:
		return "gpu"
	case e.Accelerators > 0:
		return "accelerator"
	}
	switch e.KarpenterCategory {
	case "c":
		return "compute"
	case "r", "x", "u", "z":
		return "memory"
	case "i", "d", "h", "im", "is":
		return "storage"
	case "g", "p", "gr":
		return "gpu"
	case "f", "vt", "inf", "trn", "dl":
		return "accelerator"
	case "hpc":
		return "hpc"
	}
	return "general"
}

func kebab(s string) string { return strings.ToLower(strings.ReplaceAll(s, " ", "-")) }

func kebabPtr(s *string) *string {
	if s == nil {
		return nil
	}
	k := kebab(*s)
	return &k
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
