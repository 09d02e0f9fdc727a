// Package catalog turns the EC2 instance-type catalog (facts about real
// instance types: vCPUs, memory, GPUs, ENI limits, on-demand prices, and
// spot prices) into cloudprovider.InstanceTypes carrying the well-known
// labels Karpenter uses. The catalog file is embedded as the default;
// another can be loaded at run time, such as one hack/gen-catalog wrote
// from a region's EC2 and Pricing APIs. Entry.InstanceType is the one
// builder of labels, capacity and overhead, shared with the AWS provider's
// live instance types.
//
// On-demand prices are per region: the catalog's own region
// (metadata.onDemandRegion, us-east-1 for the embedded file) from each
// entry, other regions from onDemandPricesUSDPerHourByRegion (the embedded
// catalog adds ondemand-prices-by-region.json, upstream Karpenter's GovCloud
// prices). For a region without prices the home region's are used and
// InstanceTypes says so in its assumptions. The embedded file's spot prices
// are SYNTHETIC: 25–65 % of the region's on-demand price, deterministic per
// type and zone, and so is every spot price of a zone a file does not name;
// a file hack/gen-catalog wrote has DescribeSpotPriceHistory's (its
// metadata.spotNote says which).
package catalog

//go:generate go run gen_regional_prices.go -repo $KARPENTER_PROVIDER_AWS -commit 1d927085dd81a9df9301e613f371dac5b4d16bfe

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	resourceapi "k8s.io/api/resource/v1"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

//go:embed aws-instance-types.json
var embedded []byte

// embeddedByRegion holds on-demand prices for regions other than the
// embedded catalog's, extracted from upstream Karpenter by
// gen_regional_prices.go; its metadata names the source commit and path.
//
//go:embed ondemand-prices-by-region.json
var embeddedByRegion []byte

// Catalog is the decoded catalog file.
type Catalog struct {
	Metadata Metadata `json:"metadata"`
	Entries  []Entry  `json:"instanceTypes"`
	// OnDemandByRegion: Linux on-demand prices (USD/hour) by region and
	// instance type, for regions other than Metadata.OnDemandRegion. A type
	// missing from a region's table is not offered in that region.
	OnDemandByRegion map[string]map[string]float64 `json:"onDemandPricesUSDPerHourByRegion,omitempty"`
}

// Metadata says where the numbers come from.
type Metadata struct {
	Source         *Source `json:"source,omitempty"`
	GeneratedAt    string  `json:"generatedAt"`
	OnDemandRegion string  `json:"onDemandRegion"`
	OnDemandNote   string  `json:"onDemandNote,omitempty"`
	MemoryNote     string  `json:"memoryNote,omitempty"`
	ENINote        string  `json:"eniNote,omitempty"`
	// SpotNote says what the spot prices are: synthetic in the embedded
	// file, DescribeSpotPriceHistory's in one hack/gen-catalog wrote.
	SpotNote                 string   `json:"spotNote"`
	TypesWithoutSpecsSkipped []string `json:"typesWithoutSpecsSkipped,omitempty"`
	Count                    int      `json:"count,omitempty"`
	CountWithOnDemandPrice   int      `json:"countWithOnDemandPrice,omitempty"`
}

// Source names what the file was made from: upstream Karpenter's
// repository for the embedded file, the AWS APIs of a region for one
// hack/gen-catalog wrote.
type Source struct {
	Repository string   `json:"repository,omitempty"`
	Commit     string   `json:"commit,omitempty"`
	Paths      []string `json:"paths,omitempty"`
	License    string   `json:"license,omitempty"`
	Region     string   `json:"region,omitempty"`
	APIs       []string `json:"apis,omitempty"`
}

