package provisioning

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/cloudprovider"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// poolInfo is a NodePool prepared for one Solve.
type poolInfo struct {
	np        *v1.NodePool
	reqs      scheduling.Requirements // template requirements and labels, and the pool's own label
	taints    []corev1.Taint
	its       []*itInfo
	wellKnown map[string]bool // keys instance types define: a pod may require them
	// limits, by dimension; -1 where unlimited. used counts existing nodes,
	// in-flight claims and the claims planned so far (their largest type).
	limits, used vec
	hasLimits    bool
	// compat caches, per requirement set (by its CacheKey), the instance
	// types compatible with pool ∩ requirements; fits per request vector.
	compat map[string]bitset
	fits   map[string]bitset
	// fitting caches, per requirement set and request vector (their two
	// keys), the types both compatible and fitting, with their largest
	// allocatable: classes of many shapes share few such pairs.
	fitting map[string]fitting
	// orders caches, per zone and capacity-type requirement, the indexes of
	// the types with an available compatible offering, cheapest first.
	orders map[string][]int
	// multiKeys are the labels some instance type allows several values of.
	multiKeys []string
	// offer caches offerable by zone and capacity-type requirement.
	offer map[string]bitset
	// fit and capFit index its by allocatable and by capacity; made with
	// the pool, only read.
	fit, capFit *fitIndex
	// reserved are the indexes of the types with a reserved offering.
	reserved []int
}

// withOwnCaches is the pool with caches of its own, empty, for a plan
// that runs beside one using p's.
func (p *poolInfo) withOwnCaches() *poolInfo {
	cp := *p
	cp.used = nil
	cp.compat, cp.fits, cp.offer, cp.orders = map[string]bitset{}, map[string]bitset{}, map[string]bitset{}, nil
	cp.fitting = map[string]fitting{}
	return &cp
}

// offerable is the set of the pool's types whose zone and capacity-type
// labels meet reqs' and that have an available offering reqs allow.
func (p *poolInfo) offerable(reqs scheduling.Requirements) bitset {
	zone, ct := reqs.Get(v1.LabelZone), reqs.Get(v1.LabelCapacityType)
	key := zone.CacheKey() + "|" + ct.CacheKey()
	if b, ok := p.offer[key]; ok {
		return b
	}
	b := newBitset(len(p.its))
	for i, it := range p.its {
		if keysIntersect(it.it.Requirements, reqs, []string{v1.LabelZone, v1.LabelCapacityType}) && it.it.Offerings.HasCompatible(reqs) {
			b.set(i)
		}
	}
	if p.offer == nil {
		p.offer = map[string]bitset{}
	}
	p.offer[key] = b
	return b
}

// priceOrder returns the pool's instance types that can be bought under
// the zone and capacity-type requirements, cheapest first (ties by name).
func (p *poolInfo) priceOrder(zone, ct *scheduling.Requirement) []int {
	key := zone.CacheKey() + "|" + ct.CacheKey()
	if o, ok := p.orders[key]; ok {
		return o
	}
	type priced struct {
		i     int
		price float64
	}
	var ps []priced
	for i, it := range p.its {
		if price := it.it.Offerings.CheapestPriceWith(zone, ct); !math.IsInf(price, 1) {
			ps = append(ps, priced{i, price})
		}
	}
	sort.SliceStable(ps, func(a, b int) bool {
		if ps[a].price != ps[b].price {
			return ps[a].price < ps[b].price
		}
		return p.its[ps[a].i].it.Name < p.its[ps[b].i].it.Name
	})
	order := make([]int, len(ps))
	for i, x := range ps {
		order[i] = x.i
	}
	if p.orders == nil {
		p.orders = map[string][]int{}
	}
	p.orders[key] = order
	return order
}

type itInfo struct {
	it *cloudprovider.InstanceType
	// alloc is the room for pods: allocatable less daemon, the requests of
	// the DaemonSet pods a new node of this type (in this pool) would run;
	// daemonPorts are the host ports those pods take.
	alloc, capacity, daemon vec
	daemonPorts             []hostPort
}

