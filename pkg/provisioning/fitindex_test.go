package provisioning

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestFitIndexIsTheTypeByTypePass: keepHolding and max answer as the
// pass over every type they replace, on random pools (values repeated,
// zero and negative, vectors of several lengths), candidate sets and
// totals (longer than any type's vector, too).
func TestFitIndexIsTheTypeByTypePass(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for round := 0; round < 2000; round++ {
		vecs := make([]vec, r.Intn(140))
		for i := range vecs {
			vecs[i] = make(vec, 3+r.Intn(3))
			for d := range vecs[i] {
				vecs[i][d] = int64(r.Intn(12) - 2)
			}
		}
		f := newFitIndex(vecs)
		for q := 0; q < 20; q++ {
			cand := newBitset(len(vecs))
			for i := range vecs {
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
				if !total.fitsIn(vecs[i]) {
					want.clear(i)
				} else {
					wantMax = maxInto(wantMax, vecs[i])
				}
				return true
			})
			got := cand.clone()
			f.keepHolding(got, total)
			gotMax := f.max(got)
			if fmt.Sprint(got) != fmt.Sprint(want) || (gotMax == nil) != (wantMax == nil) || !sameVec(gotMax, wantMax) {
				t.Fatalf("round %d: total %v over %d types: kept %v max %v, want %v max %v", round, total, len(vecs), got, gotMax, want, wantMax)
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
