package instancetype

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// priceListEntry is a GetProducts price-list entry as AWS sends it (each
// is a JSON document in a string), trimmed of attributes nobody reads.
const priceListEntry = `{"product":{"productFamily":"Compute Instance","attributes":{"enhancedNetworkingSupported":"Yes","instanceType":"m6i.xlarge","regionCode":"us-east-1","operatingSystem":"Linux","tenancy":"Shared","preInstalledSw":"NA","capacitystatus":"Used","vcpu":"4","memory":"16 GiB"},"sku":"2HZFS47XVBUNQDZF"},"serviceCode":"AmazonEC2","terms":{"OnDemand":{"2HZFS47XVBUNQDZF.JRTCKXETXF":{"priceDimensions":{"2HZFS47XVBUNQDZF.JRTCKXETXF.6YS6EN2CT7":{"unit":"Hrs","endRange":"Inf","description":"$0.192 per On Demand Linux m6i.xlarge Instance Hour","appliesTo":[],"rateCode":"2HZFS47XVBUNQDZF.JRTCKXETXF.6YS6EN2CT7","beginRange":"0","pricePerUnit":{"USD":"0.1920000000"}}},"sku":"2HZFS47XVBUNQDZF","effectiveDate":"2026-11-01T00:00:00Z","offerTermCode":"JRTCKXETXF","termAttributes":{}}},"Reserved":{"2HZFS47XVBUNQDZF.4NA7Y494T4":{"priceDimensions":{"2HZFS47XVBUNQDZF.4NA7Y494T4.6YS6EN2CT7":{"unit":"Hrs","pricePerUnit":{"USD":"0.1210000000"}}}}}},"version":"20261101000000","publicationDate":"2026-11-01T00:00:00Z"}`

func TestParsePriceListItem(t *testing.T) {
	for _, tc := range []struct {
		name  string
		entry string
		it    string
		price float64
		err   string
	}{
		{"as AWS sends it (the reserved price is not read)", priceListEntry, "m6i.xlarge", 0.192, ""},
		{"a zero dimension before the price", strings.Replace(priceListEntry, `"priceDimensions":{`,
			`"priceDimensions":{"2HZFS47XVBUNQDZF.JRTCKXETXF.0000000000":{"unit":"Hrs","pricePerUnit":{"USD":"0.0000000000"}},`, 1), "m6i.xlarge", 0.192, ""},
		{"no instance type", strings.Replace(priceListEntry, `"instanceType":"m6i.xlarge",`, "", 1), "", 0, "no product.attributes.instanceType"},
		{"price not a number", strings.Replace(priceListEntry, `"USD":"0.1920000000"`, `"USD":"n/a"`, 1), "", 0, `USD price "n/a"`},
		{"no USD price", strings.Replace(priceListEntry, `"USD":"0.1920000000"`, `"CNY":"1.3"`, 1), "", 0, "no positive on-demand USD price"},
		{"no on-demand term", strings.Replace(priceListEntry, `"OnDemand"`, `"Spot"`, 1), "", 0, "no positive on-demand USD price"},
		{"not JSON", "{", "", 0, "price list entry: unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it, price, err := parsePriceListItem(tc.entry)
			if it != tc.it || price != tc.price {
				t.Errorf("got %s at %v, want %s at %v", it, price, tc.it, tc.price)
			}
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
}

func TestNewestSpotPrices(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	sp := func(it, zone, price string, at time.Time, product string) ec2types.SpotPrice {
		return ec2types.SpotPrice{InstanceType: ec2types.InstanceType(it), AvailabilityZone: aws.String(zone), SpotPrice: aws.String(price),
			Timestamp: aws.Time(at), ProductDescription: ec2types.RIProductDescription(product)}
	}
	got := newestSpotPrices([]ec2types.SpotPrice{
		sp("m6i.xlarge", "us-east-1a", "0.071", t0.Add(-time.Hour), "Linux/UNIX"),
		sp("m6i.xlarge", "us-east-1a", "0.069", t0, "Linux/UNIX"), // newest wins
		sp("m6i.xlarge", "us-east-1a", "0.050", t0.Add(-2*time.Hour), "Linux/UNIX"),
		sp("m6i.xlarge", "us-east-1b", "0.080", t0, "Linux/UNIX"),
		sp("m6i.xlarge", "us-east-1b", "0.078", t0, "Linux/UNIX"), // tie: the lower
		sp("m6i.xlarge", "us-east-1c", "0.300", t0, "Windows"),    // another product
		sp("m6i.xlarge", "us-east-1c", "free", t0, "Linux/UNIX"),  // unreadable
		sp("c7g.large", "us-east-1c", "0.0301", t0, "Linux/UNIX"), //
		sp("c7g.large", "us-east-1d", "0.0000", t0, "Linux/UNIX"), // not a price
		sp("c7g.large", "us-east-1f", "0.0302", t0, ""),           // product unsaid: taken as asked
	})
	want := map[string]map[string]float64{
		"m6i.xlarge": {"us-east-1a": 0.069, "us-east-1b": 0.078},
		"c7g.large":  {"us-east-1c": 0.0301, "us-east-1f": 0.0302},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
