// Package sim is a simulated EC2 behind the CloudProvider interface: the
// catalog's instance types and offerings (on-demand prices, synthetic spot
// prices), capacity that can run out per offering — the cloud knows, its
// callers learn by launching and failing, as with EC2 — an
// insufficient-capacity cache like the AWS provider's, API errors at a
// configured rate, images per node class for drift, and instances with
// provider IDs. It has no clock or randomness of its own: both are
// injected, so a simulation is reproducible.
package sim

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand"
	"sort"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/joiner-autoscaler/joiner/pkg/apis/aws/v1"
	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/apis/v1alpha1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider/overlay"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// UnavailableFor is how long an offering that failed with insufficient
// capacity is skipped (the AWS provider caches it for 3 minutes).
const UnavailableFor = 3 * time.Minute

// Error codes, as EC2 returns them and karpenter_cloudprovider_errors_total
// counts them.
const (
	CodeInsufficientCapacity = "InsufficientInstanceCapacity"
	CodeInternalError        = "InternalError"
)

// Options inject what the simulated cloud does not own.
type Options struct {
	// Now is the simulation's clock.
	Now func() time.Time
	// Rand draws API errors.
	Rand *rand.Rand
	// APIErrorRate is the chance that a CreateFleet call fails outright.
	APIErrorRate float64
	// OnError is called for every error the cloud returns, with the
	// operation and the error code.
	OnError func(operation, code string)
	// Overlays are applied to every NodePool's instance types (see
	// package overlay), with OverlayMode's capacity merge: the pools see
	// the overlaid prices and capacity, and so does a launch — upstream's
	// AWS provider launches by the overlaid prices' order when a price
	// overlay applies (a prioritized fleet), and the extended resources
	// an overlay promises are the node's.
	Overlays    []*v1alpha1.NodeOverlay
	OverlayMode overlay.Mode
	// Reservations are the cloud's capacity reservations; a NodePool is
	// offered those its EC2NodeClass's capacityReservationSelectorTerms
	// (ReservationTerms, by node class name) select, as reserved
	// offerings (see Reservation).
	Reservations     []Reservation
	ReservationTerms map[string][]awsv1.CapacityReservationSelectorTerm
}

// Instance is one running machine.
type Instance struct {
	ProviderID   string
	NodeClaim    *v1.NodeClaim
	InstanceType *cloudprovider.InstanceType
	Offering     *cloudprovider.Offering
	Image        string
	Launched     time.Time
}

// Provider is the simulated EC2. It is not safe for concurrent use: the
// simulator drives it from one goroutine; other hosts lock around it.
type Provider struct {
	opts        Options
	pools       map[string]*v1.NodePool
	types       []*cloudprovider.InstanceType // every type the cloud has
	byPool      map[string][]*cloudprovider.InstanceType
	unavailable map[*cloudprovider.Offering]time.Time // learned from failed launches
	noCapacity  map[*cloudprovider.Offering]bool      // the cloud's truth
	images      map[string]string                     // node class → current image
	instances   map[string]*Instance
	seq         int
	version     int
	view        map[string][]*cloudprovider.InstanceType
	// base maps an overlaid offering to the cloud's own, which capacity
	// and availability are kept by.
	base     map[*cloudprovider.Offering]*cloudprovider.Offering
	overlaid *overlay.Result
	// reservations by ID, and the node classes' terms that select them.
	reservations     map[string]*reservation
	reservationTerms map[string][]awsv1.CapacityReservationSelectorTerm
}

var _ cloudprovider.CloudProvider = (*Provider)(nil)

// New returns a cloud offering each NodePool the instance types its
// requirements allow (offerings are shared, so a capacity change reaches
// every pool). images maps EC2NodeClass names to the image they select.
func New(pools []*v1.NodePool, types []*cloudprovider.InstanceType, images map[string]string, opts Options) (*Provider, error) {
	if opts.Now == nil {
		return nil, errors.New("sim cloud: Options.Now is required")
	}
	p := &Provider{opts: opts, pools: map[string]*v1.NodePool{}, byPool: map[string][]*cloudprovider.InstanceType{},
		unavailable: map[*cloudprovider.Offering]time.Time{}, noCapacity: map[*cloudprovider.Offering]bool{},
		images: map[string]string{}, instances: map[string]*Instance{}}
	for k, v := range images {
		p.images[k] = v
	}
	p.types = types
	if err := p.setReservations(opts.Reservations, opts.ReservationTerms); err != nil {
		return nil, err
	}
	if err := p.SetNodePools(pools); err != nil {
		return nil, err
	}
	return p, nil
}