// Entry is one instance type's facts.
type Entry struct {
	Name                    string  `json:"name"`
	Family                  string  `json:"family"`
	Category                string  `json:"category"`
	KarpenterCategory       string  `json:"karpenterCategory"`
	Generation              int     `json:"generation"`
	Size                    string  `json:"size"`
	Arch                    string  `json:"arch"`
	CPUManufacturer         string  `json:"cpuManufacturer"`
	CPUSustainedClockMHz    *int    `json:"cpuSustainedClockMHz"`
	VCPU                    int64   `json:"vcpu"`
	MemoryMiB               int64   `json:"memoryMiB"`
	GPUs                    int64   `json:"gpus"`
	GPUModel                *string `json:"gpuModel"`
	GPUManufacturer         *string `json:"gpuManufacturer"`
	GPUMemoryMiBPerGPU      *int64  `json:"gpuMemoryMiBPerGPU"`
	Accelerators            int64   `json:"accelerators"`
	AcceleratorModel        *string `json:"acceleratorModel"`
	AcceleratorManufacturer *string `json:"acceleratorManufacturer"`
	LocalNVMeGiB            *int64  `json:"localNvmeGiB"`
	NetworkBandwidthMbps    *int64  `json:"networkBandwidthMbps"`
	EBSBandwidthMbps        *int64  `json:"ebsBandwidthMbps"`
	Hypervisor              string  `json:"hypervisor"`
	BareMetal               bool    `json:"bareMetal"`
	Burstable               bool    `json:"burstable"`
	// EFA is the number of Elastic Fabric Adapters the type supports.
	EFA int64 `json:"efa"`
	// ENI is the type's network interface limits (nil where the source had
	// none), as DescribeInstanceTypes' NetworkInfo reports them.
	ENI                *ENI               `json:"eni,omitempty"`
	OnDemandPrice      *float64           `json:"onDemandPriceUSDPerHour"`
	SpotPriceSynthetic map[string]float64 `json:"spotPriceUSDPerHourSynthetic,omitempty"`
	Allocatable        Allocatable        `json:"karpenterAllocatableAL2023"`
	// SpecSource says where the entry's facts come from (a Karpenter docs
	// version, or DescribeInstanceTypes).
	SpecSource string `json:"specSource,omitempty"`
}

// ENI is an instance type's network interface limits.
type ENI struct {
	MaxENIs            int64 `json:"maxENIs"`
	MaxENIsDefaultCard int64 `json:"maxENIsDefaultCard"`
	IPv4PerENI         int64 `json:"ipv4PerENI"`
	// MaxPodsENI = MaxENIsDefaultCard × (IPv4PerENI − 1) + 2, the VPC CNI's
	// pod limit without prefix delegation.
	MaxPodsENI         int64 `json:"maxPodsENI"`
	BranchENIs         int64 `json:"branchENIs"`
	TrunkingCompatible bool  `json:"trunkingCompatible"`
	NetworkCards       int64 `json:"networkCards"`
}

// Allocatable is Karpenter's computed allocatable for AL2023 defaults.
type Allocatable struct {
	CPUMillicores    int64  `json:"cpuMillicores"`
	MemoryMiB        int64  `json:"memoryMiB"`
	Pods             int64  `json:"pods"`
	EphemeralStorage string `json:"ephemeralStorage"`
	// PodENI is the vpc.amazonaws.com/pod-eni count (branch interfaces of
	// a trunking-compatible type), nil where there is none.
	PodENI *int64 `json:"podENI"`
}

// Default returns the embedded catalog, with the embedded per-region
// on-demand prices.
func Default() (*Catalog, error) {
	c, err := Parse(embedded, "embedded catalog")
	if err != nil {
		return nil, err
	}
	var regional struct {
		Prices map[string]map[string]float64 `json:"onDemandPricesUSDPerHourByRegion"`
	}
	if err := json.Unmarshal(embeddedByRegion, &regional); err != nil {
		return nil, fmt.Errorf("embedded regional prices: %w", err)
	}
	if c.OnDemandByRegion == nil {
		c.OnDemandByRegion = map[string]map[string]float64{}
	}
	for r, prices := range regional.Prices {
		if _, ok := c.OnDemandByRegion[r]; !ok && r != c.HomeRegion() {
			c.OnDemandByRegion[r] = prices
		}
	}
	return c, nil
}

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
	for r, prices := range c.OnDemandByRegion {
		if !regionName.MatchString(r) {
			return nil, fmt.Errorf("%s: onDemandPricesUSDPerHourByRegion: %q is not an AWS region name", name, r)
		}
		for t, p := range prices {
			if !(p > 0) {
				return nil, fmt.Errorf("%s: onDemandPricesUSDPerHourByRegion[%s][%s]: price must be positive", name, r, t)
			}
		}
	}
	return &c, nil
}

// HomeRegion is the region of the entries' own on-demand prices
// (metadata.onDemandRegion; us-east-1 when the file does not say).
func (c *Catalog) HomeRegion() string {
	if c.Metadata.OnDemandRegion != "" {
		return c.Metadata.OnDemandRegion
	}
	return "us-east-1"
}

