package provisioning

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

func trailingZeros(w uint64) int { return bits.TrailingZeros64(w) }

var (
	errHostPort  = &Reason{Code: ReasonHostPort}
	errNoRoom    = &Reason{Code: ReasonNoRoom}
	errFull      = &Reason{Code: ReasonNodeFull}
	errDeleting  = &Reason{Code: ReasonNodeDeleting}
	errNotPlaced = &Reason{Code: ReasonNotPlaced}
)

// existingTarget is an existing node or in-flight claim being filled.
type existingTarget struct {
	node        *Node
	memo        *nodeMemo
	idx         int
	labels      map[string]string
	alloc, used vec
	ports       []hostPort
	portsKnown  bool // ports of bound pods are read on first need
	added       []*corev1.Pod
}

// tryAdd places the pod if the node can run it. The boolean says the
// failure is permanent for the class (it cannot change as pods are added).
func (e *existingTarget) tryAdd(s *scheduler, c *podClass, pod *corev1.Pod) (permanent bool, err error) {
	if permanent, err := e.check(s, c); err != nil {
		return permanent, err
	}
	if s.dra != nil && asksForDevices(c) {
		// Devices only get taken in a pass: a class's claims that do not
		// fit the node now never will.
		a, err := s.dra.onNode(e.node, e.labels, pod)
		if err != nil {
			return true, err
		}
		s.dra.commitNode(e.node.Name, a)
	}
	e.add(s, c, pod)
	return false, nil
}

// check reports whether the node can run a pod of the class now, without
// changing anything; the boolean says a failure is permanent for the class.
func (e *existingTarget) check(s *scheduler, c *podClass) (permanent bool, err error) {
	n := e.node
	if n.MarkedForDeletion {
		return true, errDeleting
	}
	taints := n.Taints
	if n.InFlight {
		taints, _ = scheduling.WithTaint(taints, v1.UnregisteredTaint, false)
	}
	if err := scheduling.ToleratesForScheduling(taints, c.tolerations); err != nil {
		return true, err
	}
	if !c.reqs.MatchesLabels(e.labels) {
		return true, fmt.Errorf("the node's labels do not satisfy %s", c.reqs)
	}
	if !sumFitsIn(e.used, c.requests, e.alloc) {
		return true, errFull
	}
	if len(c.hostPorts) > 0 {
		if !e.portsKnown {
			for _, p := range n.Pods {
				e.ports = append(e.ports, podHostPorts(p)...)
			}
			e.portsKnown = true
		}
		if portsConflict(e.ports, c.hostPorts) {
			return true, errHostPort
		}
	}
	if _, err := s.topo.check(c, existingDomains(n), func(g *topoGroup) []string { return s.eligible(c, g) }); err != nil {
		return permanentTopology(err), err
	}
	return false, nil
}

// add places a pod of the class that check accepted.
func (e *existingTarget) add(s *scheduler, c *podClass, pod *corev1.Pod) {
	e.used = e.used.plus(c.requests)
	e.ports = append(e.ports, c.hostPorts...)
	e.added = append(e.added, pod)
	s.topo.record(c, existingDomains(e.node))
}

// permanentTopology says a topology.check error is permanent for the
// class. Its errors come unwrapped (see reject): a type assertion, not
// errors.As, which costs more than the check on the claims a spread
// class tries and is refused by, tens of thousands a large batch.
func permanentTopology(err error) bool {
	te, ok := err.(*topologyError)
	return ok && te.permanent
}

func portsConflict(have, want []hostPort) bool {
	for _, w := range want {
		for _, h := range have {
			if w.conflicts(h) {
				return true
			}
		}
	}
	return false
}

// eligible lists the domains of a spread group's key that count for the
// class's minimum: all known ones, or (nodeAffinityPolicy Honor) those its
// node requirements allow.
func (s *scheduler) eligible(c *podClass, g *topoGroup) []string {
	if e, ok := c.eligible[g]; ok {
		return e
	}
	all := s.topo.universe[g.key]
	if g.honorTaints {
		all = s.toleratedDomains(c, g.key)
	}
	var out []string
	if g.honorAffinity && c.affinity.Has(g.key) {
		r := c.affinity.Get(g.key)
		for _, d := range all {
			if r.Has(d) {
				out = append(out, d)
			}
		}
	} else {
		out = all
	}
	if c.eligible == nil {
		c.eligible = map[*topoGroup][]string{}
	}
	c.eligible[g] = out
	return out
}

