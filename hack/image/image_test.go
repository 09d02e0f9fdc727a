package main

import (
	"archive/tar"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestImageScript runs hack/image.sh and opens what it wrote: an OCI layout
// of one image, with one layer holding a static /joiner, run as 65532 with
// /joiner as the entrypoint and the OCI labels; the binary taken out of
// the layer runs `joiner version` and reports the labelled version.
func TestImageScript(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "image")
	cmd := exec.Command(filepath.Join("..", "image.sh"), dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/image.sh: %v", err)
	}
	if got := strings.TrimSpace(string(out)); got != dir {
		t.Errorf("hack/image.sh printed %q, want %q", got, dir)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("%d manifests in the layout, want 1", len(im.Manifests))
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	version := cf.Config.Labels["org.opencontainers.image.version"]
	if cf.Config.User != "65532:65532" || !slices.Equal(cf.Config.Entrypoint, []string{"/joiner"}) || cf.OS != "linux" ||
		!strings.HasPrefix(version, "v") || cf.Config.Labels["org.opencontainers.image.source"] == "" {
		t.Errorf("config: user %q, entrypoint %v, os %s, labels %v", cf.Config.User, cf.Config.Entrypoint, cf.OS, cf.Config.Labels)
	}
	if ref := im.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; ref != version {
		t.Errorf("ref.name %q, version label %q", ref, version)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers (%v), want 1", len(layers), err)
	}
	bin := extract(t, layers[0], "joiner")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("/joiner is dynamically linked: an empty base has no loader or libc")
		}
	}
	f.Close()
	got, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("/joiner version: %v", err)
	}
	if first, _, _ := strings.Cut(string(got), "\n"); !strings.HasPrefix(first, "joiner "+version) {
		t.Errorf("/joiner version printed %q, want joiner %s", first, version)
	}
}

// extract writes the layer's file name to a temporary executable.
func extract(t *testing.T, layer interface {
	Uncompressed() (io.ReadCloser, error)
}, name string) string {
	t.Helper()
	rc, err := layer.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var files []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, hdr.Name)
		if hdr.Name != name {
			continue
		}
		if hdr.Uid != 0 || hdr.Mode&0o222 != 0 {
			t.Errorf("/%s: uid %d, mode %o; want root's and not writable", name, hdr.Uid, hdr.Mode)
		}
		path := filepath.Join(t.TempDir(), name)
		w, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, tr); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if len(files) != 1 {
			t.Errorf("the layer holds %v, want only %s", files, name)
		}
		return path
	}
	t.Fatalf("the layer holds %v, not %s", files, name)
	return ""
}

// TestImageIsReproducible: the same binary and options give the same digest.
func TestImageIsReproducible(t *testing.T) {
	o := Options{Version: "v0.0.0-test", Revision: "abc", Arch: "amd64"}
	a, err := Image([]byte("binary"), o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Image([]byte("binary"), o)
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Errorf("digests %s and %s", da, db)
	}
	if err := Write(Options{Binary: "x", Out: t.TempDir(), Version: "v1"}); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("writing over an existing directory: %v", err)
	}
}

// TestDockerfileBuildsTheSameImage: the Dockerfile's final stage is what
// Image writes — an empty base, the binary at the entrypoint, the same user.
// (No Docker daemon runs here to build it.)
func TestDockerfileBuildsTheSameImage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	stages := strings.Split(string(b), "\nFROM ")
	final := stages[len(stages)-1]
	for _, want := range []string{"scratch\n", "COPY --from=build --chmod=0555 /out/joiner " + Entrypoint + "\n", "USER " + User + "\n", `ENTRYPOINT ["` + Entrypoint + `"]`} {
		if !strings.Contains(final, want) {
			t.Errorf("the Dockerfile's final stage lacks %q:\nFROM %s", want, final)
		}
	}
	if !strings.Contains(string(b), "CGO_ENABLED=0") {
		t.Error("the Dockerfile does not build a static binary (CGO_ENABLED=0)")
	}
}
