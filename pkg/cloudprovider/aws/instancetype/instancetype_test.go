package instancetype_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws/fake"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/aws/instancetype"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

var zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// env is the Standard fake account with a provider over SDK clients for it.
type env struct {
	aws     *fake.AWS
	ec2     *ec2.Client
	pricing *pricing.Client
	clock   *clocktesting.FakeClock
	catalog *catalog.Catalog
}

func newEnv(t *testing.T) *env {
	t.Helper()
	f := fake.Standard(fake.StandardOptions{Region: "us-east-1", Cluster: "production", KubernetesVersion: "1.37"})
	t.Cleanup(f.Close)
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.Config()
	return &env{
		aws:     f,
		ec2:     ec2.NewFromConfig(cfg),
		pricing: pricing.NewFromConfig(cfg),
		clock:   clocktesting.NewFakeClock(time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)),
		catalog: c,
	}
}

func (e *env) provider(ec2API instancetype.EC2API, pricingAPI instancetype.PricingAPI) *instancetype.Provider {
	if ec2API == nil {
		ec2API = e.ec2
	}
	if pricingAPI == nil {
		pricingAPI = e.pricing
	}
	return instancetype.New(ec2API, pricingAPI, instancetype.Options{Region: "us-east-1", Clock: e.clock})
}

// catalogTypes are the embedded catalog's instance types in zones, by name.
func (e *env) catalogTypes(t *testing.T, zones []string) map[string]*cloudprovider.InstanceType {
	t.Helper()
	its, _, err := e.catalog.InstanceTypes(catalog.Options{Region: "us-east-1", Zones: zones})
	if err != nil {
		t.Fatal(err)
	}
	return byName(its)
}

func byName(its []*cloudprovider.InstanceType) map[string]*cloudprovider.InstanceType {
	out := map[string]*cloudprovider.InstanceType{}
	for _, it := range its {
		out[it.Name] = it
	}
	return out
}

// describe is everything a scheduler sees of a type, as text.
func describe(it *cloudprovider.InstanceType) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n  requirements %s\n", it.Name, it.Requirements.String())
	for _, r := range []struct {
		name string
		list map[string]string
	}{{"capacity", quantities(it.Capacity)}, {"overhead", quantities(it.Overhead.Total())}, {"allocatable", quantities(it.Allocatable())}} {
		keys := make([]string, 0, len(r.list))
		for k := range r.list {
			keys = append(keys, k+"="+r.list[k])
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "  %s %s\n", r.name, strings.Join(keys, " "))
	}
	offerings := make([]string, 0, len(it.Offerings))
	for _, o := range it.Offerings {
		offerings = append(offerings, fmt.Sprintf("%s/%s %v %v", o.Zone, o.CapacityType, o.Price, o.Available))
	}
	sort.Strings(offerings)
	fmt.Fprintf(&b, "  offerings %s\n", strings.Join(offerings, ", "))
	return b.String()
}