// claim is a NodeClaim being planned.
type claim struct {
	pool       *poolInfo
	poolIdx    int
	name       string
	reqs       scheduling.Requirements
	requests   vec
	candidates bitset
	maxAlloc   vec
	pods       []*corev1.Pod
	ports      []hostPort
	// minRelaxed: BestEffort lowered a minValues to what the types allow.
	minRelaxed bool
	// reserved are the IDs of the capacity reservations the claim holds
	// (see reservations), sorted.
	reserved []string
}

func (cl *claim) domains(reqs scheduling.Requirements, universe map[string][]string) domainsOf {
	return func(key string) ([]string, bool) {
		if key == v1.LabelHostname {
			return []string{cl.name}, true
		}
		r := reqs.Get(key)
		if vals := r.Values(); vals != nil || !reqs.Has(key) && len(universe[key]) == 0 {
			return vals, len(vals) == 1
		}
		var out []string
		for _, d := range universe[key] {
			if r.Has(d) {
				out = append(out, d)
			}
		}
		return out, len(out) == 1
	}
}

// price is the Price of the claim's plan (see finalize): its cheapest
// type's cheapest offering its requirements allow.
func (cl *claim) price() float64 {
	zone, ct := cl.reqs.Get(v1.LabelZone), cl.reqs.Get(v1.LabelCapacityType)
	if len(cl.reserved) > 0 {
		return cl.reservedPrice(zone)
	}
	if it := cl.cheapest(); it != nil {
		return it.it.Offerings.CheapestPriceWith(zone, ct)
	}
	return 0
}

// reservedPrice is the price of a claim pinned to its reservations (see
// finalize): its cheapest offering in one of them.
func (cl *claim) reservedPrice(zone *scheduling.Requirement) float64 {
	best := math.Inf(1)
	for _, i := range cl.pool.reserved {
		if !cl.candidates.has(i) {
			continue
		}
		for _, o := range cl.pool.its[i].it.Offerings {
			if o.Reservation != nil && o.Available && o.Price < best && zone.Has(o.Zone) && slices.Contains(cl.reserved, o.Reservation.ID) {
				best = o.Price
			}
		}
	}
	return best
}

// claimUpdate is the state a claim moves to when a pod joins it.
type claimUpdate struct {
	reqs       scheduling.Requirements
	total      vec
	candidates bitset
	maxAlloc   vec
	minRelaxed bool // reqs' minValues were lowered (BestEffort)
	reserved   []string
	// devices: what the pod's device claims take, per candidate type.
	devices map[int]*allocation
}

func (cl *claim) tryAdd(s *scheduler, c *podClass, pod *corev1.Pod) (permanent bool, err error) {
	u, permanent, err := cl.check(s, c)
	if err != nil {
		return permanent, err
	}
	cl.reqs = u.reqs
	cl.requests = u.total
	cl.candidates = u.candidates
	cl.maxAlloc = u.maxAlloc
	cl.minRelaxed = cl.minRelaxed || u.minRelaxed
	if s.res != nil {
		s.res.hold(cl, u.reserved)
	}
	if u.devices != nil {
		s.dra.commitClaim(cl, u.devices)
	}
	cl.pods = append(cl.pods, pod)
	cl.ports = append(cl.ports, c.hostPorts...)
	s.topo.record(c, cl.domains(u.reqs, s.topo.universe))
	return false, nil
}

// check computes whether the class can join the claim, and the claim's
// state if it does, without changing anything.
func (cl *claim) check(s *scheduler, c *podClass) (u *claimUpdate, permanent bool, err error) {
	cp := s.poolCheck(c, cl.pool, cl.poolIdx)
	if cp.err != nil {
		return nil, true, cp.err
	}
	reqs, err := cl.joinedReqs(c)
	if err != nil {
		return nil, true, err
	}
	if portsConflict(cl.ports, c.hostPorts) {
		return nil, true, errHostPort
	}
	if !sumFitsIn(cl.requests, c.requests, cl.maxAlloc) || !s.capFits(cl, c.requests) {
		return nil, true, errNoRoom
	}
	narrow, err := s.topo.check(c, cl.domains(reqs, s.topo.universe), func(g *topoGroup) []string { return s.eligible(c, g) })
	if err != nil {
		return nil, permanentTopology(err), err
	}
	total := cl.requests.plus(c.requests)
	reqs = narrowed(reqs, narrow)
	recheckKeys, recheck := cl.recheckKeys(c, narrow)
	cand, maxAlloc, fitAny := cl.holding(cp.candidates, total, reqs, recheckKeys, recheck)
	if maxAlloc == nil {
		if !fitAny {
			return nil, true, errNoRoom
		}
		return nil, len(narrow) == 0, &Reason{Code: ReasonNoRemainingType, Requirements: reqs}
	}
	var devices map[int]*allocation
	if s.dra != nil && asksForDevices(c) {
		// Before minValues, as upstream's allocator runs before the types
		// are filtered; permanent, as devices only get taken.
		if cand, devices, err = s.dra.onClaim(cl, cand, reqLabels(reqs), c.spec); err != nil {
			return nil, true, err
		}
		maxAlloc = cl.pool.fit.max(cand)
	}
	reqs, relaxed, err := checkMinValues(reqs, cand, cl.pool, s.minValues == MinValuesBestEffort)
	if err != nil {
		return nil, true, err
	}
	var reserved []string
	if s.res != nil {
		// Not permanent: the reservations a pass counts down are given
		// back when a claim's later pods rule them out.
		if reserved, err = s.res.check(cl, cand, reqs); err != nil {
			return nil, false, err
		}
	}
	return &claimUpdate{reqs: reqs, total: total, candidates: cand, maxAlloc: maxAlloc, minRelaxed: relaxed, reserved: reserved, devices: devices}, false, nil
}

