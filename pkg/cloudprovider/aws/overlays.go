package aws

import (
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/overlay"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// SetNodeOverlays gives the provider what the controller's NodeOverlays
// did to each NodePool's instance types. A claim whose types an overlay
// priced is launched as upstream's provider launches it: its types in the
// overlaid prices' order, by a prioritized fleet (on-demand prioritized,
// spot capacity-optimized-prioritized) — EC2 would otherwise choose by its
// own prices, not the ones the plan was made with.
func (p *Provider) SetNodeOverlays(res *overlay.Result) { p.overlaid.Store(res) }

// byOverlaidPrice orders its (the claim's candidates, already by EC2's
// price) by the overlaid prices of the claim's NodePool when an overlay
// priced any of them, and says whether it did.
func (p *Provider) byOverlaidPrice(pool string, its []*cloudprovider.InstanceType, reqs scheduling.Requirements) bool {
	res := p.overlaid.Load()
	if res == nil {
		return false
	}
	changes := res.Changes[pool]
	priced := false
	for _, it := range its {
		if ch := changes[it.Name]; ch != nil && len(ch.Price) > 0 {
			priced = true
		}
	}
	if !priced {
		return false
	}
	overlaid := map[string]*cloudprovider.InstanceType{}
	for _, it := range res.InstanceTypes[pool] {
		overlaid[it.Name] = it
	}
	// Sort stand-ins carrying the overlaid prices and this provider's
	// availability, then put the provider's own types in their order.
	stand := make([]*cloudprovider.InstanceType, len(its))
	own := map[*cloudprovider.InstanceType]*cloudprovider.InstanceType{}
	for i, it := range its {
		s := *it
		if o := overlaid[it.Name]; o != nil {
			s.Offerings = make(cloudprovider.Offerings, len(it.Offerings))
			for j, off := range it.Offerings {
				c := *off
				for _, oo := range o.Offerings {
					if oo.Zone == off.Zone && oo.CapacityType == off.CapacityType {
						c.Price = oo.Price
					}
				}
				s.Offerings[j] = &c
			}
		}
		stand[i] = &s
		own[&s] = it
	}
	cloudprovider.SortByPrice(stand, reqs)
	for i, s := range stand {
		its[i] = own[s]
	}
	return true
}