// SetNodePools replaces the NodePools the cloud offers instance types to.
// A NodePool no instance type satisfies is an error (it is left without
// types); the others are set.
func (p *Provider) SetNodePools(pools []*v1.NodePool) error {
	p.pools, p.byPool = map[string]*v1.NodePool{}, map[string][]*cloudprovider.InstanceType{}
	var errs []error
	copies := map[string]*cloudprovider.InstanceType{}
	for _, np := range pools {
		p.pools[np.Name] = np
		reqs := scheduling.FromNodePool(np)
		types := p.types
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil && len(p.reservations) > 0 {
			types = p.reservedTypes(ref.Name, types, copies)
		}
		for _, it := range types {
			if it.Requirements.Intersects(reqs) == nil && it.Offerings.HasCompatible(reqs) {
				p.byPool[np.Name] = append(p.byPool[np.Name], it)
			}
		}
		if len(p.byPool[np.Name]) == 0 {
			errs = append(errs, fmt.Errorf("NodePool %s: no instance type of the catalog satisfies its requirements (%s)", np.Name, reqs))
		}
	}
	p.base, p.overlaid = nil, nil
	if len(p.opts.Overlays) > 0 {
		p.overlaid = overlay.Apply(pools, p.byPool, p.opts.Overlays, p.opts.OverlayMode)
		p.base = map[*cloudprovider.Offering]*cloudprovider.Offering{}
		for name, its := range p.overlaid.InstanceTypes {
			for i, it := range its {
				orig := p.byPool[name][i]
				for j, o := range it.Offerings {
					if o != orig.Offerings[j] {
						p.base[o] = orig.Offerings[j]
					}
				}
			}
		}
		p.byPool = p.overlaid.InstanceTypes
	}
	p.changed()
	return errors.Join(errs...)
}

// Overlays is what the NodeOverlays did, or nil when there are none.
func (p *Provider) Overlays() *overlay.Result { return p.overlaid }

// baseOf is the cloud's own offering behind a pool's (overlaid) one.
func (p *Provider) baseOf(o *cloudprovider.Offering) *cloudprovider.Offering {
	if b, ok := p.base[o]; ok {
		return b
	}
	return o
}

// Name identifies the provider.
func (p *Provider) Name() string { return "sim" }

// Version changes whenever the offerings' availability as callers see it
// changes, so they can cache what they build from InstanceTypes.
func (p *Provider) Version() int {
	p.expire()
	return p.version
}

// expire forgets insufficient-capacity entries whose time is up.
func (p *Provider) expire() {
	now := p.opts.Now()
	for o, until := range p.unavailable {
		if !now.Before(until) {
			delete(p.unavailable, o)
			p.changed()
		}
	}
}

func (p *Provider) changed() {
	p.version++
	p.view = nil
}

// GetInstanceTypes returns the types the NodePool may launch, offerings
// that recently failed marked unavailable.
func (p *Provider) GetInstanceTypes(_ context.Context, np *v1.NodePool) ([]*cloudprovider.InstanceType, error) {
	its, ok := p.InstanceTypes()[np.Name]
	if !ok {
		return nil, fmt.Errorf("NodePool %s is not known to the simulated cloud", np.Name)
	}
	return its, nil
}

// InstanceTypes is GetInstanceTypes for every NodePool, by name. The result
// is shared: callers must not modify it.
func (p *Provider) InstanceTypes() map[string][]*cloudprovider.InstanceType {
	p.expire()
	if p.view != nil {
		return p.view
	}
	if len(p.unavailable) == 0 {
		p.view = p.byPool
		return p.view
	}
	out := map[string][]*cloudprovider.InstanceType{}
	copies := map[*cloudprovider.InstanceType]*cloudprovider.InstanceType{}
	for pool, its := range p.byPool {
		list := make([]*cloudprovider.InstanceType, len(its))
		for i, it := range its {
			list[i] = it
			if cp, ok := copies[it]; ok {
				list[i] = cp
				continue
			}
			touched := false
			for _, o := range it.Offerings {
				_, cached := p.unavailable[p.baseOf(o)]
				touched = touched || cached
			}
			if !touched {
				continue
			}
			cp := *it
			cp.Offerings = nil
			for _, o := range it.Offerings {
				oc := *o
				if _, cached := p.unavailable[p.baseOf(o)]; cached {
					oc.Available = false
				}
				cp.Offerings = append(cp.Offerings, &oc)
			}
			copies[it] = &cp
			list[i] = &cp
		}
		out[pool] = list
	}
	p.view = out
	return out
}

