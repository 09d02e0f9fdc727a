package provisioning

import "sort"

// fitIndex answers two questions about a pool's instance types that a
// claim asks each time a pod joins it: which of them still hold its
// requests, and the largest allocatable among those left. Per dimension
// it keeps the types' allocatable values, distinct and largest first,
// each with the set of types that have at least that much; so the first
// answer is a few word operations per dimension instead of a pass over
// hundreds of types, and the second usually stops at the first type it
// looks at.
type fitIndex struct {
	dims []dimIndex
}

type dimIndex struct {
	vals    []int64  // the types' allocatable here, distinct, largest first
	atLeast []bitset // atLeast[k]: the types with at least vals[k]
	order   []int    // the types, largest allocatable here first
}

func newFitIndex(its []*itInfo) *fitIndex {
	n := 0
	for _, it := range its {
		n = max(n, len(it.alloc))
	}
	f := &fitIndex{dims: make([]dimIndex, n)}
	for d := range f.dims {
		di := &f.dims[d]
		di.order = make([]int, len(its))
		for i := range its {
			di.order[i] = i
		}
		sort.SliceStable(di.order, func(a, b int) bool { return its[di.order[a]].alloc.get(d) > its[di.order[b]].alloc.get(d) })
		set := newBitset(len(its))
		for k, i := range di.order {
			set.set(i)
			v := its[i].alloc.get(d)
			if k+1 < len(di.order) && its[di.order[k+1]].alloc.get(d) == v {
				continue // the set for v is complete after its last type
			}
			di.vals = append(di.vals, v)
			di.atLeast = append(di.atLeast, set.clone())
		}
	}
	return f
}

// keepHolding keeps in cand the types whose allocatable holds total, as
// total.fitsIn(alloc) says: in each dimension total asks anything of, at
// least as much.
func (f *fitIndex) keepHolding(cand bitset, total vec) {
	for d, x := range total {
		if x <= 0 {
			continue
		}
		if d >= len(f.dims) {
			cand.and(nil) // no type has any of it
			return
		}
		di := &f.dims[d]
		// The last value (the smallest) that is still at least x.
		k := sort.Search(len(di.vals), func(k int) bool { return di.vals[k] < x }) - 1
		if k < 0 {
			cand.and(nil)
			return
		}
		cand.and(di.atLeast[k])
	}
}

// maxAlloc is maxInto over the allocatable of cand's types, from nil: nil
// when cand is empty.
func (f *fitIndex) maxAlloc(cand bitset, its []*itInfo) vec {
	if len(f.dims) == 0 || cand.count() == 0 {
		return nil
	}
	out := make(vec, len(f.dims))
	for d := range f.dims {
		for _, i := range f.dims[d].order {
			if cand.has(i) {
				out[d] = max(0, its[i].alloc.get(d))
				break
			}
		}
	}
	return out
}
