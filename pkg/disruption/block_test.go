package disruption

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	v1 "github.com/joiner-autoscaler/joiner/pkg/apis/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestBlockReasonWords keeps the wording of every block reason, the one
// place they are put into words (go test -run TestBlockReasonWords -update
// accepts a change).
func TestBlockReasonWords(t *testing.T) {
	reasons := []BlockReason{
		{Code: BlockNodeDoNotDisrupt},
		{Code: BlockPodDoNotDisrupt, Pod: "shop/web-1"},
		{Code: BlockPodDoNotDisrupt, Pod: "shop/web-1", Value: "30m", Until: "2026-11-30T12:20:00Z"},
		{Code: BlockPDB, PDB: "shop/web", Pod: "shop/web-1"},
		{Code: BlockBudget, NodePool: "general", Budget: v1.DisruptionReasonUnderutilized},
		{Code: BlockDriftNowhere},
		{Code: BlockStaticNoType},
		{Code: BlockSpotToSpotOff},
		{Code: BlockSpotToSpotTypes, Needed: MinSpotToSpotTypes, Found: 2},
	}
	var b strings.Builder
	for _, r := range reasons {
		fmt.Fprintf(&b, "%s: %s\n", r.Code, r)
	}
	const golden = "testdata/block-reasons.golden"
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestBlockReasonWords -update writes it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("the block reasons read:\n%s\nwant (%s):\n%s", b.String(), golden, want)
	}
	if (BlockReason{}).String() != "" || !(BlockReason{}).None() {
		t.Error("the zero BlockReason is no reason")
	}
}
