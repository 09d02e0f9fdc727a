// Command image writes Joiner's container image as an OCI image layout
// (hack/image.sh runs it): what the Dockerfile builds, without a Docker
// daemon or a registry — an empty base, one layer holding the static
// binary at /joiner, user 65532 (nonroot), /joiner as the entrypoint and
// the OCI labels. The same binary and version give the same image, byte for
// byte (fixed file times and creation time).
//
// It is its own Go module so the main module does not take on
// go-containerregistry for a build script.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Options say what goes into the image.
type Options struct {
	Binary   string // the static joiner binary
	Out      string // the OCI layout directory to write (must not exist)
	Version  string // e.g. v0.1.0
	Revision string // the VCS revision, if known
	Arch     string // GOARCH of the binary
}

// User is distroless's nonroot user and group, which the chart's
// securityContext runs as.
const User = "65532:65532"

// Entrypoint is where the binary is in the image.
const Entrypoint = "/joiner"

func main() {
	var o Options
	flag.StringVar(&o.Binary, "binary", "", "the static joiner binary")
	flag.StringVar(&o.Out, "out", "", "the OCI layout directory to write (must not exist)")
	flag.StringVar(&o.Version, "version", "", "the image's version (org.opencontainers.image.version)")
	flag.StringVar(&o.Revision, "revision", "", "the VCS revision (org.opencontainers.image.revision)")
	flag.StringVar(&o.Arch, "arch", runtime.GOARCH, "the binary's GOARCH")
	flag.Parse()
	if err := Write(o); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// Write builds the image and writes it to o.Out as an OCI layout.
func Write(o Options) error {
	if o.Binary == "" || o.Out == "" || o.Version == "" {
		return errors.New("-binary, -out and -version are required")
	}
	if _, err := os.Stat(o.Out); err == nil {
		return fmt.Errorf("-out %s exists: remove it first", o.Out)
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return fmt.Errorf("-binary: %w", err)
	}
	img, err := Image(bin, o)
	if err != nil {
		return err
	}
	p, err := layout.Write(o.Out, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": o.Version}))
}

// Image is the image of the binary.
func Image(bin []byte, o Options) (v1.Image, error) {
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	// Owned by root and not writable: the nonroot user only runs it.
	hdr := &tar.Header{Name: Entrypoint[1:], Mode: 0o555, Size: int64(len(bin)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerBytes := tarBuf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerBytes)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{CreatedBy: "hack/image.sh: COPY joiner /joiner", Created: v1.Time{Time: time.Unix(0, 0).UTC()}}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", o.Arch
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	labels := map[string]string{
		"org.opencontainers.image.title":       "joiner",
		"org.opencontainers.image.description": "Joiner, a node autoscaler that speaks Karpenter's karpenter.sh/v1 API",
		"org.opencontainers.image.source":      "https://github.com/joiner-autoscaler/joiner",
		"org.opencontainers.image.version":     o.Version,
	}
	if o.Revision != "" {
		labels["org.opencontainers.image.revision"] = o.Revision
	}
	cf.Config = v1.Config{User: User, Entrypoint: []string{Entrypoint}, Labels: labels, WorkingDir: "/"}
	return mutate.ConfigFile(img, cf)
}
