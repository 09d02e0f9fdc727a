// Package instancetype is the AWS provider's instance types and prices,
// from the region's APIs: DescribeInstanceTypes and
// DescribeInstanceTypeOfferings (which types each zone offers), the
// Pricing API's on-demand prices and DescribeSpotPriceHistory's spot
// prices. Types are built by catalog.Entry.InstanceType, as the embedded
// catalog's are, so a type has the same labels, capacity and overhead
// whichever way it came.
//
// Refresh fetches the four; the caller runs it periodically. A part whose
// call fails keeps what it last had, or, having never succeeded, the
// fallback catalog's (the embedded one by default: its types offered in
// every zone, its on-demand prices, its synthetic spot prices); Source
// says which.
package instancetype

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

// EC2API is the part of *ec2.Client the provider calls.
type EC2API interface {
	DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	DescribeSpotPriceHistory(ctx context.Context, in *ec2.DescribeSpotPriceHistoryInput, optFns ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
}

// PricingAPI is the part of *pricing.Client the provider calls. The
// Pricing API has endpoints in us-east-1 and ap-south-1 only, whatever
// region the prices are for: the caller passes a client for one of them.
type PricingAPI interface {
	GetProducts(ctx context.Context, in *pricing.GetProductsInput, optFns ...func(*pricing.Options)) (*pricing.GetProductsOutput, error)
}

// Options configure a Provider.
type Options struct {
	// Region whose types and prices are fetched (the EC2 client's region).
	Region string
	Clock  clock.PassiveClock
	// Fallback is used for what has never been fetched, and for the facts
	// the API lacks (see entryFrom); catalog.Default() when nil.
	Fallback *catalog.Catalog
}

// Provider holds the region's instance types and prices. Safe for
// concurrent use.
type Provider struct {
	ec2      EC2API
	pricing  PricingAPI
	region   string
	clock    clock.PassiveClock
	fallback fallback

	refreshing sync.Mutex // one Refresh at a time

	mu        sync.Mutex
	attempted bool
	types     part[typeData]
	onDemand  part[map[string]float64]
	spot      part[map[string]map[string]float64]
	notes     []string
	built     map[string][]*cloudprovider.InstanceType // by zones, since the last refresh
}

// part is one of the fetched data sets: the last good value and when it
// was fetched, and the last attempt's error (nil: it succeeded).
type part[T any] struct {
	data T
	ok   bool
	at   time.Time
	err  error
}

// typeData is what DescribeInstanceTypes and the offerings said.
type typeData struct {
	entries []catalog.Entry     // by name
	zones   map[string][]string // type → the zones offering it
	skipped []skip
}

// skip is an offered type left out, and why.
type skip struct{ name, why string }

// New returns a provider; nothing is fetched until Refresh or List.
func New(ec2 EC2API, pricing PricingAPI, opts Options) *Provider {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Region == "" {
		opts.Region = "us-east-1"
	}
	return &Provider{
		ec2:      ec2,
		pricing:  pricing,
		region:   opts.Region,
		clock:    opts.Clock,
		fallback: newFallback(opts.Fallback, opts.Region),
	}
}

// Refresh fetches the region's instance types, their zone offerings, and
// on-demand and spot prices. A call that fails leaves its part as it was
// (the last good data, or the fallback catalog's) and its error is
// returned, joined with the others'; Source describes the result. Types
// offered without a price are logged.
func (p *Provider) Refresh(ctx context.Context) error {
	p.refreshing.Lock()
	defer p.refreshing.Unlock()
	return p.refresh(ctx)
}

func (p *Provider) refresh(ctx context.Context) error {
	logger := log.FromContext(ctx).WithValues("region", p.region)
	types, typesErr := p.fetchTypes(ctx)
	onDemand, unreadable, onDemandErr := fetchOnDemand(ctx, p.pricing, p.region)
	spot, spotErr := fetchSpot(ctx, p.ec2, p.clock.Now())
	now := p.clock.Now()
	if unreadable > 0 {
		logger.Info("skipped unreadable Pricing API price-list entries", "count", unreadable)
	}

	p.mu.Lock()
	p.attempted = true
	update(&p.types, types, typesErr, now)
	update(&p.onDemand, onDemand, onDemandErr, now)
	update(&p.spot, spot, spotErr, now)
	p.notes = p.missingPrices()
	p.built = nil
	notes := p.notes
	p.mu.Unlock()

	for _, n := range notes {
		logger.Info("instance types: " + n)
	}
	return errors.Join(typesErr, onDemandErr, spotErr)
}

func update[T any](pt *part[T], data T, err error, now time.Time) {
	pt.err = err
	if err == nil {
		pt.data, pt.ok, pt.at = data, true, now
	}
}

// fetchTypes reads every instance type of the region and the zones that
// offer each; types not offered anywhere are left out.
func (p *Provider) fetchTypes(ctx context.Context) (typeData, error) {
	zones := map[string][]string{}
	offerings := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.ec2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
	})
	for offerings.HasMorePages() {
		page, err := offerings.NextPage(ctx)
		if err != nil {
			return typeData{}, fmt.Errorf("ec2 DescribeInstanceTypeOfferings: %w", err)
		}
		for _, o := range page.InstanceTypeOfferings {
			if o.Location != nil {
				zones[string(o.InstanceType)] = append(zones[string(o.InstanceType)], *o.Location)
			}
		}
	}
	for t := range zones {
		sort.Strings(zones[t])
		zones[t] = compact(zones[t])
	}
	var data typeData
	data.zones = zones
	infos := ec2.NewDescribeInstanceTypesPaginator(p.ec2, &ec2.DescribeInstanceTypesInput{})
	for infos.HasMorePages() {
		page, err := infos.NextPage(ctx)
		if err != nil {
			return typeData{}, fmt.Errorf("ec2 DescribeInstanceTypes: %w", err)
		}
		for _, info := range page.InstanceTypes {
			if len(zones[string(info.InstanceType)]) == 0 {
				continue
			}
			e, err := entryFrom(info, p.fallback.entries[string(info.InstanceType)])
			if err != nil {
				data.skipped = append(data.skipped, skip{string(info.InstanceType), err.Error()})
				continue
			}
			data.entries = append(data.entries, e)
		}
	}
	if len(data.entries) == 0 {
		return typeData{}, fmt.Errorf("ec2 DescribeInstanceTypes: no instance type offered in %s (%d skipped)", p.region, len(data.skipped))
	}
	sort.Slice(data.entries, func(i, j int) bool { return data.entries[i].Name < data.entries[j].Name })
	sort.Slice(data.skipped, func(i, j int) bool { return data.skipped[i].name < data.skipped[j].name })
	return data, nil
}

