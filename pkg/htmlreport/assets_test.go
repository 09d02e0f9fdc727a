package htmlreport

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAssetsArePinned: the embedded uPlot is the release hack/uplot.sh
// fetched, byte for byte, as assets/PIN records it.
func TestAssetsArePinned(t *testing.T) {
	pin, err := os.ReadFile(filepath.Join("assets", "PIN"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(pin)), "\n")
	if !strings.HasPrefix(lines[0], "uplot ") || len(lines) != 4 {
		t.Fatalf("assets/PIN does not name a uPlot release and its three files:\n%s", pin)
	}
	embedded := map[string]string{"uPlot.iife.min.js": uplotJS, "uPlot.min.css": uplotCSS}
	for _, l := range lines[1:] {
		sum, name, ok := strings.Cut(l, "  ")
		if !ok {
			t.Fatalf("assets/PIN line %q", l)
		}
		b, err := os.ReadFile(filepath.Join("assets", name))
		if err != nil {
			t.Fatal(err)
		}
		if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != sum {
			t.Errorf("assets/%s is not the pinned file (run hack/uplot.sh)", name)
		}
		if e, ok := embedded[name]; ok && e != string(b) {
			t.Errorf("the embedded %s is not assets/%s", name, name)
		}
	}
}