// newPoolInfo prepares a NodePool's instance types, each with the overhead
// of the DaemonSets (pod templates) that would run on it.
func newPoolInfo(np *v1.NodePool, its []*cloudprovider.InstanceType, daemonSets []*corev1.Pod, d *dims) *poolInfo {
	p := &poolInfo{np: np, taints: np.Spec.Template.Spec.Taints, compat: map[string]bitset{}, fits: map[string]bitset{}, fitting: map[string]fitting{}, offer: map[string]bitset{},
		wellKnown: map[string]bool{v1.LabelHostname: true}}
	p.reqs = scheduling.FromNodePool(np)
	p.reqs.Add(scheduling.NewRequirement(v1.LabelNodePool, corev1.NodeSelectorOpIn, np.Name))
	for _, it := range its {
		for k := range it.Requirements {
			p.wellKnown[k] = true
		}
		// A type the pool's requirements rule out is never a candidate.
		if it.Requirements.Intersects(p.reqs) != nil || !it.Offerings.HasCompatible(p.reqs) {
			continue
		}
		alloc := d.vec(it.Allocatable())
		daemon, ports := p.daemonOverhead(it, daemonSets, d)
		if !daemon.fitsIn(alloc) {
			continue // its own DaemonSets do not fit: no pod would
		}
		p.its = append(p.its, &itInfo{it: it, alloc: alloc.minus(daemon), capacity: d.vec(it.Capacity), daemon: daemon, daemonPorts: ports})
	}
	allocs, capacities := make([]vec, len(p.its)), make([]vec, len(p.its))
	for i, it := range p.its {
		allocs[i], capacities[i] = it.alloc, it.capacity
	}
	p.fit, p.capFit = newFitIndex(allocs), newFitIndex(capacities)
	for i, it := range p.its {
		if slices.ContainsFunc(it.it.Offerings, func(o *cloudprovider.Offering) bool { return o.Reservation != nil }) {
			p.reserved = append(p.reserved, i)
		}
	}
	multi := map[string]bool{}
	for _, it := range p.its {
		for k, r := range it.it.Requirements {
			if r.Len() != 1 {
				multi[k] = true
			}
		}
	}
	for k := range multi {
		p.multiKeys = append(p.multiKeys, k)
	}
	sort.Strings(p.multiKeys)
	if len(np.Spec.Limits) > 0 {
		p.hasLimits = true
		p.limits = d.vec(corev1.ResourceList(np.Spec.Limits))
		for i := range p.limits {
			if _, ok := np.Spec.Limits[d.names[i]]; !ok {
				p.limits[i] = -1
			}
		}
	}
	return p
}

// remaining reports whether a node of this capacity still fits the limits.
func (p *poolInfo) withinLimits(capacity vec, d *dims) bool {
	if !p.hasLimits {
		return true
	}
	for i, l := range p.limits {
		if l < 0 {
			continue
		}
		need := capacity.get(i)
		if i == d.nodes {
			need = 1
		}
		if p.used.get(i)+need > l {
			return false
		}
	}
	return true
}

func (p *poolInfo) consume(capacity vec, d *dims) {
	if !p.hasLimits {
		return
	}
	c := capacity
	if i, ok := d.index["nodes"]; ok {
		c = append(vec(nil), capacity...)
		for len(c) <= i {
			c = append(c, 0)
		}
		c[i] = 1
	}
	p.used = p.used.plus(c)
}

// limitsReason is the reason the limits give: the usage against each
// limit.
func (p *poolInfo) limitsReason(d *dims) *Reason {
	r := &Reason{Code: ReasonLimits}
	for i, l := range p.limits {
		if l >= 0 && i < len(d.names) {
			r.Limits = append(r.Limits, LimitUse{Resource: d.names[i], Used: fmtQty(d, i, p.used.get(i)), Limit: fmtQty(d, i, l)})
		}
	}
	return r
}