// joinedReqs are the claim's requirements with the class's merged in, or
// why the two are incompatible. Without class requirements they are the
// claim's own, not a copy.
func (cl *claim) joinedReqs(c *podClass) (scheduling.Requirements, error) {
	if len(c.reqs) == 0 {
		return cl.reqs, nil
	}
	if err := cl.reqs.Compatible(c.reqs, func(k string) bool { return cl.pool.wellKnown[k] }); err != nil {
		return nil, err
	}
	reqs := cl.reqs.Copy()
	reqs.Merge(c.reqs)
	return reqs, nil
}

// narrowed is reqs (copied) with each key topology narrows to one domain
// pinned to it; reqs itself when there is none.
func narrowed(reqs scheduling.Requirements, narrow map[string]string) scheduling.Requirements {
	if len(narrow) == 0 {
		return reqs
	}
	reqs = reqs.Copy()
	for k, v := range narrow {
		reqs.Add(scheduling.NewRequirement(k, corev1.NodeSelectorOpIn, v))
	}
	return reqs
}

// recheckKeys says whether the candidates need a second look against the
// joined requirements, and on which keys. Candidates are compatible with
// the claim and, separately, with the class; for single-valued
// instance-type labels that makes them compatible with both. Only
// multi-valued keys (zone, capacity type) and keys topology just narrowed
// need a second look.
func (cl *claim) recheckKeys(c *podClass, narrow map[string]string) ([]string, bool) {
	if len(c.reqs) == 0 && len(narrow) == 0 {
		return nil, false
	}
	keys := cl.pool.multiKeys
	for k := range narrow {
		keys = append(keys[:len(keys):len(keys)], k)
	}
	return keys, true
}

// holding keeps the claim's candidates (and the class's, poolCand) that
// hold total and, with recheck, still have an available offering reqs
// allow; maxAlloc is the largest allocatable among them (nil: none kept),
// fitAny whether any held total at all.
func (cl *claim) holding(poolCand bitset, total vec, reqs scheduling.Requirements, recheckKeys []string, recheck bool) (bitset, vec, bool) {
	cand := cl.candidates.clone()
	cand.and(poolCand)
	cl.pool.fit.keepHolding(cand, total)
	fitAny := cand.count() > 0
	if recheck {
		// Zone and capacity type are rechecked against the pool's cached
		// answer for the pair; other keys type by type.
		cand.and(cl.pool.offerable(reqs))
		var others []string
		for _, k := range recheckKeys {
			if k != v1.LabelZone && k != v1.LabelCapacityType {
				others = append(others, k)
			}
		}
		if len(others) > 0 {
			cand.each(func(i int) bool {
				if !keysIntersect(cl.pool.its[i].it.Requirements, reqs, others) {
					cand.clear(i)
				}
				return true
			})
		}
	}
	return cand, cl.pool.fit.max(cand), fitAny
}

// checkMinValues: each requirement with minValues must still be spanned by
// at least that many distinct values among the candidate instance types.
// With bestEffort one that is not is lowered to the values that remain,
// as upstream's MinValuesPolicy BestEffort does (reqs copied; relaxed
// says so), instead of failing.
func checkMinValues(reqs scheduling.Requirements, cand bitset, p *poolInfo, bestEffort bool) (scheduling.Requirements, bool, error) {
	wanted := false
	for _, r := range reqs {
		wanted = wanted || r.MinValues != nil
	}
	if !wanted {
		return reqs, false, nil
	}
	out, relaxed := reqs, false
	for _, k := range reqs.Keys() {
		r := reqs[k]
		if r.MinValues == nil {
			continue
		}
		seen := map[string]bool{}
		cand.each(func(i int) bool {
			for _, v := range p.its[i].it.Requirements.Get(k).Values() {
				if r.Has(v) {
					seen[v] = true
				}
			}
			return len(seen) < *r.MinValues
		})
		if len(seen) >= *r.MinValues {
			continue
		}
		if !bestEffort {
			return nil, false, &Reason{Code: ReasonMinValues, Key: k, MinValues: *r.MinValues, Distinct: len(seen)}
		}
		if !relaxed {
			out, relaxed = reqs.Copy(), true
		}
		lowered := *r // requirements are shared: a new one with the lower minimum
		n := len(seen)
		lowered.MinValues = &n
		out[k] = &lowered
	}
	return out, relaxed, nil
}

