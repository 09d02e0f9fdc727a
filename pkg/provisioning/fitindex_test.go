package provisioning

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestFitIndexIsTheTypeByTypePass: keepHolding and maxAlloc answer as the
// pass over every type they replace, on random pools (values repeated,
// zero and negative, vectors of several lengths), candidate sets and
// totals (longer than any type's vector, too).
func TestFitIndexIsTheTypeByTypePass(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for round := 0; round < 2000; round++ {
		its := make([]*itInfo, r.Intn(140))
		for i := range its {
			alloc := make(vec, 3+r.Intn(3))
			for d := range alloc {
				alloc[d] = int64(r.Intn(12) - 2)
			}
			its[i] = &itInfo{alloc: alloc}
		}
		f := newFitIndex(its)
		for q := 0; q < 20; q++ {
			cand := newBitset(len(its))
			for i := range its {
				if r.Intn(4) != 0 {
					cand.set(i)
				}
			}
			total := make(vec, 2+r.Intn(6))
			for d := range total {
				total[d] = int64(r.Intn(14) - 3)
			}
			// The pass the index replaces.
			want := cand.clone()
			var wantMax vec
			want.each(func(i int) bool {
				if !total.fitsIn(its[i].alloc) {
					want.clear(i)
				} else {
					wantMax = maxInto(wantMax, its[i].alloc)
				}
				return true
			})
			got := cand.clone()
			f.keepHolding(got, total)
			gotMax := f.maxAlloc(got, its)
			if fmt.Sprint(got) != fmt.Sprint(want) || (gotMax == nil) != (wantMax == nil) || !sameVec(gotMax, wantMax) {
				t.Fatalf("round %d: total %v over %d types: kept %v max %v, want %v max %v", round, total, len(its), got, gotMax, want, wantMax)
			}
		}
	}
}

// sameVec: equal in every position, missing ones reading as zero.
func sameVec(a, b vec) bool {
	for i := 0; i < max(len(a), len(b)); i++ {
		if a.get(i) != b.get(i) {
			return false
		}
	}
	return true
}