func quantities(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

// TestListMatchesCatalog: over the Standard account (the embedded catalog
// seeded in three zones), List gives every catalog type that has a price,
// with the seeded on-demand and spot prices, and labels, capacity and
// overhead equal to the catalog path's; the 18 types without a price are
// not offered, so not listed.
func TestListMatchesCatalog(t *testing.T) {
	e := newEnv(t)
	p := e.provider(nil, nil)
	its, err := p.List(context.Background(), zones)
	if err != nil {
		t.Fatal(err)
	}
	want := e.catalogTypes(t, zones)
	got := byName(its)
	if len(got) != 1364 {
		t.Errorf("listed %d types, want the catalog's 1364 with a price", len(got))
	}
	for name, w := range want {
		g := got[name]
		if g == nil {
			if len(w.Offerings) > 0 {
				t.Errorf("%s missing", name)
			}
			continue
		}
		if dg, dw := describe(g), describe(w); dg != dw {
			t.Errorf("%s differs from the catalog path:\ngot  %s\nwant %s", name, dg, dw)
		}
	}
	if src := p.Source(); !strings.HasPrefix(src, "EC2 and Pricing APIs (us-east-1, refreshed 2026-12-03T08:00:00Z)") || strings.Contains(src, "without") {
		t.Errorf("Source() = %q", src)
	}
	calls := map[string]int{}
	for _, c := range e.aws.Invocations() {
		calls[c.IAMAction()]++
	}
	// 1382 types, 100 a page; 1364 × 3 offerings and spot prices, 1000 a
	// page; on-demand prices 100 a page (the Pricing API's default). One
	// invocation a page: the SDK's retries of a request (the transport drops
	// a kept-alive connection now and then on a busy machine) are folded in.
	for action, n := range map[string]int{"ec2:DescribeInstanceTypes": 14, "ec2:DescribeInstanceTypeOfferings": 5, "ec2:DescribeSpotPriceHistory": 5, "pricing:GetProducts": 14} {
		if calls[action] != n {
			t.Errorf("%s invoked %d times, want %d (one per page); all: %v", action, calls[action], n, calls)
		}
	}
}

// TestListCopies: the caller may mark offerings unavailable; the next List
// is not affected.
func TestListCopies(t *testing.T) {
	p := newEnv(t).provider(nil, nil)
	first, _ := p.List(context.Background(), zones)
	for _, it := range first {
		for _, o := range it.Offerings {
			o.Available = false
		}
	}
	second, _ := p.List(context.Background(), zones)
	for _, it := range second {
		if len(it.Offerings) > 0 && len(it.Offerings.Available()) != len(it.Offerings) {
			t.Fatalf("%s: an earlier caller's change shows", it.Name)
		}
	}
}

// offeringsFilter drops some of DescribeInstanceTypeOfferings' answer.
type offeringsFilter struct {
	instancetype.EC2API
	drop func(ec2types.InstanceTypeOffering) bool
}

func (o offeringsFilter) DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	out, err := o.EC2API.DescribeInstanceTypeOfferings(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	kept := out.InstanceTypeOfferings[:0]
	for _, it := range out.InstanceTypeOfferings {
		if !o.drop(it) {
			kept = append(kept, it)
		}
	}
	out.InstanceTypeOfferings = kept
	return out, nil
}

// productsFilter drops price-list entries naming a type.
type productsFilter struct {
	instancetype.PricingAPI
	drop string
}

func (p productsFilter) GetProducts(ctx context.Context, in *pricing.GetProductsInput, opts ...func(*pricing.Options)) (*pricing.GetProductsOutput, error) {
	out, err := p.PricingAPI.GetProducts(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	kept := out.PriceList[:0]
	for _, s := range out.PriceList {
		if !strings.Contains(s, `"instanceType":"`+p.drop+`"`) {
			kept = append(kept, s)
		}
	}
	out.PriceList = kept
	return out, nil
}

func zonesOf(it *cloudprovider.InstanceType, capacityType string) []string {
	var out []string
	for _, o := range it.Offerings {
		if o.CapacityType == capacityType {
			out = append(out, o.Zone)
		}
	}
	sort.Strings(out)
	return out
}

// TestOfferedZonesAndPrices: a type offered in one zone has offerings only
// there (and is not listed for the others); a type offered without an
// on-demand price has spot offerings only, and Source says so.
func TestOfferedZonesAndPrices(t *testing.T) {
	e := newEnv(t)
	onlyA := offeringsFilter{EC2API: e.ec2, drop: func(o ec2types.InstanceTypeOffering) bool {
		return o.InstanceType == "m6i.xlarge" && *o.Location != "us-east-1a"
	}}
	p := e.provider(onlyA, productsFilter{PricingAPI: e.pricing, drop: "c6i.large"})
	ctx := context.Background()
	its, err := p.List(ctx, zones)
	if err != nil {
		t.Fatal(err)
	}
	got := byName(its)
	m6i := got["m6i.xlarge"]
	for _, ct := range []string{v1.CapacityTypeOnDemand, v1.CapacityTypeSpot} {
		if z := zonesOf(m6i, ct); strings.Join(z, ",") != "us-east-1a" {
			t.Errorf("m6i.xlarge %s offerings in %v, want us-east-1a only", ct, z)
		}
	}
	if z := m6i.Requirements.Get(v1.LabelZone).Values(); strings.Join(z, ",") != "us-east-1a" {
		t.Errorf("m6i.xlarge zone requirement %v", z)
	}
	c6i := got["c6i.large"]
	if z := zonesOf(c6i, v1.CapacityTypeOnDemand); len(z) != 0 {
		t.Errorf("c6i.large has no on-demand price but on-demand offerings in %v", z)
	}
	if z := zonesOf(c6i, v1.CapacityTypeSpot); len(z) != 3 {
		t.Errorf("c6i.large spot offerings in %v, want all three zones", z)
	}
	if ct := c6i.Requirements.Get(v1.LabelCapacityType).Values(); strings.Join(ct, ",") != "spot" {
		t.Errorf("c6i.large capacity types %v, want spot only", ct)
	}
	if src := p.Source(); !strings.Contains(src, "1 offered type(s) without an on-demand price, so without on-demand offerings: c6i.large") {
		t.Errorf("Source() = %q, want it to name c6i.large's missing price", src)
	}

	onlyB, err := p.List(ctx, []string{"us-east-1b"})
	if err != nil {
		t.Fatal(err)
	}
	if byName(onlyB)["m6i.xlarge"] != nil {
		t.Error("m6i.xlarge is listed for us-east-1b, which does not offer it")
	}
}

// TestPricingUnavailable: a failing Pricing API keeps the last good
// on-demand prices; one that never answered leaves the embedded
// catalog's; Source says which.
func TestPricingUnavailable(t *testing.T) {
	ctx := context.Background()
	t.Run("after a good refresh", func(t *testing.T) {
		e := newEnv(t)
		p := e.provider(nil, nil)
		before, _ := p.List(ctx, zones)
		e.aws.PricingUnavailable(true)
		e.clock.Step(5 * time.Minute)
		if err := p.Refresh(ctx); err == nil || !strings.Contains(err.Error(), "pricing GetProducts") {
			t.Fatalf("Refresh with Pricing down: %v", err)
		}
		after, _ := p.List(ctx, zones)
		b, a := byName(before), byName(after)
		if len(a) != len(b) {
			t.Fatalf("%d types after, %d before", len(a), len(b))
		}
		for name, it := range b {
			if describe(a[name]) != describe(it) {
				t.Errorf("%s changed:\n%s\n%s", name, describe(a[name]), describe(it))
			}
		}
		src := p.Source()
		for _, want := range []string{
			"instance types from the EC2 API (refreshed 2026-12-03T08:05:00Z)",
			"on-demand prices from the Pricing API as of 2026-12-03T08:00:00Z, kept: pricing GetProducts",
			"spot prices from the EC2 API (refreshed 2026-12-03T08:05:00Z)",
		} {
			if !strings.Contains(src, want) {
				t.Errorf("Source() = %q, want it to say %q", src, want)
			}
		}
		e.aws.PricingUnavailable(false)
		if err := p.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if src := p.Source(); !strings.HasPrefix(src, "EC2 and Pricing APIs") {
			t.Errorf("after Pricing is back, Source() = %q", src)
		}
	})
	t.Run("never answered", func(t *testing.T) {
		e := newEnv(t)
		e.aws.PricingUnavailable(true)
		p := e.provider(nil, nil)
		its, _ := p.List(ctx, zones)
		want := e.catalogTypes(t, zones)
		if len(its) != 1364 {
			t.Errorf("listed %d types, want 1364", len(its))
		}
		for _, it := range its {
			if describe(it) != describe(want[it.Name]) {
				t.Errorf("%s differs from the catalog's:\n%s\n%s", it.Name, describe(it), describe(want[it.Name]))
			}
		}
		if src := p.Source(); !strings.Contains(src, "on-demand prices from the embedded catalog: pricing GetProducts") {
			t.Errorf("Source() = %q", src)
		}
	})
}

// TestNothingEverSucceeded: with no AWS reachable, List serves the
// embedded catalog exactly as the catalog path does, and Source says so;
// when AWS answers, the next Refresh takes over.
func TestNothingEverSucceeded(t *testing.T) {
	e := newEnv(t)
	down := fake.New(fake.Options{})
	down.Close() // connection refused from here on
	cfg := down.Config()
	p := e.provider(ec2.NewFromConfig(cfg), pricing.NewFromConfig(cfg))
	ctx := context.Background()
	its, err := p.List(ctx, zones)
	if err != nil {
		t.Fatal(err)
	}
	want := e.catalogTypes(t, zones)
	if len(its) != len(want) {
		t.Fatalf("listed %d types, the catalog has %d", len(its), len(want))
	}
	for _, it := range its {
		if describe(it) != describe(want[it.Name]) {
			t.Errorf("%s differs from the catalog's:\n%s\n%s", it.Name, describe(it), describe(want[it.Name]))
		}
	}
	if src := p.Source(); !strings.HasPrefix(src, "embedded catalog: ec2 DescribeInstanceTypeOfferings") {
		t.Errorf("Source() = %q", src)
	}
	if _, err := p.Catalog(); err == nil {
		t.Error("Catalog() of a failed refresh succeeded")
	}
}

// TestRefreshKeepsLastGoodTypes: a failing DescribeInstanceTypes keeps the
// types fetched before.
func TestRefreshKeepsLastGoodTypes(t *testing.T) {
	e := newEnv(t)
	p := e.provider(nil, nil)
	ctx := context.Background()
	if err := p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	e.aws.Fail("DescribeInstanceTypes", "InternalError", 100)
	e.clock.Step(time.Minute)
	if err := p.Refresh(ctx); err == nil || !strings.Contains(err.Error(), "ec2 DescribeInstanceTypes") {
		t.Fatalf("Refresh: %v", err)
	}
	its, _ := p.List(ctx, zones)
	if len(its) != 1364 {
		t.Errorf("listed %d types after a failed refresh, want the 1364 fetched before", len(its))
	}
	if src := p.Source(); !strings.Contains(src, "instance types from the EC2 API as of 2026-12-03T08:00:00Z, kept: ec2 DescribeInstanceTypes") {
		t.Errorf("Source() = %q", src)
	}
}

// TestThrottledDescribeInstanceTypes: throttling is retried by the SDK's
// standard retryer; the refresh succeeds. (Five attempts, not three: the
// SDK now and then retries an EC2 call over the fake because the previous
// answer's connection was closed, and two throttles plus that would be
// three.)
func TestThrottledDescribeInstanceTypes(t *testing.T) {
	e := newEnv(t)
	e.aws.Throttle("DescribeInstanceTypes", 2)
	p := e.provider(ec2.NewFromConfig(e.aws.Config(), func(o *ec2.Options) { o.RetryMaxAttempts = 5 }), nil)
	if err := p.Refresh(context.Background()); err != nil {
		t.Fatalf("Refresh through throttling: %v", err)
	}
	pages, throttled := 0, 0
	for _, c := range e.aws.Invocations() {
		if c.Action == "DescribeInstanceTypes" {
			pages++
		}
	}
	for _, c := range e.aws.Calls() {
		if c.Action == "DescribeInstanceTypes" && c.Error == "RequestLimitExceeded" {
			throttled++
		}
	}
	if pages != 14 || throttled != 2 {
		t.Errorf("DescribeInstanceTypes invoked %d times with %d throttled requests, want 14 pages and 2 throttled", pages, throttled)
	}
	if src := p.Source(); !strings.HasPrefix(src, "EC2 and Pricing APIs") {
		t.Errorf("Source() = %q", src)
	}
}

// TestCatalog: the refreshed data as a catalog file's content: the seeded
// entries, with their prices.
func TestCatalog(t *testing.T) {
	e := newEnv(t)
	p := e.provider(nil, nil)
	if err := p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	c, err := p.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	if c.Metadata.Count != 1364 || c.Metadata.CountWithOnDemandPrice != 1364 || c.Metadata.OnDemandRegion != "us-east-1" {
		t.Errorf("metadata %+v", c.Metadata)
	}
	if !strings.Contains(c.Metadata.SpotNote, "REAL spot prices") {
		t.Errorf("spot note %q", c.Metadata.SpotNote)
	}
}

func BenchmarkList(b *testing.B) {
	f := fake.Standard(fake.StandardOptions{Region: "us-east-1", Cluster: "production", KubernetesVersion: "1.37"})
	defer f.Close()
	cfg := f.Config()
	p := instancetype.New(ec2.NewFromConfig(cfg), pricing.NewFromConfig(cfg), instancetype.Options{Region: "us-east-1"})
	ctx := context.Background()
	if err := p.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	b.Run("refresh", func(b *testing.B) {
		for b.Loop() {
			_ = p.Refresh(ctx)
		}
	})
	b.Run("list", func(b *testing.B) {
		for b.Loop() {
			_, _ = p.List(ctx, zones)
		}
	})
}

// TestConcurrentUse: Lists while a Refresh runs (run with -race); every
// List sees a whole data set.
func TestConcurrentUse(t *testing.T) {
	p := newEnv(t).provider(nil, nil)
	ctx := context.Background()
	done := make(chan int)
	for range 3 {
		go func() {
			its, _ := p.List(ctx, zones)
			done <- len(its)
		}()
	}
	if err := p.Refresh(ctx); err != nil {
		t.Error(err)
	}
	for range 3 {
		if n := <-done; n != 1364 {
			t.Errorf("a concurrent List had %d types", n)
		}
	}
}

// extraTypes adds types DescribeInstanceTypes and the offerings (in
// us-east-1a) report beyond the fake's, on their last pages, and an
// on-demand price for some.
type extraTypes struct {
	instancetype.EC2API
	infos []ec2types.InstanceTypeInfo
}

func (x extraTypes) DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	out, err := x.EC2API.DescribeInstanceTypes(ctx, in, opts...)
	if err == nil && out.NextToken == nil {
		out.InstanceTypes = append(out.InstanceTypes, x.infos...)
	}
	return out, err
}

func (x extraTypes) DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	out, err := x.EC2API.DescribeInstanceTypeOfferings(ctx, in, opts...)
	if err == nil && out.NextToken == nil {
		for _, info := range x.infos {
			out.InstanceTypeOfferings = append(out.InstanceTypeOfferings, ec2types.InstanceTypeOffering{
				InstanceType: info.InstanceType, Location: aws.String("us-east-1a"), LocationType: ec2types.LocationTypeAvailabilityZone,
			})
		}
	}
	return out, err
}

