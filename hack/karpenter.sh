#!/usr/bin/env bash
# Usage: hack/karpenter.sh  — builds upstream Karpenter's own kwok controller
# (sigs.k8s.io/karpenter, main package kwok/) at a pinned release from the Go
# module proxy (no release downloads or images are reachable here), caches it
# in a directory keyed by version with the CRDs it needs, and prints that
# directory as its last line:
#   karpenter-kwok                         the controller (checked with --help)
#   crds/karpenter.sh_{nodepools,nodeclaims,nodeoverlays}.yaml
#   crds/autoscaling.x-k8s.io_capacitybuffers.yaml  (the release's kwok chart's
#        CRDs: core's, with karpenter.kwok.sh a restricted label domain)
#   crds/karpenter.kwok.sh_kwoknodeclasses.yaml
#   instance_types.json                    upstream kwok's embedded default types
#   VERSION                                release and Go toolchain it was built with
# A warm run takes milliseconds; a cold one several minutes on 2 cores.
# See docs/karpenter-kwok.md for running it against hack/control-plane.sh's
# control plane, and hack/karpenter/instancetypes for Joiner's catalog in
# upstream kwok's instance-type format.
set -euo pipefail
KARPENTER_VERSION=${KARPENTER_VERSION:-1.15.0}
# sigs.k8s.io/karpenter v1.15.0's go.mod says go 1.26.9; this machine's Go is
# 1.26.8. The one newer toolchain the Go module proxy may serve us is
# go1.27.3 (see /work/.library/env/packages/go-partial.tsv): used only for a
# release whose go.mod asks for more than the local Go.
KARPENTER_GOTOOLCHAIN=${KARPENTER_GOTOOLCHAIN:-go1.27.3}
cache=${JOINER_CONTROL_PLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/joiner-control-plane}
dir=$cache/karpenter-v$KARPENTER_VERSION
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9

crds=(karpenter.sh_nodepools.yaml karpenter.sh_nodeclaims.yaml karpenter.sh_nodeoverlays.yaml
  autoscaling.x-k8s.io_capacitybuffers.yaml karpenter.kwok.sh_kwoknodeclasses.yaml)

ok() {
  [ -x "$dir/karpenter-kwok" ] && [ -f "$dir/VERSION" ] && [ -f "$dir/instance_types.json" ] || return 1
  local c
  for c in "${crds[@]}"; do [ -s "$dir/crds/$c" ] || return 1; done
}

if ! ok; then
  export CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"
  work=$dir/src
  mkdir -p "$work"
  cd "$work"
  # The release's go directive decides the toolchain.
  modjson=$(cd "$dir" && GOTOOLCHAIN=local go mod download -json "sigs.k8s.io/karpenter@v$KARPENTER_VERSION" || true)
  gomod=$(printf '%s' "$modjson" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  [ -f "$gomod" ] || { printf '%s\n' "$modjson" >&2; echo "sigs.k8s.io/karpenter@v$KARPENTER_VERSION: not served" >&2; exit 1; }
  need=$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$gomod")
  have=$(GOTOOLCHAIN=local go env GOVERSION); have=${have#go}
  if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" = "$need" ]; then
    export GOTOOLCHAIN=local
  else
    echo "sigs.k8s.io/karpenter v$KARPENTER_VERSION needs go $need (have $have): GOTOOLCHAIN=$KARPENTER_GOTOOLCHAIN" >&2
    export GOTOOLCHAIN=$KARPENTER_GOTOOLCHAIN
  fi
  if ! grep -q "sigs.k8s.io/karpenter v$KARPENTER_VERSION\$" go.mod 2>/dev/null; then
    # A throwaway module: the release's own go.mod has no replace directives,
    # so its requirements are what go get selects.
    printf 'module joiner.local/karpenter\n\ngo %s\n' "$need" > go.mod
    printf '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/karpenter/kwok"\n' > tools.go
    go get "sigs.k8s.io/karpenter@v$KARPENTER_VERSION" >&2
    go mod tidy >&2
  fi
  echo "building sigs.k8s.io/karpenter/kwok v$KARPENTER_VERSION with $(go env GOVERSION) (cached in $dir)" >&2
  SECONDS=0
  go build -ldflags "-s -w -X sigs.k8s.io/karpenter/pkg/operator.Version=v$KARPENTER_VERSION" \
    -o "$dir/karpenter-kwok.tmp" sigs.k8s.io/karpenter/kwok >&2
  echo "built karpenter-kwok in ${SECONDS}s" >&2
  # The check: its flags parse before it looks for a cluster; --help exits 0.
  "$dir/karpenter-kwok.tmp" --help >/dev/null 2>&1 || { echo "karpenter-kwok --help failed" >&2; exit 1; }
  mv "$dir/karpenter-kwok.tmp" "$dir/karpenter-kwok"

  src=$(go list -m -f '{{.Dir}}' sigs.k8s.io/karpenter)
  mkdir -p "$dir/crds"
  cp "$src"/kwok/charts/crds/*.yaml "$dir/crds/"
  cp "$src/kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml" "$dir/crds/"
  cp "$src/kwok/cloudprovider/instance_types.json" "$dir/instance_types.json"
  chmod u+w "$dir"/crds/*.yaml "$dir/instance_types.json"
  printf 'sigs.k8s.io/karpenter v%s\n%s\n' "$KARPENTER_VERSION" "$(go env GOVERSION)" > "$dir/VERSION"
fi
ok || { echo "hack/karpenter.sh: $dir is incomplete" >&2; exit 1; }
echo "$dir"