func fmtQty(d *dims, i int, v int64) string {
	if v == 0 {
		return "0"
	}
	if d.names[i] == corev1.ResourceCPU && v%1000 == 0 {
		return strconv.FormatInt(v/1000, 10) // whole cores, not "1k"
	}
	l := make(vec, i+1)
	l[i] = v
	q := d.list(l)[d.names[i]]
	return q.String()
}

// classPool is a class's fit against one NodePool, computed once.
type classPool struct {
	err        error
	reqs       scheduling.Requirements // pool ∩ class
	candidates bitset                  // shared with others: cloned to change
	maxAlloc   vec                     // elementwise max allocatable over the candidates
}

// fitting is a set of a pool's instance types and their elementwise
// largest allocatable.
type fitting struct {
	types    bitset
	maxAlloc vec
}

// fittingOf is the pool's types in both compat (under requirements of key
// rkey) and fits (of requests of key fkey).
func (p *poolInfo) fittingOf(rkey, fkey string, compat, fits bitset) fitting {
	key := rkey + "|" + fkey
	if f, ok := p.fitting[key]; ok {
		return f
	}
	if len(p.fitting) > 1<<12 {
		p.fitting = map[string]fitting{} // a cache only: start over
	}
	f := fitting{types: compat.clone()}
	f.types.and(fits)
	f.types.each(func(i int) bool { f.maxAlloc = maxInto(f.maxAlloc, p.its[i].alloc); return true })
	p.fitting[key] = f
	return f
}

func (s *scheduler) poolCheck(c *podClass, p *poolInfo, pi int) *classPool {
	if c.pools == nil {
		c.pools = make([]*classPool, len(s.pools))
	}
	if cp := c.pools[pi]; cp != nil {
		return cp
	}
	cp := &classPool{}
	c.pools[pi] = cp
	if err := scheduling.Tolerates(p.taints, c.tolerations); err != nil {
		cp.err = err
		return cp
	}
	if err := p.reqs.Compatible(c.reqs, func(k string) bool { return p.wellKnown[k] }); err != nil {
		cp.err = err
		return cp
	}
	cp.reqs = p.reqs.Copy()
	cp.reqs.Merge(c.reqs)
	rkey := cp.reqs.CacheKey()
	compat, ok := p.compat[rkey]
	if !ok {
		compat = newBitset(len(p.its))
		for i, it := range p.its {
			if it.it.Requirements.Intersects(cp.reqs) == nil && it.it.Offerings.HasCompatible(cp.reqs) {
				compat.set(i)
			}
		}
		p.compat[rkey] = compat
	}
	need := c.requests
	fkey := vecKey(need)
	fits, ok := p.fits[fkey]
	if !ok {
		fits = newBitset(len(p.its))
		for i, it := range p.its {
			if need.fitsIn(it.alloc) {
				fits.set(i)
			}
		}
		p.fits[fkey] = fits
	}
	f := p.fittingOf(rkey, fkey, compat, fits)
	cp.candidates, cp.maxAlloc = f.types, f.maxAlloc
	if cp.candidates.count() == 0 {
		cp.err = s.noInstanceTypeReason(p, compat, need, cp.reqs)
	}
	// A host port the pod needs that a DaemonSet of the new node takes rules
	// the type out, as kube-scheduler would refuse the node.
	if len(c.hostPorts) > 0 && cp.err == nil {
		var taken *hostPort
		cp.candidates = cp.candidates.clone()
		cp.candidates.each(func(i int) bool {
			for _, dp := range p.its[i].daemonPorts {
				if portsConflict([]hostPort{dp}, c.hostPorts) {
					cp.candidates.clear(i)
					taken = &dp
					break
				}
			}
			return true
		})
		if cp.candidates.count() == 0 {
			cp.err = &Reason{Code: ReasonHostPort, Port: taken.port, Protocol: taken.protocol, ByDaemonSet: true}
		}
		cp.maxAlloc = nil
		cp.candidates.each(func(i int) bool { cp.maxAlloc = maxInto(cp.maxAlloc, p.its[i].alloc); return true })
	}
	return cp
}

