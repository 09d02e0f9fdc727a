// Package catalog turns the EC2 instance-type catalog (facts about real
// instance types: vCPUs, memory, GPUs, ENI limits, on-demand prices, and
// SYNTHETIC spot prices) into cloudprovider.InstanceTypes carrying the
// well-known labels Karpenter uses. The catalog file is embedded as the
// default; another can be loaded at run time.
package catalog

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

//go:embed aws-instance-types.json
var embedded []byte

// Catalog is the decoded catalog file.
type Catalog struct {
	Metadata Metadata `json:"metadata"`
	Entries  []Entry  `json:"instanceTypes"`
}

// Metadata says where the numbers come from.
type Metadata struct {
	OnDemandRegion string `json:"onDemandRegion"`
	SpotNote       string `json:"spotNote"`
	GeneratedAt    string `json:"generatedAt"`
}

// Entry is one instance type's facts.
type Entry struct {
	Name                    string             `json:"name"`
	Family                  string             `json:"family"`
	KarpenterCategory       string             `json:"karpenterCategory"`
	Generation              int                `json:"generation"`
	Size                    string             `json:"size"`
	Arch                    string             `json:"arch"`
	CPUManufacturer         string             `json:"cpuManufacturer"`
	CPUSustainedClockMHz    *int               `json:"cpuSustainedClockMHz"`
	VCPU                    int64              `json:"vcpu"`
	MemoryMiB               int64              `json:"memoryMiB"`
	GPUs                    int64              `json:"gpus"`
	GPUModel                *string            `json:"gpuModel"`
	GPUManufacturer         *string            `json:"gpuManufacturer"`
	GPUMemoryMiBPerGPU      *int64             `json:"gpuMemoryMiBPerGPU"`
	Accelerators            int64              `json:"accelerators"`
	AcceleratorModel        *string            `json:"acceleratorModel"`
	AcceleratorManufacturer *string            `json:"acceleratorManufacturer"`
	LocalNVMeGiB            *int64             `json:"localNvmeGiB"`
	NetworkBandwidthMbps    *int64             `json:"networkBandwidthMbps"`
	EBSBandwidthMbps        *int64             `json:"ebsBandwidthMbps"`
	Hypervisor              string             `json:"hypervisor"`
	OnDemandPrice           *float64           `json:"onDemandPriceUSDPerHour"`
	SpotPriceSynthetic      map[string]float64 `json:"spotPriceUSDPerHourSynthetic"`
	Allocatable             Allocatable        `json:"karpenterAllocatableAL2023"`
}

// Allocatable is Karpenter's computed allocatable for AL2023 defaults.
type Allocatable struct {
	CPUMillicores    int64  `json:"cpuMillicores"`
	MemoryMiB        int64  `json:"memoryMiB"`
	Pods             int64  `json:"pods"`
	EphemeralStorage string `json:"ephemeralStorage"`
}

// Default returns the embedded catalog.
func Default() (*Catalog, error) { return Parse(embedded, "embedded catalog") }

// LoadFile reads a catalog file in the same format as the embedded one.
func LoadFile(path string) (*Catalog, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading catalog: %w", err)
	}
	return Parse(b, path)
}

// Parse decodes a catalog, rejecting entries without the
// facts a type needs (name, vCPUs, memory, allocatable).
func Parse(b []byte, name string) (*Catalog, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var c Catalog
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for i, e := range c.Entries {
		switch {
		case e.Name == "":
			return nil, fmt.Errorf("%s: instanceTypes[%d]: name is empty", name, i)
		case e.VCPU <= 0 || e.MemoryMiB <= 0:
			return nil, fmt.Errorf("%s: instanceTypes[%d] (%s): vcpu and memoryMiB must be positive", name, i, e.Name)
		case e.Allocatable.CPUMillicores <= 0 || e.Allocatable.MemoryMiB <= 0 || e.Allocatable.Pods <= 0:
			return nil, fmt.Errorf("%s: instanceTypes[%d] (%s): karpenterAllocatableAL2023 needs cpuMillicores, memoryMiB and pods", name, i, e.Name)
		}
	}
	return &c, nil
}

// Options choose where the instance types are offered.
type Options struct {
	Region string   // default us-east-1
	Zones  []string // default the zones the synthetic spot prices name
}

// vmMemoryOverheadPercent is the share of memory the hypervisor keeps, as
// upstream Karpenter's AWS provider assumes by default.
const vmMemoryOverheadPercent = 0.075

// evictionHardMemoryMiB is the kubelet's default memory.available threshold.
const evictionHardMemoryMiB = 100

// InstanceTypes builds instance types for every catalog entry: on-demand
// offerings in each zone at the catalog price, spot offerings at the
// synthetic spot price. A type without an on-demand price has no on-demand
// offering; a type without spot prices has no spot offering.
func (c *Catalog) InstanceTypes(opts Options) []*cloudprovider.InstanceType {
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	if len(opts.Zones) == 0 {
		opts.Zones = c.zones()
	}
	out := make([]*cloudprovider.InstanceType, 0, len(c.Entries))
	for i := range c.Entries {
		out = append(out, c.Entries[i].instanceType(opts))
	}
	return out
}

func (c *Catalog) zones() []string {
	seen := map[string]bool{}
	for _, e := range c.Entries {
		for z := range e.SpotPriceSynthetic {
			seen[z] = true
		}
	}
	zones := make([]string, 0, len(seen))
	for z := range seen {
		zones = append(zones, z)
	}
	sort.Strings(zones)
	return zones
}

