package catalog

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// TestGPULabelsAndCapacity: the labels and device capacity upstream
// karpenter-provider-aws gives these types (its instance-types.md and
// pkg/providers/instancetype/types.go): every type with a GPU carries its
// count, name, manufacturer and memory (MiB per GPU); fractional-GPU types
// (g6f, gr6f) carry count 0 and no nvidia.com/gpu.
func TestGPULabelsAndCapacity(t *testing.T) {
	its := byName(t)
	type want struct {
		count, name, manufacturer, memory string // "" = label absent
		nvidia                            int64
		accel                             string // accelerator name
		neuron                            int64
	}
	for _, tc := range []struct {
		typ  string
		want want
	}{
		{"g5.xlarge", want{"1", "a10g", "nvidia", "22888", 1, "", 0}},
		{"g6.12xlarge", want{"4", "l4", "nvidia", "22888", 4, "", 0}},
		{"p4d.24xlarge", want{"8", "a100", "nvidia", "40960", 8, "", 0}},
		{"g6f.large", want{"0", "l4", "nvidia", "2861", 0, "", 0}},
		{"gr6f.4xlarge", want{"0", "l4", "nvidia", "11444", 0, "", 0}},
		{"inf2.xlarge", want{"", "", "", "", 0, "inferentia2", 1}},
		{"m6i.xlarge", want{"", "", "", "", 0, "", 0}},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			it := its[tc.typ]
			if it == nil {
				t.Fatalf("%s missing", tc.typ)
			}
			get := func(key string) string {
				if !it.Requirements.Has(key) {
					return ""
				}
				return label(it, key)
			}
			got := want{
				count: get(awsv1.LabelInstanceGPUCount), name: get(awsv1.LabelInstanceGPUName),
				manufacturer: get(awsv1.LabelInstanceGPUManufacturer), memory: get(awsv1.LabelInstanceGPUMemory),
				accel: get(awsv1.LabelInstanceAccelName),
			}
			q := it.Capacity[awsv1.ResourceNVIDIAGPU]
			got.nvidia = q.Value()
			q = it.Capacity[awsv1.ResourceAWSNeuron]
			got.neuron = q.Value()
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestGPUManufacturerRequirementMatchesEveryNVIDIAType: a NodePool asking
// for instance-gpu-manufacturer In [nvidia] gets every NVIDIA type the
// catalog has, fractional ones included, and nothing else.
func TestGPUManufacturerRequirementMatchesEveryNVIDIAType(t *testing.T) {
	its := byName(t)
	c, _ := Default()
	req := scheduling.NewRequirements(scheduling.NewRequirement(awsv1.LabelInstanceGPUManufacturer, corev1.NodeSelectorOpIn, "nvidia"))
	n := 0
	for _, e := range c.Entries {
		isNVIDIA := e.GPUManufacturer != nil && *e.GPUManufacturer == "nvidia"
		if matches := its[e.Name].Requirements.Compatible(req, nil) == nil; matches != isNVIDIA {
			t.Errorf("%s: matches nvidia = %v, want %v", e.Name, matches, isNVIDIA)
		}
		if isNVIDIA {
			n++
		}
	}
	for _, name := range []string{"g6f.large", "g6f.xlarge", "g6f.2xlarge", "g6f.4xlarge", "gr6f.4xlarge"} {
		if its[name].Requirements.Compatible(req, nil) != nil {
			t.Errorf("fractional-GPU type %s does not match instance-gpu-manufacturer In [nvidia]", name)
		}
	}
	if n != 75 {
		t.Errorf("%d NVIDIA types, the catalog has 75", n)
	}
}

func offeringsOf(it *cloudprovider.InstanceType, ct string) map[string]float64 {
	out := map[string]float64{}
	for _, o := range it.Offerings {
		if o.CapacityType == ct {
			out[o.Zone] = o.Price
		}
	}
	return out
}

func TestRegions(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Regions(), ","); got != "us-east-1,us-gov-east-1,us-gov-west-1" {
		t.Errorf("Regions() = %s", got)
	}
	for _, tc := range []struct {
		name        string
		opts        Options
		err         string   // substring; "" = no error
		assumptions []string // substrings, one per assumption
		typ         string
		onDemand    map[string]float64 // zone → price; nil = no on-demand offering
		spotZones   []string
	}{
		{name: "us-east-1 as today", opts: Options{Region: "us-east-1", Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
			typ: "m6i.xlarge", onDemand: map[string]float64{"us-east-1a": 0.192, "us-east-1b": 0.192, "us-east-1c": 0.192},
			spotZones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}},
		{name: "us-east-1, a zone the catalog's spot prices do not name", opts: Options{Region: "us-east-1", Zones: []string{"us-east-1d"}},
			typ: "m6i.xlarge", onDemand: map[string]float64{"us-east-1d": 0.192}, spotZones: []string{"us-east-1d"}},
		{name: "us-west-2: us-east-1 prices, said so", opts: Options{Region: "us-west-2", Zones: []string{"us-west-2a", "us-west-2b", "us-west-2c"}},
			assumptions: []string{"no on-demand prices for us-west-2 (the catalog has us-east-1, us-gov-east-1, us-gov-west-1): us-east-1's prices are used, and every type priced in us-east-1 is taken to be offered in us-west-2"},
			typ:         "m6i.xlarge", onDemand: map[string]float64{"us-west-2a": 0.192, "us-west-2b": 0.192, "us-west-2c": 0.192},
			spotZones: []string{"us-west-2a", "us-west-2b", "us-west-2c"}},
		{name: "us-west-2 without zones", opts: Options{Region: "us-west-2"},
			assumptions: []string{"no zones given for us-west-2: us-west-2a, us-west-2b, us-west-2c assumed", "no on-demand prices for us-west-2"},
			typ:         "g6f.large", onDemand: map[string]float64{"us-west-2a": 0.202, "us-west-2b": 0.202, "us-west-2c": 0.202},
			spotZones: []string{"us-west-2a", "us-west-2b", "us-west-2c"}},
		{name: "us-gov-west-1: the regional table", opts: Options{Region: "us-gov-west-1", Zones: []string{"us-gov-west-1a", "us-gov-west-1b"}},
			typ: "m6i.xlarge", onDemand: map[string]float64{"us-gov-west-1a": 0.242, "us-gov-west-1b": 0.242},
			spotZones: []string{"us-gov-west-1a", "us-gov-west-1b"}},
		{name: "us-gov-west-1: a type it does not offer", opts: Options{Region: "us-gov-west-1", Zones: []string{"us-gov-west-1a"}},
			typ: "g5.xlarge"},
		{name: "a local zone", opts: Options{Region: "us-west-2", Zones: []string{"us-west-2-lax-1a"}},
			assumptions: []string{"no on-demand prices for us-west-2"},
			typ:         "m6i.xlarge", onDemand: map[string]float64{"us-west-2-lax-1a": 0.192}, spotZones: []string{"us-west-2-lax-1a"}},
		{name: "not a region", opts: Options{Region: "mars-1"},
			err: `region "mars-1" is not an AWS region name (such as us-east-1 or us-west-2); the catalog has prices for us-east-1, us-gov-east-1, us-gov-west-1`},
		{name: "zone of another region", opts: Options{Region: "us-west-2", Zones: []string{"us-west-2a", "us-east-1a"}},
			err: `zone "us-east-1a" is not in region us-west-2: its zones are named us-west-2a, us-west-2b, …`},
		{name: "zone of a region with a longer number", opts: Options{Region: "us-east-1", Zones: []string{"us-east-11a"}},
			err: `zone "us-east-11a" is not in region us-east-1`},
		{name: "zone of the default region", opts: Options{Zones: []string{"us-west-2a"}},
			err: `zone "us-west-2a" is not in region us-east-1`},
		{name: "zone twice", opts: Options{Region: "us-west-2", Zones: []string{"us-west-2a", "us-west-2a"}},
			err: `zone "us-west-2a" is listed twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			its, assumptions, err := c.InstanceTypes(tc.opts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(assumptions) != len(tc.assumptions) {
				t.Fatalf("assumptions = %q, want %d", assumptions, len(tc.assumptions))
			}
			for i, want := range tc.assumptions {
				if !strings.Contains(assumptions[i], want) {
					t.Errorf("assumption %d = %q, want it to contain %q", i, assumptions[i], want)
				}
			}
			var it *cloudprovider.InstanceType
			for _, x := range its {
				if x.Name == tc.typ {
					it = x
				}
			}
			if it == nil {
				t.Fatalf("%s missing", tc.typ)
			}
			if got := offeringsOf(it, v1.CapacityTypeOnDemand); !reflect.DeepEqual(got, tc.onDemand) && (len(got) != 0 || tc.onDemand != nil) {
				t.Errorf("on-demand offerings = %v, want %v", got, tc.onDemand)
			}
			spot := offeringsOf(it, v1.CapacityTypeSpot)
			if len(spot) != len(tc.spotZones) {
				t.Errorf("spot offerings = %v, want zones %v", spot, tc.spotZones)
			}
			for _, z := range tc.spotZones {
				od, p := tc.onDemand[z], spot[z]
				if p < 0.25*od-1e-6 || p > 0.65*od+1e-6 {
					t.Errorf("spot %s = %v, not 25–65 %% of on-demand %v", z, p, od)
				}
				if p != SyntheticSpotPrice(tc.typ, z, od) {
					t.Errorf("spot %s = %v, want SyntheticSpotPrice %v", z, p, SyntheticSpotPrice(tc.typ, z, od))
				}
			}
			if got := label(it, v1.LabelRegion); got != tc.opts.Region && (tc.opts.Region != "" || got != "us-east-1") {
				t.Errorf("region label = %s", got)
			}
			zones := append([]string(nil), tc.spotZones...)
			if len(tc.onDemand) == 0 {
				zones = []string{}
			}
			if got := it.Requirements.Get(v1.LabelZone).Values(); !reflect.DeepEqual(got, zones) && (len(got) != 0 || len(zones) != 0) {
				t.Errorf("zone requirement = %v, want %v", got, zones)
			}
		})
	}
}

// TestSyntheticSpotPriceIsTheCatalogsRule: the rule for zones the catalog
// does not name is the one its us-east-1 spot prices were made with, so a
// region's spot prices are made alike everywhere.
func TestSyntheticSpotPriceIsTheCatalogsRule(t *testing.T) {
	c, _ := Default()
	n := 0
	for _, e := range c.Entries {
		for z, p := range e.SpotPriceSynthetic {
			n++
			if got := SyntheticSpotPrice(e.Name, z, *e.OnDemandPrice); got != p {
				t.Errorf("%s %s: SyntheticSpotPrice = %v, catalog %v", e.Name, z, got, p)
			}
		}
	}
	if n != 4092 {
		t.Errorf("%d catalog spot prices, want 4092", n)
	}
	if a, b := SyntheticSpotPrice("m6i.xlarge", "us-west-2a", 0.192), SyntheticSpotPrice("m6i.xlarge", "eu-west-1a", 0.192); a == b {
		t.Errorf("same spot price %v in us-west-2a and eu-west-1a", a)
	}
}

// TestDeterministic: the same options give the same instance types.
func TestDeterministic(t *testing.T) {
	c, _ := Default()
	render := func() string {
		its, as, err := c.InstanceTypes(Options{Region: "us-west-2", Zones: []string{"us-west-2a", "us-west-2b", "us-west-2c"}})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		fmt.Fprintln(&b, as)
		for _, it := range its {
			fmt.Fprintln(&b, it.Name, it.Requirements.String())
			for _, o := range it.Offerings {
				fmt.Fprintln(&b, " ", *o)
			}
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, awsv1.ResourceNVIDIAGPU} {
				q := it.Capacity[r]
				fmt.Fprintln(&b, " ", r, q.String())
			}
		}
		return b.String()
	}
	if a, b := render(), render(); a != b {
		t.Error("two builds differ")
	}
}

func TestParseRegionalPrices(t *testing.T) {
	const entry = `{"name":"m6i.xlarge","vcpu":4,"memoryMiB":16384,"onDemandPriceUSDPerHour":0.2,"karpenterAllocatableAL2023":{"cpuMillicores":3920,"memoryMiB":14162,"pods":58}}`
	c, err := Parse([]byte(`{"metadata":{"onDemandRegion":"eu-west-1"},"instanceTypes":[`+entry+`],"onDemandPricesUSDPerHourByRegion":{"eu-central-1":{"m6i.xlarge":0.23}}}`), "own.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Regions(), ","); got != "eu-central-1,eu-west-1" {
		t.Errorf("Regions() = %s", got)
	}
	for region, want := range map[string]float64{"eu-west-1": 0.2, "eu-central-1": 0.23} {
		its, as, err := c.InstanceTypes(Options{Region: region, Zones: []string{region + "a"}})
		if err != nil || len(as) != 0 {
			t.Fatalf("%s: err %v, assumptions %q", region, err, as)
		}
		if got := offeringsOf(its[0], v1.CapacityTypeOnDemand)[region+"a"]; got != want {
			t.Errorf("%s: on-demand %v, want %v", region, got, want)
		}
	}
	// The catalog's own region's default zones come from its spot prices;
	// it has none, so a, b and c are assumed, and said.
	if _, as, _ := c.InstanceTypes(Options{Region: "eu-west-1"}); len(as) != 1 || !strings.Contains(as[0], "eu-west-1a, eu-west-1b, eu-west-1c assumed") {
		t.Errorf("assumptions = %q", as)
	}
	for doc, want := range map[string]string{
		`{"instanceTypes":[],"onDemandPricesUSDPerHourByRegion":{"moon":{"m6i.xlarge":1}}}`:      `bad.json: onDemandPricesUSDPerHourByRegion: "moon" is not an AWS region name`,
		`{"instanceTypes":[],"onDemandPricesUSDPerHourByRegion":{"us-west-2":{"m6i.xlarge":0}}}`: `bad.json: onDemandPricesUSDPerHourByRegion[us-west-2][m6i.xlarge]: price must be positive`,
	} {
		if _, err := Parse([]byte(doc), "bad.json"); err == nil || err.Error() != want {
			t.Errorf("got %v, want %s", err, want)
		}
	}
}

func BenchmarkInstanceTypes(b *testing.B) {
	c, _ := Default()
	for _, region := range []string{"us-east-1", "us-west-2"} {
		b.Run(region, func(b *testing.B) {
			opts := Options{Region: region, Zones: []string{region + "a", region + "b", region + "c"}}
			for b.Loop() {
				if _, _, err := c.InstanceTypes(opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestGPUDeviceTemplates: a type with whole GPUs publishes them through
// its manufacturer's DRA driver, one device each with the product and its
// memory; a fractional-GPU type, an accelerator type and a CPU type
// publish none.
func TestGPUDeviceTemplates(t *testing.T) {
	its := byName(t)
	for _, tc := range []struct {
		typ     string
		devices int
		product string
		memory  string
	}{
		{"g5.xlarge", 1, "a10g", "22888Mi"},
		{"p4d.24xlarge", 8, "a100", "40Gi"},
		{"g6f.large", 0, "", ""},
		{"inf2.xlarge", 0, "", ""},
		{"m6i.xlarge", 0, "", ""},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			it := its[tc.typ]
			if tc.devices == 0 {
				if len(it.Devices) != 0 {
					t.Fatalf("devices %+v, want none", it.Devices)
				}
				return
			}
			if len(it.Devices) != 1 || it.Devices[0].Driver != "gpu.nvidia.com" || len(it.Devices[0].Devices) != tc.devices {
				t.Fatalf("devices %+v, want %d of gpu.nvidia.com", it.Devices, tc.devices)
			}
			for i, d := range it.Devices[0].Devices {
				mem := d.Capacity["memory"].Value
				if d.Name != fmt.Sprintf("gpu-%d", i) || *d.Attributes["productName"].StringValue != tc.product || *d.Attributes["index"].IntValue != int64(i) || mem.String() != tc.memory {
					t.Errorf("device %d: %+v, want gpu-%d, %s, %s", i, d, i, tc.product, tc.memory)
				}
			}
		})
	}
}