// List returns the instance types offered in zones (all the region's when
// empty), each with an offering per zone that offers it and capacity type
// that has a price there: on demand at the Pricing API's price, spot at
// the newest spot price. A type offered in none of the zones is left out;
// one without any price has no offerings. The first List refreshes.
//
// The types are fresh copies: the caller may change their offerings
// (Available) and requirements; Capacity and Overhead are shared and must
// not be changed.
func (p *Provider) List(ctx context.Context, zones []string) ([]*cloudprovider.InstanceType, error) {
	p.refreshFirst(ctx)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	key := strings.Join(zones, ",")
	built, ok := p.built[key]
	if !ok {
		built = p.build(zones)
		if p.built == nil || len(p.built) > 64 {
			p.built = map[string][]*cloudprovider.InstanceType{}
		}
		p.built[key] = built
	}
	out := make([]*cloudprovider.InstanceType, len(built))
	for i, it := range built {
		out[i] = copyInstanceType(it)
	}
	return out, nil
}

// refreshFirst refreshes unless a refresh was tried already. A failure is
// logged (Source says what serves instead).
func (p *Provider) refreshFirst(ctx context.Context) {
	p.mu.Lock()
	attempted := p.attempted
	p.mu.Unlock()
	if attempted {
		return
	}
	p.refreshing.Lock()
	defer p.refreshing.Unlock()
	p.mu.Lock()
	attempted = p.attempted
	p.mu.Unlock()
	if attempted {
		return // a concurrent first List refreshed
	}
	if err := p.refresh(ctx); err != nil {
		log.FromContext(ctx).Error(err, "refreshing instance types and prices", "region", p.region, "source", p.Source())
	}
}

// build makes the instance types for zones from the current parts.
func (p *Provider) build(zones []string) []*cloudprovider.InstanceType {
	entries, offered := p.fallback.list, map[string][]string(nil)
	if p.types.ok {
		entries, offered = p.types.data.entries, p.types.data.zones
	}
	if len(zones) == 0 {
		zones = p.allZones()
	} else {
		zones = compact(slices.Sorted(slices.Values(zones)))
	}
	onDemand := p.fallback.onDemand
	if p.onDemand.ok {
		onDemand = p.onDemand.data
	}
	out := make([]*cloudprovider.InstanceType, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		od, hasOD := onDemand[e.Name]
		var offerings cloudprovider.Offerings
		inZone := false
		for _, z := range zones {
			if offered != nil && !contains(offered[e.Name], z) {
				continue
			}
			inZone = true
			if hasOD {
				offerings = append(offerings, &cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeOnDemand, Price: od, Available: true})
			}
			if sp, ok := p.spotPrice(e.Name, z, od, hasOD); ok {
				offerings = append(offerings, &cloudprovider.Offering{Zone: z, CapacityType: v1.CapacityTypeSpot, Price: sp, Available: true})
			}
		}
		if inZone {
			out = append(out, e.InstanceType(p.region, offerings))
		}
	}
	return out
}

