package instancetype

import (
	"fmt"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

// fallback is the catalog's data in the provider's terms: what serves a
// part that was never fetched, and the facts the API lacks.
type fallback struct {
	name    string // "embedded catalog", in Source
	list    []catalog.Entry
	entries map[string]*catalog.Entry
	// onDemand: the region's prices in the catalog (its home region's when
	// it has none for the region, which onDemandNote then says).
	onDemand     map[string]float64
	onDemandNote string
	zones        []string // the catalog's zones in the region, else a, b, c
}

func newFallback(c *catalog.Catalog, region string) fallback {
	f := fallback{name: "fallback catalog", entries: map[string]*catalog.Entry{}, onDemand: map[string]float64{}}
	if c == nil {
		f.name = "embedded catalog"
		var err error
		if c, err = catalog.Default(); err != nil {
			// The embedded file is tested; should it break, serve nothing.
			f.name = fmt.Sprintf("no catalog (%v)", err)
			return f
		}
	}
	f.list = c.Entries
	for i := range f.list {
		f.entries[f.list[i].Name] = &f.list[i]
	}
	switch table, ok := c.OnDemandByRegion[region]; {
	case region != c.HomeRegion() && ok:
		f.onDemand = table
	default:
		if region != c.HomeRegion() {
			f.onDemandNote = fmt.Sprintf(" (%s's: it has no prices for %s)", c.HomeRegion(), region)
		}
		for _, e := range f.list {
			if e.OnDemandPrice != nil {
				f.onDemand[e.Name] = *e.OnDemandPrice
			}
		}
	}
	if f.zones = c.Zones(region); len(f.zones) == 0 {
		f.zones = []string{region + "a", region + "b", region + "c"}
	}
	return f
}