// Regions are the regions the catalog has on-demand prices for, sorted.
func (c *Catalog) Regions() []string {
	seen := map[string]bool{c.HomeRegion(): true}
	for r := range c.OnDemandByRegion {
		seen[r] = true
	}
	return keys(seen)
}

// Options choose where the instance types are offered.
type Options struct {
	// Region, e.g. us-west-2; default us-east-1.
	Region string
	// Zones of Region, e.g. us-west-2a; default the zones the catalog's
	// spot prices name in Region, else Region's a, b and c (an assumption).
	Zones []string
}

var (
	// regionName: us-east-1, ap-southeast-2, us-gov-west-1, …
	regionName = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
	// zoneSuffix: what follows the region in an availability zone (a),
	// a Local Zone (-lax-1a) or a Wavelength Zone (-wl1-bos-wlz-1).
	zoneSuffix = regexp.MustCompile(`^([a-z]|-[a-z0-9]+(-[a-z0-9]+)*)$`)
)

// vmMemoryOverheadPercent is the share of memory the hypervisor keeps, as
// upstream Karpenter's AWS provider assumes by default.
const vmMemoryOverheadPercent = 0.075

// evictionHardMemoryMiB is the kubelet's default memory.available threshold.
const evictionHardMemoryMiB = 100

// InstanceTypes builds an instance type for every catalog entry, offered in
// opts.Zones: on demand at the region's price, spot at a synthetic price
// (the catalog's for a zone it names, else SyntheticSpotPrice of the
// region's on-demand price). A type without an on-demand price in the
// region has no offerings there.
//
// Errors: a region that is not an AWS region name, a zone outside the
// region, a zone listed twice. The assumptions (for a report) say what was
// taken without data: a region the catalog has no prices for gets the home
// region's (us-east-1's) prices, and a region without zones gets a, b and c.
func (c *Catalog) InstanceTypes(opts Options) ([]*cloudprovider.InstanceType, []string, error) {
	region := opts.Region
	if region == "" {
		region = "us-east-1"
	}
	if !regionName.MatchString(region) {
		return nil, nil, fmt.Errorf("region %q is not an AWS region name (such as us-east-1 or us-west-2); the catalog has prices for %s",
			region, strings.Join(c.Regions(), ", "))
	}
	var assumptions []string
	zones := opts.Zones
	seen := map[string]bool{}
	for _, z := range zones {
		if !strings.HasPrefix(z, region) || !zoneSuffix.MatchString(z[len(region):]) {
			return nil, nil, fmt.Errorf("zone %q is not in region %s: its zones are named %sa, %sb, …", z, region, region, region)
		}
		if seen[z] {
			return nil, nil, fmt.Errorf("zone %q is listed twice", z)
		}
		seen[z] = true
	}
	if len(zones) == 0 {
		if zones = c.zones(region); len(zones) == 0 {
			zones = []string{region + "a", region + "b", region + "c"}
			assumptions = append(assumptions, fmt.Sprintf("no zones given for %s: %s assumed", region, strings.Join(zones, ", ")))
		}
	}
	home := c.HomeRegion()
	var table map[string]float64
	if region != home {
		if table = c.OnDemandByRegion[region]; table == nil {
			assumptions = append(assumptions, fmt.Sprintf(
				"no on-demand prices for %s (the catalog has %s): %s prices are used, and every type priced in %s is taken to be offered in %s",
				region, strings.Join(c.Regions(), ", "), home+"'s", home, region))
		}
	}
	out := make([]*cloudprovider.InstanceType, 0, len(c.Entries))
	for i := range c.Entries {
		e := &c.Entries[i]
		price := e.OnDemandPrice
		if table != nil {
			price = nil
			if p, ok := table[e.Name]; ok {
				price = &p
			}
		}
		out = append(out, e.InstanceType(region, e.offerings(zones, price)))
	}
	return out, assumptions, nil
}

// Zones are the catalog's zones in region, those its spot prices name
// (none for a region it has no spot prices for), sorted.
func (c *Catalog) Zones(region string) []string { return c.zones(region) }

// zones are the catalog's zones in region: those its spot prices name.
func (c *Catalog) zones(region string) []string {
	seen := map[string]bool{}
	for _, e := range c.Entries {
		for z := range e.SpotPriceSynthetic {
			if strings.HasPrefix(z, region) && zoneSuffix.MatchString(z[len(region):]) {
				seen[z] = true
			}
		}
	}
	return keys(seen)
}

