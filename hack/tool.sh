#!/usr/bin/env bash
# Usage: hack/tool.sh NAME  — prints the path of a pinned tool (controller-gen,
# staticcheck), building it from hack/tools/go.mod into a cache on first use.
# The cache is keyed by hack/tools/go.sum, so a version bump rebuilds.
set -euo pipefail
name=$1
root=$(cd "$(dirname "$0")/.." && pwd)
case $name in
  controller-gen) pkg=sigs.k8s.io/controller-tools/cmd/controller-gen ;;
  staticcheck) pkg=honnef.co/go/tools/cmd/staticcheck ;;
  *) echo "hack/tool.sh: unknown tool $name (known: controller-gen, staticcheck)" >&2; exit 2 ;;
esac
key=$(sha256sum "$root/hack/tools/go.sum" | cut -c1-12)
dir=${JOINER_TOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/joiner-tools}/$key
bin=$dir/$name
if [ ! -x "$bin" ]; then
  mkdir -p "$dir"
  exec 9>"$dir/.lock"
  flock 9
  if [ ! -x "$bin" ]; then
    echo "building $name (once; cached in $dir)" >&2
    (cd "$root/hack/tools" && GOTOOLCHAIN=local GOFLAGS=-mod=mod go build -o "$bin.tmp" "$pkg")
    mv "$bin.tmp" "$bin"
  fi
fi
echo "$bin"
