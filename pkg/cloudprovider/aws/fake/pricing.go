package fake

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

var pricingService = &service{
	name:           "pricing",
	protocol:       awsJSON,
	target:         "AWSPriceListService",
	jsonVersion:    "1.1",
	throttleCode:   "ThrottlingException",
	throttleStatus: http.StatusBadRequest,
	json: map[string]func(*AWS, []byte) (any, error){
		"GetProducts": (*AWS).getProducts,
	},
}

// product is one Pricing API product: a Linux, shared-tenancy, on-demand
// EC2 instance type in a region.
type product struct {
	attributes map[string]string
	price      float64
}

// regionNames are the Pricing API's location names of the regions the
// catalog has prices for.
var regionNames = map[string]string{
	"us-east-1":     "US East (N. Virginia)",
	"us-east-2":     "US East (Ohio)",
	"us-west-2":     "US West (Oregon)",
	"us-gov-east-1": "AWS GovCloud (US-East)",
	"us-gov-west-1": "AWS GovCloud (US-West)",
}

// pricingProducts are the products for c's on-demand prices, in every
// region c has, and in region (when c has no prices of its own for it) at
// the prices onDemand gives.
func pricingProducts(c *catalog.Catalog, region string, onDemand map[string]float64) []product {
	var out []product
	for _, e := range c.Entries {
		if e.OnDemandPrice != nil {
			out = append(out, newProduct(c.HomeRegion(), e.Name, *e.OnDemandPrice))
		}
	}
	regions := c.Regions()
	for _, r := range regions {
		out = append(out, regionProducts(r, c.OnDemandByRegion[r])...)
	}
	if !contains(regions, region) {
		out = append(out, regionProducts(region, onDemand)...)
	}
	return out
}

// regionProducts are the products of a region's price table, by type.
func regionProducts(region string, prices map[string]float64) []product {
	types := make([]string, 0, len(prices))
	for t := range prices {
		types = append(types, t)
	}
	sort.Strings(types)
	out := make([]product, 0, len(types))
	for _, t := range types {
		out = append(out, newProduct(region, t, prices[t]))
	}
	return out
}

func newProduct(region, instanceType string, price float64) product {
	location := regionNames[region]
	if location == "" {
		location = region
	}
	return product{price: price, attributes: map[string]string{
		"servicecode":     "AmazonEC2",
		"instanceType":    instanceType,
		"regionCode":      region,
		"location":        location,
		"locationType":    "AWS Region",
		"operatingSystem": "Linux",
		"tenancy":         "Shared",
		"preInstalledSw":  "NA",
		"capacitystatus":  "Used",
		"licenseModel":    "No License required",
		"marketoption":    "OnDemand",
		"operation":       "RunInstances",
		"usagetype":       "BoxUsage:" + instanceType,
	}}
}

type pricingFilter struct {
	Type, Field, Value string
}

type getProductsInput struct {
	ServiceCode   string
	Filters       []pricingFilter
	FormatVersion string
	NextToken     string
	MaxResults    int
}

type getProductsOutput struct {
	FormatVersion string   `json:"FormatVersion"`
	PriceList     []string `json:"PriceList"`
	NextToken     string   `json:"NextToken,omitempty"`
}

// getProducts answers the products passing every filter, PriceList entries
// as JSON strings as AWS sends them, 100 a page (NextToken).
func (f *AWS) getProducts(body []byte) (any, error) {
	var in getProductsInput
	if err := decodeJSON(body, &in); err != nil {
		return nil, err
	}
	var found []product
	if in.ServiceCode == "AmazonEC2" {
		for _, p := range f.ec2.pricing {
			ok, err := p.passes(in.Filters)
			if err != nil {
				return nil, err
			}
			if ok {
				found = append(found, p)
			}
		}
	}
	size := 100
	if in.MaxResults > 0 {
		size = min(in.MaxResults, 100)
	}
	from := 0
	if in.NextToken != "" {
		v, err := strconv.Atoi(in.NextToken)
		if err != nil || v < 0 || v > len(found) {
			return nil, badRequest("InvalidNextTokenException", "The token %q is invalid", in.NextToken)
		}
		from = v
	}
	to := min(from+size, len(found))
	out := getProductsOutput{FormatVersion: "aws_v1", PriceList: []string{}}
	for _, p := range found[from:to] {
		out.PriceList = append(out.PriceList, p.priceListItem())
	}
	if to < len(found) {
		out.NextToken = strconv.Itoa(to)
	}
	return out, nil
}

func (p product) passes(fs []pricingFilter) (bool, error) {
	for _, fl := range fs {
		have, ok := p.attributes[fl.Field]
		if !ok {
			for k, v := range p.attributes {
				if strings.EqualFold(k, fl.Field) {
					have, ok = v, true
				}
			}
		}
		var pass bool
		switch fl.Type {
		case "TERM_MATCH", "EQUALS", "":
			pass = ok && strings.EqualFold(have, fl.Value)
		case "CONTAINS":
			pass = ok && strings.Contains(strings.ToLower(have), strings.ToLower(fl.Value))
		case "ANY_OF", "NONE_OF":
			for _, v := range strings.Split(fl.Value, ",") {
				pass = pass || ok && strings.EqualFold(have, strings.TrimSpace(v))
			}
			if fl.Type == "NONE_OF" {
				pass = !pass
			}
		default:
			return false, badRequest("InvalidParameterException", "filter type %q is invalid", fl.Type)
		}
		if !pass {
			return false, nil
		}
	}
	return true, nil
}

// priceListItem is the product as the Pricing API's JSON document, with
// terms.OnDemand.<sku>.<offer>.priceDimensions.<rate>.pricePerUnit.USD.
func (p product) priceListItem() string {
	sum := sha256.Sum256([]byte(p.attributes["regionCode"] + "/" + p.attributes["instanceType"]))
	sku := strings.ToUpper(hex.EncodeToString(sum[:8]))
	const offer, rate = "JRTCKXETXF", "6YS6EN2CT7"
	doc := map[string]any{
		"product": map[string]any{
			"productFamily": "Compute Instance",
			"attributes":    p.attributes,
			"sku":           sku,
		},
		"serviceCode":     "AmazonEC2",
		"version":         "20261201000000",
		"publicationDate": "2026-12-01T00:00:00Z",
		"terms": map[string]any{
			"OnDemand": map[string]any{
				sku + "." + offer: map[string]any{
					"offerTermCode":  offer,
					"sku":            sku,
					"effectiveDate":  "2026-12-01T00:00:00Z",
					"termAttributes": map[string]string{},
					"priceDimensions": map[string]any{
						sku + "." + offer + "." + rate: map[string]any{
							"rateCode":     sku + "." + offer + "." + rate,
							"description":  "$" + strconv.FormatFloat(p.price, 'f', -1, 64) + " per On Demand Linux " + p.attributes["instanceType"] + " Instance Hour",
							"beginRange":   "0",
							"endRange":     "Inf",
							"unit":         "Hrs",
							"appliesTo":    []string{},
							"pricePerUnit": map[string]string{"USD": strconv.FormatFloat(p.price, 'f', 10, 64)},
						},
					},
				},
			},
		},
	}
	b, _ := json.Marshal(doc)
	return string(b)
}