type extraPrice struct {
	instancetype.PricingAPI
	entry string
}

func (x extraPrice) GetProducts(ctx context.Context, in *pricing.GetProductsInput, opts ...func(*pricing.Options)) (*pricing.GetProductsOutput, error) {
	out, err := x.PricingAPI.GetProducts(ctx, in, opts...)
	if err == nil && out.NextToken == nil {
		out.PriceList = append(out.PriceList, x.entry)
	}
	return out, err
}

// TestTypeTheCatalogLacks: a type the embedded catalog does not have is
// listed with the allocatable upstream computes for AL2023, its on-demand
// price and, having no spot price, no spot offering; an offered Mac type
// is skipped; Source says both.
func TestTypeTheCatalogLacks(t *testing.T) {
	e := newEnv(t)
	newType := ec2types.InstanceTypeInfo{
		InstanceType:  "m9x.large",
		VCpuInfo:      &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(2)},
		MemoryInfo:    &ec2types.MemoryInfo{SizeInMiB: aws.Int64(8192)},
		ProcessorInfo: &ec2types.ProcessorInfo{Manufacturer: aws.String("Intel"), SupportedArchitectures: []ec2types.ArchitectureType{"x86_64"}, SustainedClockSpeedInGhz: aws.Float64(3.9)},
		Hypervisor:    "nitro",
		NetworkInfo: &ec2types.NetworkInfo{MaximumNetworkInterfaces: aws.Int32(3), Ipv4AddressesPerInterface: aws.Int32(10), MaximumNetworkCards: aws.Int32(1),
			DefaultNetworkCardIndex: aws.Int32(0), NetworkCards: []ec2types.NetworkCardInfo{{NetworkCardIndex: aws.Int32(0), MaximumNetworkInterfaces: aws.Int32(3), BaselineBandwidthInGbps: aws.Float64(0.937)}}},
	}
	mac := ec2types.InstanceTypeInfo{
		InstanceType:  "mac2.metal",
		VCpuInfo:      &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(8)},
		MemoryInfo:    &ec2types.MemoryInfo{SizeInMiB: aws.Int64(16384)},
		ProcessorInfo: &ec2types.ProcessorInfo{Manufacturer: aws.String("Apple"), SupportedArchitectures: []ec2types.ArchitectureType{"arm64_mac"}},
	}
	price := `{"product":{"attributes":{"instanceType":"m9x.large","regionCode":"us-east-1"}},"terms":{"OnDemand":{"X.Y":{"priceDimensions":{"X.Y.Z":{"unit":"Hrs","pricePerUnit":{"USD":"0.1010000000"}}}}}}}`
	p := e.provider(extraTypes{EC2API: e.ec2, infos: []ec2types.InstanceTypeInfo{newType, mac}}, extraPrice{PricingAPI: e.pricing, entry: price})
	its, err := p.List(context.Background(), zones)
	if err != nil {
		t.Fatal(err)
	}
	got := byName(its)
	it := got["m9x.large"]
	if it == nil || got["mac2.metal"] != nil {
		t.Fatalf("m9x.large listed: %v, mac2.metal listed: %v", it != nil, got["mac2.metal"] != nil)
	}
	alloc := it.Allocatable()
	// 2 vCPU: 70m kube-reserved; 29 pods (3 ENIs × 9 + 2); memory 8192 −
	// 615 (7.5 %) − (11 × 29 + 255) − 100 eviction.
	for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "1930m", corev1.ResourceMemory: "6903Mi", corev1.ResourcePods: "29", corev1.ResourceEphemeralStorage: "17Gi"} {
		if q := alloc[name]; q.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("m9x.large allocatable %s = %s, want %s", name, q.String(), want)
		}
	}
	if d := describe(it); !strings.Contains(d, "offerings us-east-1a/on-demand 0.101 true\n") ||
		!strings.Contains(d, "karpenter.k8s.aws/instance-network-bandwidth In [937]") || !strings.Contains(d, "karpenter.k8s.aws/instance-category In [m]") {
		t.Errorf("m9x.large:\n%s", d)
	}
	src := p.Source()
	for _, want := range []string{
		"1 offered type×zone pair(s) without a spot price, so without a spot offering: m9x.large in us-east-1a",
		"1 offered type(s) skipped: mac2.metal: architectures [arm64_mac]: neither x86_64 nor arm64",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("Source() = %q, want it to say %q", src, want)
		}
	}
}
