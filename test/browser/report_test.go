//go:build browser

// Package browser opens Joiner's HTML reports in headless Chromium
// (installed by hack/test.sh from Debian's packages): a screenshot shows
// the charts drawn, and a user's study of a run — hover, drag-zoom, sort,
// a node's click — is driven over the DevTools protocol (chromedp) and
// checked on what the page then shows.
package browser

import (
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/joiner-autoscaler/joiner/examples"
	"github.com/joiner-autoscaler/joiner/pkg/htmlreport"
	"github.com/joiner-autoscaler/joiner/pkg/scenario"
	"github.com/joiner-autoscaler/joiner/pkg/sim"
)

func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium on PATH: hack/test.sh installs Debian's chromium package")
	return ""
}

func TestReportRendersInChromium(t *testing.T) {
	in, err := scenario.Load(examples.Scenarios, "scenarios/default", "default")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(context.Background(), in, examples.Scenarios, "scenarios/default", sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	html := filepath.Join(dir, "report.html")
	f, err := os.Create(html)
	if err != nil {
		t.Fatal(err)
	}
	if err := htmlreport.Write(f, rep, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	shot := filepath.Join(dir, "report.png")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium(t), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--hide-scrollbars", "--window-size=1400,2600", "--screenshot="+shot, "file://"+html)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	if keep := os.Getenv("JOINER_SCREENSHOT"); keep != "" {
		b, _ := os.ReadFile(shot)
		_ = os.WriteFile(keep, b, 0o644)
	}
	pf, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	img, err := png.Decode(pf)
	if err != nil {
		t.Fatal(err)
	}
	// The charts' line colours must appear: a blank page, or one whose
	// script failed, has none of them.
	colored := countColored(img)
	if colored < 2000 {
		t.Fatalf("only %d coloured pixels: the charts did not render", colored)
	}
	t.Logf("screenshot %dx%d, %d coloured pixels", img.Bounds().Dx(), img.Bounds().Dy(), colored)
}

// countColored counts clearly coloured (not grey) pixels.
func countColored(img image.Image) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			hi, lo := max(r, g, bl)>>8, min(r, g, bl)>>8
			if hi-lo > 60 {
				n++
			}
		}
	}
	return n
}
