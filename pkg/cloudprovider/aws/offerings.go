package aws

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/utils/clock"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// UnavailableFor is how long an offering that failed for want of capacity
// (or whose spot instance was reclaimed) is left out, as upstream's
// unavailable-offerings cache keeps it.
const UnavailableFor = 3 * time.Minute

type offeringKey struct{ instanceType, zone, capacityType string }

// unavailableOfferings are the offerings EC2 recently had no capacity for.
type unavailableOfferings struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	until map[offeringKey]time.Time
	// version counts the changes: offerings marked, and marks expired.
	version int
}

func newUnavailableOfferings(c clock.PassiveClock) *unavailableOfferings {
	return &unavailableOfferings{clock: c, until: map[offeringKey]time.Time{}}
}

// MarkUnavailable leaves the offering out for UnavailableFor from now.
func (u *unavailableOfferings) MarkUnavailable(instanceType, zone, capacityType string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.until[offeringKey{instanceType, zone, capacityType}] = u.clock.Now().Add(UnavailableFor)
	u.version++
}

// Version changes whenever the offerings left out change (a mark, or a
// mark that expired), so a controller knows to ask for them again.
func (u *unavailableOfferings) Version() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.clock.Now()
	for k, until := range u.until {
		if !now.Before(until) {
			delete(u.until, k)
			u.version++
		}
	}
	return u.version
}

// IsUnavailable reports whether the offering is left out now.
func (u *unavailableOfferings) IsUnavailable(instanceType, zone, capacityType string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	k := offeringKey{instanceType, zone, capacityType}
	until, ok := u.until[k]
	if ok && !u.clock.Now().Before(until) {
		delete(u.until, k)
		u.version++
		return false
	}
	return ok
}

// GetInstanceTypes returns the instance types the NodePool's EC2NodeClass
// can launch: offered in its subnets' zones, with an AMI for their
// architecture (and accelerators), offerings EC2 recently had no capacity
// for marked unavailable.
func (p *Provider) GetInstanceTypes(ctx context.Context, np *v1.NodePool) ([]*cloudprovider.InstanceType, error) {
	r, err := p.nodeClass(ctx, np.Spec.Template.Spec.NodeClassRef)
	if err != nil {
		return nil, fmt.Errorf("NodePool %s: %w", np.Name, err)
	}
	return p.instanceTypes(ctx, r)
}

// instanceTypes are the types a resolved NodeClass can launch.
func (p *Provider) instanceTypes(ctx context.Context, r *resolvedClass) ([]*cloudprovider.InstanceType, error) {
	zones := map[string]bool{}
	var zoneList []string
	for _, s := range r.status.Subnets {
		if !zones[s.Zone] {
			zones[s.Zone] = true
			zoneList = append(zoneList, s.Zone)
		}
	}
	all, err := p.types.List(ctx, zoneList)
	if err != nil {
		return nil, fmt.Errorf("listing instance types: %w", err)
	}
	var out []*cloudprovider.InstanceType
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, it := range all {
		if amiFor(r.status.AMIs, it) == nil {
			continue
		}
		var offerings cloudprovider.Offerings
		for _, o := range it.Offerings {
			if !zones[o.Zone] {
				continue
			}
			if p.unavailable.IsUnavailable(it.Name, o.Zone, o.CapacityType) {
				o.Available = false
			}
			offerings = append(offerings, o)
		}
		if len(offerings) == 0 {
			continue
		}
		it.Offerings = offerings
		if len(r.status.CapacityReservations) > 0 {
			p.reserved(it, r.status.CapacityReservations, zones)
		}
		withKubelet(it, r.nodeClass.Spec.Kubelet)
		p.typeInfo[it.Name] = it
		out = append(out, it)
	}
	return out, nil
}

// amiFor is the first (newest) AMI whose requirements the instance type
// meets, or nil.
func amiFor(amis []awsv1.AMI, it *cloudprovider.InstanceType) *awsv1.AMI {
	for i := range amis {
		if it.Requirements.Compatible(scheduling.FromCoreNodeSelectorRequirements(amis[i].Requirements), nil) == nil {
			return &amis[i]
		}
	}
	return nil
}
