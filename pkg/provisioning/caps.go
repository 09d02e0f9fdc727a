package provisioning

import (
	"context"
	"math"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

// Claim caps. First fit fills a new claim while any instance type still
// holds it, so a large batch ends on a cloud's largest types — which are
// seldom the cheapest for what the pods ask: on EC2 the best price per
// core and per GiB is a Graviton type of 64 cores or fewer, while the
// types that hold 300 mixed pods are x86 ones of 192 or 384 cores, dearer
// per core by a third. Measured on a real control plane (test/scale, 1,000
// pods in four Deployments) the controller bought three c8i.96xlarge,
// $54/h, for pods that 30 c6g.8xlarge hold for $33/h.
//
// So Joiner's way plans a batch whose new claims outgrow the best-priced
// size once more, with each NodePool's claims capped at the allocatable of
// the type that holds the pods planned there most cheaply, and keeps
// whichever plan is cheaper. A claim's first pod is never refused by the
// cap: a pod larger than it still gets a claim of its own. Upstream's way
// (DecisionsKarpenter) has no caps, and neither has a consolidation's
// simulation (Snapshot.NoClaimCaps): it asks whether the pods fit in at
// most one new node, which a cap would only split.

// claimCaps are, by pool index, the caps a replan would use: nil for a
// pool none of whose claims outgrows twice its best-priced type, and nil
// in all when no claim does. Only a large batch is replanned: capping the
// small batches of a day's scenario (a few pods a claim) bought it nothing
// and, on some seeds of the bundled one, left a pod or two waiting a
// quarter of an hour for a node.
func (s *scheduler) claimCaps() []vec {
	totals := make([]vec, len(s.pools))
	for _, cl := range s.claims {
		totals[cl.poolIdx] = totals[cl.poolIdx].plus(cl.requests)
	}
	var caps []vec
	for i, total := range totals {
		if total == nil {
			continue
		}
		cap := s.pools[i].bestPriced(total)
		if cap == nil {
			continue
		}
		twice := cap.plus(cap)
		for _, cl := range s.claims {
			if cl.poolIdx == i && !cl.requests.fitsIn(twice) {
				if caps == nil {
					caps = make([]vec, len(s.pools))
				}
				caps[i] = cap
				break
			}
		}
	}
	return caps
}

// capTolerance: a type within this share of the best fluid cost counts as
// best-priced, and the largest of those is the cap; a capped plan must
// save this share of the uncapped one's price to be kept. More, smaller
// nodes for a saving within the noise of prices only add nodes — each one
// more to interrupt, drain and consolidate.
const capTolerance = 0.03

// bestPriced is the allocatable of the largest of the pool's types that
// hold total at about the least price (within capTolerance), counted as a
// fluid: a type's price times the most any resource of total needs of it;
// ties go to the fewer nodes, then by name. nil when no type can be priced.
func (p *poolInfo) bestPriced(total vec) vec {
	zone, ct := p.reqs.Get(v1.LabelZone), p.reqs.Get(v1.LabelCapacityType)
	type costed struct {
		it          *itInfo
		nodes, cost float64
	}
	var all []costed
	least := math.Inf(1)
	for _, it := range p.its {
		price := it.it.Offerings.CheapestPriceWith(zone, ct)
		if math.IsInf(price, 1) {
			continue
		}
		nodes := 0.0
		for d, x := range total {
			if x <= 0 {
				continue
			}
			a := it.alloc.get(d)
			if a <= 0 {
				nodes = math.Inf(1)
				break
			}
			nodes = math.Max(nodes, float64(x)/float64(a))
		}
		if math.IsInf(nodes, 1) {
			continue
		}
		all = append(all, costed{it, nodes, nodes * price})
		least = math.Min(least, nodes*price)
	}
	var best *costed
	for i := range all {
		c := &all[i]
		switch {
		case c.cost > least*(1+capTolerance):
			continue
		case best == nil || c.nodes < best.nodes-1e-9:
		case c.nodes > best.nodes+1e-9 || c.it.it.Name > best.it.it.Name:
			continue
		}
		best = c
	}
	if best == nil {
		return nil
	}
	return best.it.alloc
}

// capFits: the claim may take requests more under the scheduler's cap for
// its pool (always, for its first pod or without a cap).
func (s *scheduler) capFits(cl *claim, requests vec) bool {
	if s.caps == nil || len(cl.pods) == 0 {
		return true
	}
	cap := s.caps[cl.poolIdx]
	return cap == nil || sumFitsIn(cl.requests, requests, cap)
}

// memoUse says whether a plan has the Planner's memos to itself.
type memoUse bool

const (
	memosOwned  memoUse = false
	memosShared memoUse = true // another plan reads them meanwhile
)

// refined is Joiner's plan j, or the same batch planned again with claim
// caps when that is cheaper (see claimCaps), or again in mixed order when
// that is cheaper still (see mixedPodOrder); memos says whether another
// plan reads the memos meanwhile. A consolidation's simulation
// (NoClaimCaps) is not refined: it asks for at most one new node.
func (pl *Planner) refined(ctx context.Context, snap *Snapshot, j *prepared, memos memoUse) *prepared {
	if snap.NoClaimCaps || ctx.Err() != nil || len(j.s.claims) < 1 {
		return j
	}
	best := j
	caps := j.s.claimCaps()
	if caps != nil {
		if k := pl.replan(ctx, snap, caps, largestFirst, memos); ctx.Err() == nil && k.pending() <= j.pending() && k.price() < j.price()*(1-capTolerance) {
			best = k
		}
	}
	if len(best.s.claims) < 2 || !mixable(j.pods, j.classOf) {
		return best
	}
	// Mixed with the caps only where capping paid on its own: more,
	// smaller nodes must save capTolerance over the uncapped plan.
	if best == j {
		caps = nil
	}
	if m := pl.replan(ctx, snap, caps, mixed, memos); ctx.Err() == nil && m.pending() <= best.pending() && m.price() < best.price()-1e-9 {
		return m
	}
	return best
}

// replan plans the batch Joiner's way again, with caps (nil: none) and
// the pods in order.
func (pl *Planner) replan(ctx context.Context, snap *Snapshot, caps []vec, order podOrder, memos memoUse) *prepared {
	k := pl.startAs(snap, DecisionsJoiner, pl.caches)
	k.s.caps = caps
	k.s.memosShared = memos == memosShared
	k.order = order
	k.finish(snap)
	k.run(ctx)
	return k
}
