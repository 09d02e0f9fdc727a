package instancetype

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

func defaultCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAllocatableAL2023MatchesKarpenter: the formula gives the allocatable
// Karpenter publishes for every catalog type with ENI limits (CPU, memory,
// pods, ephemeral storage), so a type the catalog lacks gets what
// Karpenter would give it.
func TestAllocatableAL2023MatchesKarpenter(t *testing.T) {
	checked := 0
	for _, e := range defaultCatalog(t).Entries {
		if e.ENI == nil {
			continue
		}
		got := allocatableAL2023(e.VCPU, e.MemoryMiB, e.Arch, maxPods(e.ENI.MaxENIsDefaultCard, e.ENI.IPv4PerENI))
		want := e.Allocatable
		want.PodENI = nil
		if got != want {
			t.Errorf("%s: got %+v, want %+v", e.Name, got, want)
		}
		checked++
	}
	if checked != 1363 {
		t.Errorf("checked %d types, the catalog has 1363 with ENI limits", checked)
	}
}

func TestAllocatableAL2023(t *testing.T) {
	for _, tc := range []struct {
		name             string
		vcpu, memMiB     int64
		arch             string
		enis, ipv4PerENI int64
		want             catalog.Allocatable
	}{
		// 4 vCPU: 60 + 10 + 5 + 5 = 80m reserved; 16384 − 1229 (7.5 %) −
		// (11 × 58 + 255) − 100 MiB.
		{"m6i.xlarge", 4, 16384, "amd64", 4, 15, catalog.Allocatable{CPUMillicores: 3920, MemoryMiB: 14162, Pods: 58, EphemeralStorage: "17Gi"}},
		// arm64 loses 64 MiB first: 2048 − 64 − 149 − 343 − 100.
		{"a1.medium", 1, 2048, "arm64", 2, 4, catalog.Allocatable{CPUMillicores: 940, MemoryMiB: 1392, Pods: 8, EphemeralStorage: "17Gi"}},
		// 2 vCPU: 60 + 10 = 70m.
		{"t3.small", 2, 2048, "amd64", 3, 4, catalog.Allocatable{CPUMillicores: 1930, MemoryMiB: 2048 - 154 - (11*11 + 255) - 100, Pods: 11, EphemeralStorage: "17Gi"}},
		// 96 vCPU: 80 + 92 × 2.5 = 310m.
		{"c5.24xlarge", 96, 196608, "amd64", 15, 50, catalog.Allocatable{CPUMillicores: 95690, MemoryMiB: 196608 - 14746 - (11*737 + 255) - 100, Pods: 737, EphemeralStorage: "17Gi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := allocatableAL2023(tc.vcpu, tc.memMiB, tc.arch, maxPods(tc.enis, tc.ipv4PerENI)); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestFamilyNamesAndCategories: category and generation from the family
// name, and the human category, as the catalog has them for every type.
func TestFamilyNamesAndCategories(t *testing.T) {
	for _, e := range defaultCatalog(t).Entries {
		m := familyScheme.FindStringSubmatch(e.Family)
		if m == nil || m[1] != e.KarpenterCategory || m[3] != strconv.Itoa(e.Generation) {
			t.Errorf("%s: family %s parsed as %q, want category %s generation %d", e.Name, e.Family, m, e.KarpenterCategory, e.Generation)
		}
		if got := category(&e); got != e.Category {
			t.Errorf("%s: category %s, want %s", e.Name, got, e.Category)
		}
	}
}

// awsInfo is DescribeInstanceTypes' answer for a type as AWS words it:
// manufacturers and GPU names capitalised, clock in GHz, bandwidth in
// Gbps per network card.
type awsInfo struct {
	name, cpuMfr, arch string
	ghz                float64
	vcpu               int32
	memMiB             int64
	gpuName, gpuMfr    string
	gpus, gpuMemMiB    int32
	neuron             string
	neurons            int32
	nvmeGB             int64
	cardsGbps          []float64
	enisPerCard, ipv4  int32
	ebsMbps            int32
	hypervisor         ec2types.InstanceTypeHypervisor
	metal              bool
	efa                int32
}

func (a awsInfo) info() ec2types.InstanceTypeInfo {
	info := ec2types.InstanceTypeInfo{
		InstanceType: ec2types.InstanceType(a.name),
		VCpuInfo:     &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(a.vcpu)},
		MemoryInfo:   &ec2types.MemoryInfo{SizeInMiB: aws.Int64(a.memMiB)},
		ProcessorInfo: &ec2types.ProcessorInfo{
			Manufacturer:             aws.String(a.cpuMfr),
			SupportedArchitectures:   []ec2types.ArchitectureType{ec2types.ArchitectureType(a.arch)},
			SustainedClockSpeedInGhz: aws.Float64(a.ghz),
		},
		Hypervisor:                    a.hypervisor,
		BareMetal:                     aws.Bool(a.metal),
		BurstablePerformanceSupported: aws.Bool(false),
		EbsInfo: &ec2types.EbsInfo{
			EbsOptimizedSupport: ec2types.EbsOptimizedSupportDefault,
			EbsOptimizedInfo:    &ec2types.EbsOptimizedInfo{MaximumBandwidthInMbps: aws.Int32(a.ebsMbps)},
		},
		NetworkInfo: &ec2types.NetworkInfo{
			MaximumNetworkInterfaces:  aws.Int32(a.enisPerCard * int32(len(a.cardsGbps))),
			Ipv4AddressesPerInterface: aws.Int32(a.ipv4),
			MaximumNetworkCards:       aws.Int32(int32(len(a.cardsGbps))),
			DefaultNetworkCardIndex:   aws.Int32(0),
			EfaInfo:                   &ec2types.EfaInfo{MaximumEfaInterfaces: aws.Int32(a.efa)},
		},
	}
	for i, g := range a.cardsGbps {
		info.NetworkInfo.NetworkCards = append(info.NetworkInfo.NetworkCards, ec2types.NetworkCardInfo{
			NetworkCardIndex: aws.Int32(int32(i)), MaximumNetworkInterfaces: aws.Int32(a.enisPerCard), BaselineBandwidthInGbps: aws.Float64(g),
		})
	}
	if a.gpuName != "" {
		info.GpuInfo = &ec2types.GpuInfo{Gpus: []ec2types.GpuDeviceInfo{{
			Name: aws.String(a.gpuName), Manufacturer: aws.String(a.gpuMfr), Count: aws.Int32(a.gpus),
			MemoryInfo: &ec2types.GpuDeviceMemoryInfo{SizeInMiB: aws.Int32(a.gpuMemMiB)},
		}}}
	}
	if a.neuron != "" {
		info.NeuronInfo = &ec2types.NeuronInfo{NeuronDevices: []ec2types.NeuronDeviceInfo{{Name: aws.String(a.neuron), Count: aws.Int32(a.neurons)}}}
	}
	if a.nvmeGB > 0 {
		info.InstanceStorageInfo = &ec2types.InstanceStorageInfo{NvmeSupport: ec2types.EphemeralNvmeSupportRequired, TotalSizeInGB: aws.Int64(a.nvmeGB)}
	}
	return info
}

// TestEntryFromAWSShapes: types as DescribeInstanceTypes describes them
// build the same instance types (labels, capacity, overhead) as the
// catalog's entries, whether the catalog knows the type (allocatable
// taken from it) or not (allocatable computed).
func TestEntryFromAWSShapes(t *testing.T) {
	c := defaultCatalog(t)
	known := map[string]*catalog.Entry{}
	for i := range c.Entries {
		known[c.Entries[i].Name] = &c.Entries[i]
	}
	for _, a := range []awsInfo{
		{name: "m6i.xlarge", cpuMfr: "Intel", arch: "x86_64", ghz: 3.5, vcpu: 4, memMiB: 16384, cardsGbps: []float64{1.562}, enisPerCard: 4, ipv4: 15, ebsMbps: 10000, hypervisor: "nitro"},
		{name: "g5.xlarge", cpuMfr: "AMD", arch: "x86_64", ghz: 3.3, vcpu: 4, memMiB: 16384, gpuName: "A10G", gpuMfr: "NVIDIA", gpus: 1, gpuMemMiB: 22888, nvmeGB: 250, cardsGbps: []float64{2.5}, enisPerCard: 4, ipv4: 15, ebsMbps: 3500, hypervisor: "nitro"},
		{name: "g6f.large", cpuMfr: "AMD", arch: "x86_64", ghz: 3.4, vcpu: 2, memMiB: 8192, gpuName: "L4", gpuMfr: "NVIDIA", gpus: 0, gpuMemMiB: 2861, nvmeGB: 100, cardsGbps: []float64{1.5}, enisPerCard: 2, ipv4: 10, ebsMbps: 5000, hypervisor: "nitro"},
		{name: "inf2.xlarge", cpuMfr: "AMD", arch: "x86_64", ghz: 3.6, vcpu: 4, memMiB: 16384, neuron: "Inferentia2", neurons: 1, cardsGbps: []float64{2.083}, enisPerCard: 4, ipv4: 15, ebsMbps: 10000, hypervisor: "nitro"},
		{name: "a1.metal", cpuMfr: "AWS", arch: "arm64", ghz: 2.3, vcpu: 16, memMiB: 32768, cardsGbps: []float64{5}, enisPerCard: 8, ipv4: 30, ebsMbps: 3500, metal: true},
		{name: "p4d.24xlarge", cpuMfr: "Intel", arch: "x86_64", ghz: 3.0, vcpu: 96, memMiB: 1179648, gpuName: "A100", gpuMfr: "NVIDIA", gpus: 8, gpuMemMiB: 40960, nvmeGB: 8000, cardsGbps: []float64{100, 100, 100, 100}, enisPerCard: 15, ipv4: 50, ebsMbps: 19000, hypervisor: "nitro", efa: 4},
	} {
		t.Run(a.name, func(t *testing.T) {
			want := known[a.name]
			wantIT := want.InstanceType("us-east-1", nil)
			for _, k := range []*catalog.Entry{want, nil} {
				e, err := entryFrom(a.info(), k)
				if err != nil {
					t.Fatal(err)
				}
				got := e.InstanceType("us-east-1", nil)
				if !reflect.DeepEqual(got.Requirements.Labels(), wantIT.Requirements.Labels()) {
					t.Errorf("known %v: labels\ngot  %v\nwant %v", k != nil, got.Requirements.Labels(), wantIT.Requirements.Labels())
				}
				if !reflect.DeepEqual(got.Capacity, wantIT.Capacity) || !reflect.DeepEqual(got.Allocatable(), wantIT.Allocatable()) {
					t.Errorf("known %v: capacity %v allocatable %v, want %v %v", k != nil, got.Capacity, got.Allocatable(), wantIT.Capacity, wantIT.Allocatable())
				}
				if *e.ENI != *want.ENI && k != nil {
					t.Errorf("ENI %+v, want %+v", *e.ENI, *want.ENI)
				}
			}
		})
	}
}

func TestEntryFromRejects(t *testing.T) {
	good := awsInfo{name: "m6i.xlarge", cpuMfr: "Intel", arch: "x86_64", ghz: 3.5, vcpu: 4, memMiB: 16384, cardsGbps: []float64{1.562}, enisPerCard: 4, ipv4: 15, ebsMbps: 10000, hypervisor: "nitro"}
	mac := good
	mac.name, mac.arch = "mac2.metal", "arm64_mac"
	noENI := good.info()
	noENI.InstanceType = "m9z.large"
	noENI.NetworkInfo = nil
	noProcessor := good.info()
	noProcessor.ProcessorInfo = nil
	noName := good.info()
	noName.InstanceType = "weird"
	for _, tc := range []struct {
		name string
		info ec2types.InstanceTypeInfo
		want string
	}{
		{"mac", mac.info(), "mac2.metal: architectures [arm64_mac]: neither x86_64 nor arm64"},
		{"no ENI limits, unknown to the catalog", noENI, "m9z.large: DescribeInstanceTypes gave no network interface limits, so its pod limit is unknown"},
		{"no processor info", noProcessor, "m6i.xlarge: architectures []: neither x86_64 nor arm64"},
		{"not family.size", noName, `instance type "weird" is not named <family>.<size>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := entryFrom(tc.info, nil); err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %s", err, tc.want)
			}
		})
	}
}