func (e *Entry) instanceType(opts Options) *cloudprovider.InstanceType {
	capMemMiB := e.MemoryMiB - int64(math.Ceil(float64(e.MemoryMiB)*vmMemoryOverheadPercent))
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(e.VCPU, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(capMemMiB*1024*1024, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(e.Allocatable.Pods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
	}
	if e.GPUs > 0 && e.GPUManufacturer != nil {
		if name := gpuResource(*e.GPUManufacturer); name != "" {
			capacity[corev1.ResourceName(name)] = *resource.NewQuantity(e.GPUs, resource.DecimalSI)
		}
	}
	if e.Accelerators > 0 && e.AcceleratorManufacturer != nil && *e.AcceleratorManufacturer == "aws" {
		capacity[awsv1.ResourceAWSNeuron] = *resource.NewQuantity(e.Accelerators, resource.DecimalSI)
	}
	ephemeral := resource.MustParse("17Gi")
	if e.Allocatable.EphemeralStorage != "" {
		if q, err := resource.ParseQuantity(e.Allocatable.EphemeralStorage); err == nil {
			ephemeral = q
		}
	}
	// Whatever capacity exceeds the catalog's allocatable is kube-reserved,
	// beyond the kubelet's eviction threshold.
	evictionMem := *resource.NewQuantity(evictionHardMemoryMiB*1024*1024, resource.BinarySI)
	kubeReserved := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewMilliQuantity(e.VCPU*1000-e.Allocatable.CPUMillicores, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity((capMemMiB-e.Allocatable.MemoryMiB-evictionHardMemoryMiB)*1024*1024, resource.BinarySI),
	}
	storage := capacity[corev1.ResourceEphemeralStorage]
	storage.Sub(ephemeral)
	kubeReserved[corev1.ResourceEphemeralStorage] = storage

	var offerings cloudprovider.Offerings
	for _, z := range opts.Zones {
		if e.OnDemandPrice != nil {
			offerings = append(offerings, &cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: *e.OnDemandPrice, Available: true})
		}
		if p, ok := e.SpotPriceSynthetic[z]; ok {
			offerings = append(offerings, &cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeSpot, Price: p, Available: true})
		}
	}

	labels := map[string]string{
		v1.LabelInstanceType:               e.Name,
		v1.LabelArch:                       e.Arch,
		v1.LabelOS:                         "linux",
		v1.LabelRegion:                     opts.Region,
		awsv1.LabelInstanceFamily:          e.Family,
		awsv1.LabelInstanceCategory:        e.KarpenterCategory,
		awsv1.LabelInstanceGeneration:      strconv.Itoa(e.Generation),
		awsv1.LabelInstanceSize:            e.Size,
		awsv1.LabelInstanceCPU:             strconv.FormatInt(e.VCPU, 10),
		awsv1.LabelInstanceCPUManufacturer: e.CPUManufacturer,
		awsv1.LabelInstanceMemory:          strconv.FormatInt(e.MemoryMiB, 10),
		awsv1.LabelInstanceHypervisor:      e.Hypervisor,
	}
	setInt := func(key string, v *int64) {
		if v != nil {
			labels[key] = strconv.FormatInt(*v, 10)
		}
	}
	setStr := func(key string, v *string) {
		if v != nil {
			labels[key] = *v
		}
	}
	setInt(awsv1.LabelInstanceNetworkBW, e.NetworkBandwidthMbps)
	setInt(awsv1.LabelInstanceEBSBW, e.EBSBandwidthMbps)
	setInt(awsv1.LabelInstanceLocalNVMe, e.LocalNVMeGiB)
	if e.CPUSustainedClockMHz != nil {
		labels[awsv1.LabelInstanceCPUClockMHz] = strconv.Itoa(*e.CPUSustainedClockMHz)
	}
	if e.GPUs > 0 {
		labels[awsv1.LabelInstanceGPUCount] = strconv.FormatInt(e.GPUs, 10)
		setStr(awsv1.LabelInstanceGPUName, e.GPUModel)
		setStr(awsv1.LabelInstanceGPUManufacturer, e.GPUManufacturer)
		setInt(awsv1.LabelInstanceGPUMemory, e.GPUMemoryMiBPerGPU)
	}
	if e.Accelerators > 0 {
		labels[awsv1.LabelInstanceAccelCount] = strconv.FormatInt(e.Accelerators, 10)
		setStr(awsv1.LabelInstanceAccelName, e.AcceleratorModel)
		setStr(awsv1.LabelInstanceAccelMfr, e.AcceleratorManufacturer)
	}
	reqs := scheduling.FromLabels(labels)
	zones, cts := map[string]bool{}, map[string]bool{}
	for _, o := range offerings {
		zones[o.Zone], cts[o.CapacityType] = true, true
	}
	reqs.Add(
		scheduling.NewRequirement(v1.LabelZone, corev1.NodeSelectorOpIn, keys(zones)...),
		scheduling.NewRequirement(v1.LabelCapacityType, corev1.NodeSelectorOpIn, keys(cts)...),
	)
	return &cloudprovider.InstanceType{
		Name:         e.Name,
		Requirements: reqs,
		Offerings:    offerings,
		Capacity:     capacity,
		Overhead: cloudprovider.Overhead{
			KubeReserved:      kubeReserved,
			EvictionThreshold: corev1.ResourceList{corev1.ResourceMemory: evictionMem},
		},
	}
}

func gpuResource(manufacturer string) string {
	switch manufacturer {
	case "nvidia":
		return awsv1.ResourceNVIDIAGPU
	case "amd":
		return awsv1.ResourceAMDGPU
	case "habana":
		return awsv1.ResourceHabanaGaudi
	}
	return ""
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