func vecKey(v vec) string {
	var b strings.Builder
	for _, x := range v {
		fmt.Fprintf(&b, "%d,", x)
	}
	return b.String()
}

// noInstanceTypeReason explains why no instance type of the pool can take
// a pod: none matches its requirements, or the largest that does is too small.
func (s *scheduler) noInstanceTypeReason(p *poolInfo, compat bitset, need vec, reqs scheduling.Requirements) error {
	if len(p.its) == 0 {
		return &Reason{Code: ReasonNoInstanceType, Requirements: p.reqs, OfNodePool: true}
	}
	if compat.count() == 0 {
		return &Reason{Code: ReasonNoInstanceType, Requirements: reqs}
	}
	var largest *itInfo
	compat.each(func(i int) bool {
		it := p.its[i]
		if largest == nil || it.alloc.get(0) > largest.alloc.get(0) ||
			(it.alloc.get(0) == largest.alloc.get(0) && it.alloc.get(1) > largest.alloc.get(1)) {
			largest = it
		}
		return true
	})
	dim := need.firstOver(largest.alloc)
	if dim < 0 {
		dim = 0
	}
	// Name the type that comes closest on the resource that does not fit.
	compat.each(func(i int) bool {
		if p.its[i].alloc.get(dim) > largest.alloc.get(dim) {
			largest = p.its[i]
		}
		return true
	})
	r := &Reason{Code: ReasonTooLarge, Resource: s.dims.names[dim], Needed: fmtQty(s.dims, dim, need.get(dim)), InstanceType: largest.it.Name,
		Allocatable: fmtQty(s.dims, dim, largest.alloc.get(dim)+largest.daemon.get(dim))}
	if ds := largest.daemon.get(dim); ds > 0 {
		r.DaemonSets = fmtQty(s.dims, dim, ds)
	}
	return r
}

// orderPools sorts NodePools by weight, highest first, then by name.
func orderPools(pools []*v1.NodePool) []*v1.NodePool {
	out := append([]*v1.NodePool(nil), pools...)
	sort.SliceStable(out, func(i, j int) bool {
		wi, wj := out[i].WeightOrZero(), out[j].WeightOrZero()
		if wi != wj {
			return wi > wj
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// daemonOverhead sums the requests of the DaemonSet pods that would run on
// a new node of the instance type in this pool: those that tolerate the
// pool's taints and whose required node affinity the node's labels (the
// type's and the pool's) satisfy. A DaemonSet that selects GPU types adds
// nothing to a CPU type.
func (p *poolInfo) daemonOverhead(it *cloudprovider.InstanceType, daemonSets []*corev1.Pod, d *dims) (vec, []hostPort) {
	var out vec
	var ports []hostPort
	for _, ds := range daemonSets {
		if scheduling.Tolerates(p.taints, ds.Spec.Tolerations) != nil {
			continue
		}
		if !runsOn(scheduling.NewNodeAffinity(ds).Required(), it.Requirements, p.reqs) {
			continue
		}
		out = out.plus(d.vec(scheduling.PodRequests(ds)))
		ports = append(ports, podHostPorts(ds)...)
	}
	return out, ports
}

// runsOn: a node labelled from the type's and the pool's requirements can
// satisfy the DaemonSet's: on each key, the type's values (else the
// pool's) meet the DaemonSet's, and a key neither sets is one it allows to
// be absent.
func runsOn(ds, itReqs, pool scheduling.Requirements) bool {
	for _, k := range ds.Keys() {
		r := ds.Get(k)
		switch {
		case itReqs.Has(k):
			if !itReqs.Get(k).Intersects(r) {
				return false
			}
		case pool.Has(k):
			if !pool.Get(k).Intersects(r) {
				return false
			}
		case !r.AllowsAbsence():
			return false
		}
	}
	return true
}