// newClaim starts a NodeClaim from pool p for the pod.
func (s *scheduler) newClaim(p *poolInfo, pi int, c *podClass, pod *corev1.Pod) (*claim, error) {
	cl, err := s.draftClaim(p, pi, c)
	if err != nil {
		return nil, err
	}
	if _, err := cl.tryAdd(s, c, pod); err != nil {
		return nil, err
	}
	s.claims = append(s.claims, cl)
	if s.onFirstClaim != nil {
		s.onFirstClaim()
		s.onFirstClaim = nil
	}
	if s.upstream {
		s.addClaimUpstream(len(s.claims) - 1)
	}
	if p.hasLimits {
		p.consume(p.capFit.max(cl.candidates), s.dims) // the largest it may be
	}
	return cl, nil
}

// whyNoClaim is why pool p can start no NodeClaim for a pod of class c
// (errNotPlaced when nothing stops it), starting none.
func (s *scheduler) whyNoClaim(p *poolInfo, pi int, c *podClass) error {
	cl, err := s.draftClaim(p, pi, c)
	if err != nil {
		return err
	}
	if _, _, err := cl.check(s, c); err != nil {
		return err
	}
	return errNotPlaced
}

// draftClaim is an empty NodeClaim of pool p that a pod of class c may
// start: the pool's instance types that fit the class, within the pool's
// limits.
func (s *scheduler) draftClaim(p *poolInfo, pi int, c *podClass) (*claim, error) {
	if p.np.IsStatic() {
		return nil, &Reason{Code: ReasonStatic, Replicas: *p.np.Spec.Replicas}
	}
	cp := s.poolCheck(c, p, pi)
	if cp.err != nil {
		return nil, cp.err
	}
	cand, maxAlloc := cp.candidates.clone(), cp.maxAlloc
	// The limits rule out the types too large for what is left of them:
	// none when the largest capacity among the candidates fits.
	if p.hasLimits && !p.withinLimits(p.capFit.max(cand), s.dims) {
		cand.each(func(i int) bool {
			if !p.withinLimits(p.its[i].capacity, s.dims) {
				cand.clear(i)
			}
			return true
		})
		if cand.count() == 0 {
			return nil, p.limitsReason(s.dims)
		}
		maxAlloc = p.fit.max(cand)
	}
	name := fmt.Sprintf("%s-%05d", p.np.Name, len(s.claims)+1)
	reqs := p.reqs.Copy()
	reqs.Add(scheduling.NewRequirement(v1.LabelHostname, corev1.NodeSelectorOpIn, name))
	return &claim{pool: p, poolIdx: pi, name: name, reqs: reqs, candidates: cand, maxAlloc: maxAlloc}, nil
}

func keysIntersect(have, want scheduling.Requirements, keys []string) bool {
	for _, k := range keys {
		if h, ok := have[k]; ok && want.Has(k) && !h.Intersects(want[k]) {
			return false
		}
	}
	return true
}

// toleratedDomains are the domains of key offered by NodePools (and
// existing nodes) whose taints the class tolerates.
func (s *scheduler) toleratedDomains(c *podClass, key string) []string {
	seen := map[string]bool{}
	for _, p := range s.pools {
		if scheduling.Tolerates(p.taints, c.tolerations) != nil {
			continue
		}
		for _, it := range p.its {
			for _, v := range it.it.Requirements.Get(key).Values() {
				if p.reqs.Get(key).Has(v) {
					seen[v] = true
				}
			}
		}
		for _, v := range p.reqs.Get(key).Values() {
			seen[v] = true
		}
	}
	for _, e := range s.existing {
		if v, ok := e.labels[key]; ok && scheduling.ToleratesForScheduling(e.node.Taints, c.tolerations) == nil {
			seen[v] = true
		}
	}
	var out []string
	for _, d := range s.topo.universe[key] {
		if seen[d] {
			out = append(out, d)
		}
	}
	return out
}
