package instancetype

import (
	"errors"
	"fmt"

	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/catalog"
)

// Catalog returns what the last Refresh fetched in the embedded catalog's
// format (hack/gen-catalog writes it): every type offered in the region,
// with its on-demand price and, in spotPriceUSDPerHourSynthetic (the
// field keeps its name so the format stays one), its REAL spot price in
// each offering zone — metadata.spotNote says so. It fails unless every
// part of the last refresh came from the APIs.
func (p *Provider) Catalog() (*catalog.Catalog, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.attempted {
		return nil, errors.New("not refreshed yet")
	}
	if err := errors.Join(p.types.err, p.onDemand.err, p.spot.err); err != nil {
		return nil, fmt.Errorf("the last refresh failed, so the catalog would not be the APIs': %w", err)
	}
	at := stamp(p.types.at)
	c := &catalog.Catalog{Metadata: catalog.Metadata{
		Source: &catalog.Source{
			Region: p.region,
			APIs: []string{
				"ec2:DescribeInstanceTypes", "ec2:DescribeInstanceTypeOfferings",
				"ec2:DescribeSpotPriceHistory", "pricing:GetProducts",
			},
		},
		GeneratedAt:    at,
		OnDemandRegion: p.region,
		OnDemandNote: fmt.Sprintf("Linux on-demand USD/hour from the Pricing API's GetProducts (AmazonEC2, regionCode %s, Linux, Shared tenancy, no pre-installed software, capacitystatus Used) at %s.",
			p.region, at),
		MemoryNote: "memoryMiB = full instance memory (DescribeInstanceTypes MemoryInfo.SizeInMiB); gpuMemoryMiBPerGPU is per GPU; karpenterAllocatableAL2023 is Karpenter's allocatable for AL2023 defaults: the embedded catalog's for the types it has, else computed as upstream does (ENI-limited pods, kube-reserved CPU tiers and 11 MiB × pods + 255 MiB, eviction 100Mi, 7.5 % VM overhead, 64 MiB on Graviton).",
		ENINote:    "eni.maxPodsENI = maxENIsDefaultCard*(ipv4PerENI-1)+2 (VPC CNI, no prefix delegation); branchENIs and trunkingCompatible from the embedded catalog (DescribeInstanceTypes does not report them).",
		SpotNote: fmt.Sprintf("spotPriceUSDPerHourSynthetic holds REAL spot prices, not synthetic ones: the newest DescribeSpotPriceHistory price (Linux/UNIX) per type and zone in %s at %s (the field keeps the embedded catalog's name).",
			p.region, at),
	}}
	for _, e := range p.types.data.entries {
		if price, ok := p.onDemand.data[e.Name]; ok {
			e.OnDemandPrice = &price
			c.Metadata.CountWithOnDemandPrice++
		}
		for _, z := range p.types.data.zones[e.Name] {
			if price, ok := p.spot.data[e.Name][z]; ok {
				if e.SpotPriceSynthetic == nil {
					e.SpotPriceSynthetic = map[string]float64{}
				}
				e.SpotPriceSynthetic[z] = price
			}
		}
		c.Entries = append(c.Entries, e)
	}
	c.Metadata.Count = len(c.Entries)
	for _, s := range p.types.data.skipped {
		c.Metadata.TypesWithoutSpecsSkipped = append(c.Metadata.TypesWithoutSpecsSkipped, s.name)
	}
	return c, nil
}
