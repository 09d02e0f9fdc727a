#!/usr/bin/env bash
# Usage: hack/image.sh [DIR]  — builds Joiner's container image as an OCI
# image layout in DIR (default bin/image; replaced if it exists) and prints
# DIR. The same image as the Dockerfile's, without a Docker daemon or a
# registry: a static binary (CGO_ENABLED=0) in one layer on an empty base,
# user 65532, entrypoint /joiner, OCI labels (hack/image/main.go writes it
# with go-containerregistry). Push it with any OCI tool, e.g.
#   crane push bin/image ghcr.io/joiner-autoscaler/joiner:v0.1.0
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/bin/image}
export GOTOOLCHAIN=local CGO_ENABLED=0 GOOS=linux
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$root" && go build -trimpath -ldflags "-s -w" -o "$work/joiner" ./cmd/joiner)
# The version `joiner version` reports: its first line is "joiner vX.Y.Z [revision]".
version=$("$work/joiner" version | awk 'NR==1 {print $2}')
revision=$(git -C "$root" rev-parse HEAD 2>/dev/null || true)
rm -rf "$out"
mkdir -p "$(dirname "$out")"
(cd "$root/hack/image" && go run . -binary "$work/joiner" -out "$out" -version "$version" -revision "$revision" -arch "$(go env GOARCH)")
echo "$out"
