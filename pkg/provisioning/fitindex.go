package provisioning

import (
	"cmp"
	"slices"
	"sort"
)

// fitIndex answers two questions about a vector per instance type of a
// pool (allocatable, capacity) that a claim asks each time a pod joins
// it: which types' vectors still hold its requests, and the largest
// vector among a set of types. Per dimension it keeps the types' values,
// distinct and largest first, each with the set of types that have at
// least that much; so the first answer is a few word operations per
// dimension instead of a pass over hundreds of types, and the second
// usually stops at the first type it looks at.
type fitIndex struct {
	vecs []vec // by type
	dims []dimIndex
}

type dimIndex struct {
	vals    []int64  // the types' values here, distinct, largest first
	atLeast []bitset // atLeast[k]: the types with at least vals[k]
	order   []int    // the types, largest value here first
}

func newFitIndex(vecs []vec) *fitIndex {
	n := 0
	for _, v := range vecs {
		n = max(n, len(v))
	}
	f := &fitIndex{vecs: vecs, dims: make([]dimIndex, n)}
	type valued struct {
		v int64
		i int
	}
	byValue := make([]valued, len(vecs))
	for d := range f.dims {
		for i, v := range vecs {
			byValue[i] = valued{v.get(d), i}
		}
		// Largest first, ties in type order.
		slices.SortFunc(byValue, func(a, b valued) int {
			if c := cmp.Compare(b.v, a.v); c != 0 {
				return c
			}
			return cmp.Compare(a.i, b.i)
		})
		distinct := 0
		for k, x := range byValue {
			if k+1 == len(byValue) || byValue[k+1].v != x.v {
				distinct++
			}
		}
		di := &f.dims[d]
		di.order = make([]int, len(vecs))
		di.vals = make([]int64, 0, distinct)
		di.atLeast = make([]bitset, 0, distinct)
		words := len(newBitset(len(vecs)))
		backing := make(bitset, distinct*words) // all the sets, in one
		set := newBitset(len(vecs))
		for k, x := range byValue {
			di.order[k] = x.i
			set.set(x.i)
			if k+1 < len(byValue) && byValue[k+1].v == x.v {
				continue // the set for x.v is complete after its last type
			}
			at := backing[len(di.atLeast)*words : (len(di.atLeast)+1)*words : (len(di.atLeast)+1)*words]
			copy(at, set)
			di.vals = append(di.vals, x.v)
			di.atLeast = append(di.atLeast, at)
		}
	}
	return f
}

// keepHolding keeps in cand the types whose vector holds total, as
// total.fitsIn(vector) says: in each dimension total asks anything of, at
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

// max is maxInto over the vectors of cand's types, from nil: nil when
// cand is empty.
func (f *fitIndex) max(cand bitset) vec {
	if len(f.dims) == 0 || cand.count() == 0 {
		return nil
	}
	out := make(vec, len(f.dims))
	for d := range f.dims {
		for _, i := range f.dims[d].order {
			if cand.has(i) {
				out[d] = max(0, f.vecs[i].get(d))
				break
			}
		}
	}
	return out
}