// Create launches the cheapest offering the NodeClaim's requirements allow,
// falling back type by type (and offering by offering) when capacity is
// short, as CreateFleet with a lowest-price strategy would.
func (p *Provider) Create(_ context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	if p.opts.APIErrorRate > 0 && p.opts.Rand != nil && p.opts.Rand.Float64() < p.opts.APIErrorRate {
		p.fail("CreateFleet", CodeInternalError)
		return nil, fmt.Errorf("launching nodeclaim %s: CreateFleet: %s (simulated)", nc.Name, CodeInternalError)
	}
	poolName := nc.Labels[v1.LabelNodePool]
	if _, ok := p.pools[poolName]; !ok {
		return nil, fmt.Errorf("launching nodeclaim %s: NodePool %q is not known to the simulated cloud", nc.Name, poolName)
	}
	reqs := scheduling.FromNodeSelectorRequirements(nc.Spec.Requirements)
	zone, ct := reqs.Get(v1.LabelZone), reqs.Get(v1.LabelCapacityType)
	now := p.opts.Now()
	p.expire()
	tried := 0
	for _, capacityType := range capacityTypePriority {
		if !ct.Has(capacityType) {
			continue
		}
		choices := p.choices(poolName, nc.Name, reqs, zone, capacityType)
		tried += len(choices)
		for _, c := range choices {
			if !c.o.Available || p.noCapacity[p.baseOf(c.o)] {
				p.unavailable[p.baseOf(c.o)] = now.Add(UnavailableFor)
				p.changed()
				p.fail("CreateFleet", CodeInsufficientCapacity)
				continue
			}
			return p.launch(nc, c.it, c.o, now), nil
		}
	}
	p.fail("CreateFleet", CodeInsufficientCapacity)
	return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("launching nodeclaim %s: no offering of %d instance types has capacity", nc.Name, tried))
}

// capacityTypePriority is the order in which a claim's allowed capacity
// types are launched, as EC2 Fleet is asked by upstream's AWS provider:
// reserved capacity first, then spot, then on-demand.
var capacityTypePriority = []string{v1.CapacityTypeReserved, v1.CapacityTypeSpot, v1.CapacityTypeOnDemand}

type choice struct {
	it *cloudprovider.InstanceType
	o  *cloudprovider.Offering
}

// choices are, for each of the pool's instance types the requirements
// allow, its cheapest offering of the capacity type in an allowed zone
// (not known to be short), by price; where zones tie on price, EC2 Fleet
// does not keep to the first: the claim's name picks among them, so
// launches spread over the zones, the same way in every run.
func (p *Provider) choices(poolName, claim string, reqs scheduling.Requirements, zone *scheduling.Requirement, capacityType string) []choice {
	var choices []choice
	rid := reqs.Get(cloudprovider.ReservationIDLabel)
	for _, it := range p.byPool[poolName] {
		if it.Requirements.Intersects(reqs) != nil {
			continue
		}
		var tied []*cloudprovider.Offering
		for _, o := range it.Offerings {
			if !zone.Has(o.Zone) || o.CapacityType != capacityType {
				continue
			}
			if _, cached := p.unavailable[p.baseOf(o)]; cached {
				continue
			}
			if o.Reservation != nil && (!o.Available || !rid.Has(o.Reservation.ID)) {
				continue // none left, or not one the claim holds
			}
			switch {
			case len(tied) == 0 || o.Price < tied[0].Price:
				tied = append(tied[:0], o)
			case o.Price == tied[0].Price:
				tied = append(tied, o)
			}
		}
		if len(tied) > 1 && tied[0].Reservation != nil {
			// Of a type's reservations in the allowed zones, upstream
			// launches into the one with the most capacity left.
			sort.SliceStable(tied, func(i, j int) bool { return tied[i].Reservation.Capacity > tied[j].Reservation.Capacity })
			tied = tied[:1]
		}
		if len(tied) > 0 {
			choices = append(choices, choice{it, tied[spreadIndex(claim, len(tied))]})
		}
	}
	sort.SliceStable(choices, func(i, j int) bool {
		if choices[i].o.Price != choices[j].o.Price {
			return choices[i].o.Price < choices[j].o.Price
		}
		return choices[i].it.Name < choices[j].it.Name
	})
	return choices
}

// spreadIndex picks one of n equal choices for a claim, by its name.
func spreadIndex(name string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return int(h.Sum32() % uint32(n))
}

func (p *Provider) fail(op, code string) {
	if p.opts.OnError != nil {
		p.opts.OnError(op, code)
	}
}

