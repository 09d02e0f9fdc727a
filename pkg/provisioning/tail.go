package provisioning

import (
	"strings"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
	"github.com/joiner-autoscaler/joiner/pkg/scheduling"
)

// Tails. Joiner's way packs a batch's claims full, so what a plan leaves
// over lies in its last, smallest claim. kube-scheduler does not bind the
// batch as planned: its least-allocated scoring puts each pod on the
// emptiest node, so the batch ends spread evenly over every node, the
// small one filled with small pods, and the plan's slack lies thin over
// all of them. If that slack, summed, is at least the small node's room,
// its pods fit in what the others leave, and consolidation takes it back
// minutes after launch, evicting them: on a real control plane a 1,000-pod
// scale-out's c6g.2xlarge, planned for 4 pods, ran 19 and was deleted in
// the hold that followed (docs/scale.md, session 40), where Karpenter's
// plan, three large nodes 67 % dearer, had nothing to take.
//
// So when a plan's slack, in every resource the cheapest claim's pods ask
// for, is at least that claim's room, the claim's pods join another claim
// of the same NodePool and requirements, on the cheapest type that holds
// both, when that costs at most the tail's price more: no more than the
// saving consolidation would make by taking the tail back. The result is
// still compared with upstream's plan of the batch, and the dearer one
// dropped. Only where nothing can tell the two placements apart: no
// topology on hostname, no host ports, volumes, devices, reservations or
// relaxed minValues.

// absorbTail merges Joiner's plan j's tail into another claim where the
// rule above allows it; not a consolidation's simulation's (NoClaimCaps),
// which asks whether the pods fit in at most one new node.
func absorbTail(snap *Snapshot, j *prepared) {
	if !snap.NoClaimCaps && j.pending() == 0 {
		j.s.absorbTail()
	}
}

// absorbTail merges the plan's tail into another claim where the rule
// above allows it, and reports whether it did.
func (s *scheduler) absorbTail() bool {
	if s.dra != nil || s.res != nil || !s.volumes.Empty() || s.topo.hasKey(v1.LabelHostname) {
		return false
	}
	ti := s.spreadableTail()
	if ti < 0 {
		return false
	}
	t := s.claims[ti]
	tPrice, tKey := t.price(), keyWithoutHostname(t.reqs)
	best, bestExtra := -1, 0.0
	var bestCand bitset
	for i, c := range s.claims {
		if i == ti || c.pool != t.pool || !mergeable(c) || keyWithoutHostname(c.reqs) != tKey {
			continue
		}
		cand := c.candidates.clone()
		cand.and(t.candidates)
		c.pool.fit.keepHolding(cand, c.requests.plus(t.requests))
		if cand.count() == 0 {
			continue
		}
		if _, _, err := checkMinValues(c.reqs, cand, c.pool, false); err != nil {
			continue
		}
		merged := claim{pool: c.pool, reqs: c.reqs, candidates: cand}
		if extra := merged.price() - c.price() - tPrice; best < 0 || extra < bestExtra-1e-9 {
			best, bestExtra, bestCand = i, extra, cand
		}
	}
	if best < 0 || bestExtra > tPrice+1e-9 {
		return false
	}
	c := s.claims[best]
	c.requests = c.requests.plus(t.requests)
	c.candidates = bestCand
	c.maxAlloc = c.pool.fit.max(bestCand)
	c.pods = append(c.pods[:len(c.pods):len(c.pods)], t.pods...)
	// The pods keep their zone (the requirements are the same) and no
	// topology counts hostnames, so the topology's counts stay right; the
	// pool's limits counted each claim's largest candidate, and the merged
	// claim's candidates are a subset of c's.
	s.claims = append(s.claims[:ti:ti], s.claims[ti+1:]...)
	return true
}

// spreadableTail is the index of the plan's tail — its cheapest claim,
// with the fewest pods among equals — when the plan's slack holds the
// tail's room in every resource its pods ask for, else -1. A claim's slack
// counts in whole multiples of the plan's smallest request of the
// resource: a batch of large pods leaves fragments none of them fits in.
func (s *scheduler) spreadableTail() int {
	if len(s.claims) < 2 {
		return -1
	}
	ti := 0
	for i, cl := range s.claims {
		if p, q := cl.price(), s.claims[ti].price(); p < q-1e-9 || p < q+1e-9 && len(cl.pods) < len(s.claims[ti].pods) {
			ti = i
		}
	}
	t := s.claims[ti]
	if !mergeable(t) {
		return -1
	}
	var least vec // the smallest request of each resource, 0 where none asks
	for _, cl := range s.claims {
		for _, p := range cl.pods {
			for d, x := range s.podVec(p) {
				for len(least) <= d {
					least = append(least, 0)
				}
				if x > 0 && (least[d] == 0 || x < least[d]) {
					least[d] = x
				}
			}
		}
	}
	var slack vec
	for _, cl := range s.claims {
		it := cl.cheapest()
		if it == nil {
			return -1
		}
		left := it.alloc.minus(cl.requests)
		for d, x := range left {
			if m := least.get(d); m > 0 && x > 0 {
				left[d] = x / m * m
			}
		}
		slack = slack.plus(left)
	}
	room := t.cheapest().alloc
	for d, x := range t.requests {
		if x > 0 && slack.get(d) < room.get(d) {
			return -1
		}
	}
	return ti
}

// mergeable: nothing but the claim's requirements and requests ties its
// pods to it.
func mergeable(cl *claim) bool {
	return len(cl.ports) == 0 && len(cl.reserved) == 0 && !cl.minRelaxed
}

// keyWithoutHostname is the requirements' CacheKey but for the hostname:
// claims whose keys are equal ask for the same but their own names.
func keyWithoutHostname(rs scheduling.Requirements) string {
	var b strings.Builder
	for _, k := range rs.Keys() {
		if k != v1.LabelHostname {
			b.WriteString(rs[k].CacheKey())
			b.WriteByte(';')
		}
	}
	return b.String()
}

// cheapest is the claim's cheapest candidate type, whose price is the
// claim's (but for reservations); nil when none has an offering its
// requirements allow.
func (cl *claim) cheapest() *itInfo {
	zone, ct := cl.reqs.Get(v1.LabelZone), cl.reqs.Get(v1.LabelCapacityType)
	for _, i := range cl.pool.priceOrder(zone, ct) {
		if cl.candidates.has(i) {
			return cl.pool.its[i]
		}
	}
	return nil
}

// hasKey: some group counts domains of key.
func (t *topology) hasKey(key string) bool {
	for _, g := range t.ordered {
		if g.key == key {
			return true
		}
	}
	return false
}
