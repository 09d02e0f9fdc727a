package instancetype

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
)

// spotProductDescription: the Linux spot market (VPC and EC2-Classic are
// one market since Classic retired).
const spotProductDescription = "Linux/UNIX"

// onDemandFilters select Linux, shared-tenancy, no-preinstalled-software
// on-demand capacity in the region: one product per instance type.
func onDemandFilters(region string) []pricingtypes.Filter {
	var out []pricingtypes.Filter
	for _, f := range [][2]string{
		{"regionCode", region},
		{"operatingSystem", "Linux"},
		{"tenancy", "Shared"},
		{"preInstalledSw", "NA"},
		{"capacitystatus", "Used"},
	} {
		out = append(out, pricingtypes.Filter{Field: aws.String(f[0]), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String(f[1])})
	}
	return out
}

// fetchOnDemand returns the region's on-demand prices (USD/hour) by type,
// and how many price-list entries could not be read.
func fetchOnDemand(ctx context.Context, c PricingAPI, region string) (map[string]float64, int, error) {
	pages := pricing.NewGetProductsPaginator(c, &pricing.GetProductsInput{
		ServiceCode:   aws.String("AmazonEC2"),
		Filters:       onDemandFilters(region),
		FormatVersion: aws.String("aws_v1"),
	})
	prices := map[string]float64{}
	bad := 0
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("pricing GetProducts: %w", err)
		}
		for _, item := range page.PriceList {
			it, price, err := parsePriceListItem(item)
			if err != nil {
				bad++
				continue
			}
			// Two products for one type should not pass the filters; if
			// they do, the cheaper is what lowest-price would launch.
			if old, ok := prices[it]; !ok || price < old {
				prices[it] = price
			}
		}
	}
	if len(prices) == 0 {
		return nil, bad, fmt.Errorf("pricing GetProducts: no on-demand prices for region %s (%d entries unreadable)", region, bad)
	}
	return prices, bad, nil
}

// priceListItem is the part of a Pricing API price-list entry (a JSON
// document sent as a string) that names the type and its on-demand price.
type priceListItem struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
		} `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// parsePriceListItem reads one price-list entry: its instance type and
// its on-demand USD price per hour (the first positive one, in key order,
// should a product have several terms).
func parsePriceListItem(s string) (string, float64, error) {
	var item priceListItem
	if err := json.Unmarshal([]byte(s), &item); err != nil {
		return "", 0, fmt.Errorf("price list entry: %w", err)
	}
	it := item.Product.Attributes.InstanceType
	if it == "" {
		return "", 0, fmt.Errorf("price list entry: no product.attributes.instanceType")
	}
	for _, tk := range slices.Sorted(maps.Keys(item.Terms.OnDemand)) {
		dims := item.Terms.OnDemand[tk].PriceDimensions
		for _, dk := range slices.Sorted(maps.Keys(dims)) {
			usd, ok := dims[dk].PricePerUnit["USD"]
			if !ok {
				continue
			}
			p, err := strconv.ParseFloat(usd, 64)
			if err != nil {
				return "", 0, fmt.Errorf("price list entry for %s: USD price %q: %w", it, usd, err)
			}
			if p > 0 {
				return it, p, nil
			}
		}
	}
	return "", 0, fmt.Errorf("price list entry for %s: no positive on-demand USD price", it)
}

// fetchSpot returns the newest Linux spot price (USD/hour) per type and
// zone, as of now.
func fetchSpot(ctx context.Context, c EC2API, now time.Time) (map[string]map[string]float64, error) {
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(c, &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{spotProductDescription},
		StartTime:           aws.Time(now),
	})
	var all []ec2types.SpotPrice
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("ec2 DescribeSpotPriceHistory: %w", err)
		}
		all = append(all, page.SpotPriceHistory...)
	}
	return newestSpotPrices(all), nil
}

// newestSpotPrices keeps, of each type's prices in each zone, the newest
// (on a tie, the lower); entries of another product or unreadable are
// skipped.
func newestSpotPrices(history []ec2types.SpotPrice) map[string]map[string]float64 {
	type key struct{ it, zone string }
	type seen struct {
		at    time.Time
		price float64
	}
	newest := map[key]seen{}
	for _, sp := range history {
		if sp.ProductDescription != "" && string(sp.ProductDescription) != spotProductDescription {
			continue
		}
		zone := aws.ToString(sp.AvailabilityZone)
		p, err := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
		if sp.InstanceType == "" || zone == "" || err != nil || !(p > 0) {
			continue
		}
		k, at := key{string(sp.InstanceType), zone}, aws.ToTime(sp.Timestamp)
		if old, ok := newest[k]; !ok || at.After(old.at) || (at.Equal(old.at) && p < old.price) {
			newest[k] = seen{at, p}
		}
	}
	out := map[string]map[string]float64{}
	for k, s := range newest {
		if out[k.it] == nil {
			out[k.it] = map[string]float64{}
		}
		out[k.it][k.zone] = s.price
	}
	return out
}