// spotPrice is the type's spot price in zone: the fetched one, or, with
// none ever fetched, the fallback catalog's (synthetic) for a type with an
// on-demand price.
func (p *Provider) spotPrice(name, zone string, onDemand float64, hasOnDemand bool) (float64, bool) {
	if p.spot.ok {
		price, ok := p.spot.data[name][zone]
		return price, ok
	}
	if !hasOnDemand {
		return 0, false
	}
	if e := p.fallback.entries[name]; e != nil {
		if price, ok := e.SpotPriceSynthetic[zone]; ok {
			return price, true
		}
	}
	return catalog.SyntheticSpotPrice(name, zone, onDemand), true
}

// allZones are the zones the offerings name, or the fallback catalog's.
func (p *Provider) allZones() []string {
	if !p.types.ok {
		return p.fallback.zones
	}
	seen := map[string]bool{}
	for _, zs := range p.types.data.zones {
		for _, z := range zs {
			seen[z] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// missingPrices says which offered types lack a price (they get no
// offering of that capacity type), for the log and Source.
func (p *Provider) missingPrices() []string {
	if !p.types.ok {
		return nil
	}
	var noOD, noSpot []string
	for _, e := range p.types.data.entries {
		if p.onDemand.ok {
			if _, ok := p.onDemand.data[e.Name]; !ok {
				noOD = append(noOD, e.Name)
			}
		}
		if p.spot.ok {
			for _, z := range p.types.data.zones[e.Name] {
				if _, ok := p.spot.data[e.Name][z]; !ok {
					noSpot = append(noSpot, e.Name+" in "+z)
				}
			}
		}
	}
	var notes []string
	if len(noOD) > 0 {
		notes = append(notes, fmt.Sprintf("%d offered type(s) without an on-demand price, so without on-demand offerings: %s", len(noOD), firstFew(noOD)))
	}
	if len(noSpot) > 0 {
		notes = append(notes, fmt.Sprintf("%d offered type×zone pair(s) without a spot price, so without a spot offering: %s", len(noSpot), firstFew(noSpot)))
	}
	if n := len(p.types.data.skipped); n > 0 {
		var whys []string
		for _, s := range p.types.data.skipped {
			whys = append(whys, s.why)
		}
		notes = append(notes, fmt.Sprintf("%d offered type(s) skipped: %s", n, firstFew(whys)))
	}
	return notes
}

// Source says where the data List serves came from: "EC2 and Pricing
// APIs (<region>, refreshed <time>)" when every part's last refresh
// succeeded, "embedded catalog: <why>" when none ever did, else each part
// in turn; then what lacks a price.
func (p *Provider) Source() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sourceLocked()
}

func (p *Provider) sourceLocked() string {
	if !p.attempted {
		return p.fallback.name + ": not refreshed yet"
	}
	var s string
	switch {
	case p.types.err == nil && p.onDemand.err == nil && p.spot.err == nil:
		s = fmt.Sprintf("EC2 and Pricing APIs (%s, refreshed %s)", p.region, stamp(p.types.at))
	case !p.types.ok && !p.onDemand.ok && !p.spot.ok:
		s = p.fallback.name + ": " + errors.Join(p.types.err, p.onDemand.err, p.spot.err).Error()
	default:
		s = strings.Join([]string{
			describe("instance types", "EC2 API", p.fallback.name, p.types.ok, p.types.at, p.types.err),
			describe("on-demand prices", "Pricing API", p.fallback.name+p.fallback.onDemandNote, p.onDemand.ok, p.onDemand.at, p.onDemand.err),
			describe("spot prices", "EC2 API", p.fallback.name+" (synthetic)", p.spot.ok, p.spot.at, p.spot.err),
		}, "; ")
	}
	s = strings.ReplaceAll(s, "\n", "; ")
	if len(p.notes) > 0 {
		s += "; " + strings.Join(p.notes, "; ")
	}
	return s
}

func describe(what, api, fallback string, ok bool, at time.Time, err error) string {
	switch {
	case err == nil:
		return fmt.Sprintf("%s from the %s (refreshed %s)", what, api, stamp(at))
	case ok:
		return fmt.Sprintf("%s from the %s as of %s, kept: %v", what, api, stamp(at), err)
	}
	return fmt.Sprintf("%s from the %s: %v", what, fallback, err)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func copyInstanceType(it *cloudprovider.InstanceType) *cloudprovider.InstanceType {
	c := *it
	c.Requirements = it.Requirements.Copy()
	c.Offerings = make(cloudprovider.Offerings, len(it.Offerings))
	for i, o := range it.Offerings {
		oc := *o
		c.Offerings[i] = &oc
	}
	return &c
}

func contains(sorted []string, s string) bool {
	i := sort.SearchStrings(sorted, s)
	return i < len(sorted) && sorted[i] == s
}

func compact(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

func firstFew(names []string) string {
	if len(names) <= 5 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:5], ", ") + fmt.Sprintf(", … %d more", len(names)-5)
}