// SyntheticSpotPrice is a made-up spot price, NOT market data: a fraction
// between 25 % and 65 % of the on-demand price, fixed by the SHA-256 of
// "type/zone" (the zone names its region), rounded to 6 decimals. It is the
// rule the embedded catalog's us-east-1 spot prices were made with.
func SyntheticSpotPrice(instanceType, zone string, onDemand float64) float64 {
	sum := sha256.Sum256([]byte(instanceType + "/" + zone))
	f := float64(binary.BigEndian.Uint32(sum[:4])) / math.MaxUint32
	return math.Round(onDemand*(0.25+0.40*f)*1e6) / 1e6
}

// offerings are e's offerings in zones: on demand at the price given (nil:
// not offered in the region, so no offerings at all), spot at the
// catalog's price for a zone it names, else SyntheticSpotPrice.
func (e *Entry) offerings(zones []string, onDemand *float64) cloudprovider.Offerings {
	if onDemand == nil {
		return nil
	}
	var offerings cloudprovider.Offerings
	for _, z := range zones {
		offerings = append(offerings, &cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: *onDemand, Available: true})
		spot, ok := e.SpotPriceSynthetic[z]
		if !ok {
			spot = SyntheticSpotPrice(e.Name, z, *onDemand)
		}
		offerings = append(offerings, &cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeSpot, Price: spot, Available: true})
	}
	return offerings
}

// InstanceType builds e's instance type in region with the offerings
// given: the labels, capacity and overhead Karpenter gives the type (from
// the entry's facts and its AL2023 allocatable), and zone and capacity-type
// requirements spanning the offerings. Both the catalog and the AWS
// provider's live instance types (built from DescribeInstanceTypes into
// Entry values) are made here, so they cannot drift apart.
func (e *Entry) InstanceType(region string, offerings cloudprovider.Offerings) *cloudprovider.InstanceType {
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

	labels := map[string]string{
		v1.LabelInstanceType:               e.Name,
		v1.LabelArch:                       e.Arch,
		v1.LabelOS:                         "linux",
		v1.LabelRegion:                     region,
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
	// As upstream: a type with GPUs is labelled with their count, name,
	// manufacturer and memory (MiB per GPU); a fractional-GPU type (g6f,
	// gr6f: a share of one L4) too, with count 0, and no nvidia.com/gpu.
	if e.GPUs > 0 || e.GPUManufacturer != nil {
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
		Devices: e.gpuDevices(),
	}
}

// GPUDrivers are the DRA drivers whose devices Joiner models, by the
// catalog's GPU manufacturer: NVIDIA's (k8s-dra-driver-gpu) and AMD's.
// Neither upstream Karpenter provider publishes such templates; these are
// Joiner's, from the catalog's facts.
var GPUDrivers = map[string]string{"nvidia": "gpu.nvidia.com", "amd": "gpu.amd.com"}

// gpuDevices are the GPUs a node of the type publishes through its DRA
// driver: one device each, named gpu-0, gpu-1, …, with the attributes
// type ("gpu"), productName (the catalog's model, e.g. a10g) and index,
// and its memory as capacity, as NVIDIA's driver publishes them.
func (e *Entry) gpuDevices() []cloudprovider.DeviceSlice {
	if e.GPUs <= 0 || e.GPUManufacturer == nil || GPUDrivers[*e.GPUManufacturer] == "" {
		return nil
	}
	slice := cloudprovider.DeviceSlice{Driver: GPUDrivers[*e.GPUManufacturer]}
	for i := range e.GPUs {
		d := resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i), Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"type":  {StringValue: ptr("gpu")},
			"index": {IntValue: ptr(i)},
		}}
		if e.GPUModel != nil {
			d.Attributes["productName"] = resourceapi.DeviceAttribute{StringValue: e.GPUModel}
		}
		if e.GPUMemoryMiBPerGPU != nil {
			d.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{
				"memory": {Value: *resource.NewQuantity(*e.GPUMemoryMiBPerGPU*1024*1024, resource.BinarySI)}}
		}
		slice.Devices = append(slice.Devices, d)
	}
	return []cloudprovider.DeviceSlice{slice}
}

func ptr[T any](v T) *T { return &v }

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