func (p *Provider) launch(nc *v1.NodeClaim, it *cloudprovider.InstanceType, o *cloudprovider.Offering, now time.Time) *v1.NodeClaim {
	p.seq++
	out := nc.DeepCopy()
	out.Status.ProviderID = fmt.Sprintf("sim:///%s/i-%017x", o.Zone, p.seq)
	out.Status.Capacity = it.Capacity.DeepCopy()
	out.Status.Allocatable = it.Allocatable()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, r := range it.Requirements {
		if vals := r.Values(); len(vals) == 1 {
			out.Labels[k] = vals[0]
		}
	}
	out.Labels[v1.LabelInstanceType] = it.Name
	out.Labels[v1.LabelZone] = o.Zone
	out.Labels[v1.LabelCapacityType] = o.CapacityType
	for _, k := range []string{cloudprovider.ReservationIDLabel, cloudprovider.ReservationTypeLabel, cloudprovider.ReservationInterruptibleLabel} {
		delete(out.Labels, k) // the type's label sets say nothing of this instance
	}
	if r := o.Reservation; r != nil {
		out.Labels[cloudprovider.ReservationIDLabel] = r.ID
		out.Labels[cloudprovider.ReservationTypeLabel] = r.Type
		out.Labels[cloudprovider.ReservationInterruptibleLabel] = strconv.FormatBool(r.Interruptible)
		p.reservedLaunch(o)
	}
	image := ""
	if ref := p.pools[nc.Labels[v1.LabelNodePool]].Spec.Template.Spec.NodeClassRef; ref != nil {
		image = p.images[ref.Name]
	}
	out.Status.ImageID = image
	if out.CreationTimestamp.IsZero() {
		out.CreationTimestamp = metav1.NewTime(now)
	}
	p.instances[out.Status.ProviderID] = &Instance{ProviderID: out.Status.ProviderID, NodeClaim: out, InstanceType: it, Offering: o, Image: image, Launched: now}
	return out
}

// Instance returns the running instance with the provider ID, or nil.
func (p *Provider) Instance(providerID string) *Instance { return p.instances[providerID] }

// Delete terminates the NodeClaim's instance.
func (p *Provider) Delete(_ context.Context, nc *v1.NodeClaim) error {
	in, ok := p.instances[nc.Status.ProviderID]
	if !ok {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %q of nodeclaim %s", nc.Status.ProviderID, nc.Name))
	}
	delete(p.instances, nc.Status.ProviderID)
	p.reservedRelease(in.Offering)
	return nil
}

// Get returns the NodeClaim of a running instance.
func (p *Provider) Get(_ context.Context, providerID string) (*v1.NodeClaim, error) {
	in, ok := p.instances[providerID]
	if !ok {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %q", providerID))
	}
	return in.NodeClaim.DeepCopy(), nil
}

// List returns every running instance's NodeClaim, by provider ID.
func (p *Provider) List(_ context.Context) ([]*v1.NodeClaim, error) {
	ids := make([]string, 0, len(p.instances))
	for id := range p.instances {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]*v1.NodeClaim, len(ids))
	for i, id := range ids {
		out[i] = p.instances[id].NodeClaim.DeepCopy()
	}
	return out, nil
}

// IsDrifted reports AMIDrift when the instance runs an image its node
// class no longer selects.
func (p *Provider) IsDrifted(_ context.Context, nc *v1.NodeClaim) (cloudprovider.DriftReason, error) {
	in, ok := p.instances[nc.Status.ProviderID]
	if !ok {
		return "", cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %q of nodeclaim %s", nc.Status.ProviderID, nc.Name))
	}
	ref := p.pools[nc.Labels[v1.LabelNodePool]].Spec.Template.Spec.NodeClassRef
	if ref == nil {
		return "", nil
	}
	if want := p.images[ref.Name]; want != "" && in.Image != want {
		return "AMIDrift", nil
	}
	return "", nil
}

// RepairPolicies are upstream's AWS provider's (see
// cloudprovider.AWSRepairPolicies).
func (p *Provider) RepairPolicies() []cloudprovider.RepairPolicy {
	return cloudprovider.AWSRepairPolicies()
}

// SetCapacity makes an instance type's offerings (in a zone and capacity
// type, "" for all) run out of capacity or have it again. Callers are not
// told: they find out when a launch fails. It is the cloud's truth, so it
// holds for NodePools set later too.
func (p *Provider) SetCapacity(instanceType, zone, capacityType string, available bool) {
	for _, it := range p.types {
		if it.Name != instanceType {
			continue
		}
		for _, o := range it.Offerings {
			if (zone != "" && o.Zone != zone) || (capacityType != "" && o.CapacityType != capacityType) {
				continue
			}
			if available {
				delete(p.noCapacity, o)
			} else {
				p.noCapacity[o] = true
			}
		}
	}
}

// MarkUnavailable makes callers skip an offering for UnavailableFor, as
// after a failed launch (the AWS provider does so for the offering of a
// spot interruption too).
func (p *Provider) MarkUnavailable(instanceType, zone, capacityType string) {
	for _, it := range p.types {
		if it.Name != instanceType {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == capacityType {
				p.unavailable[o] = p.opts.Now().Add(UnavailableFor)
			}
		}
	}
	p.changed()
}

// SetImage makes a node class select another image; instances on the old
// one drift.
func (p *Provider) SetImage(nodeClass, image string) { p.images[nodeClass] = image }

// Image is the image a node class selects now ("" for a class the cloud
// was not told of).
func (p *Provider) Image(nodeClass string) string { return p.images[nodeClass] }
