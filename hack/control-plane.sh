#!/usr/bin/env bash
# Usage: hack/control-plane.sh  — builds a real kube-apiserver, kube-scheduler,
# kube-controller-manager, etcd and kwok's controller from the Go module proxy
# (no release downloads are reachable here), caches them in a directory keyed
# by version, and prints that directory (use it as KUBEBUILDER_ASSETS for
# controller-runtime's envtest), with kwok-stages.yaml for kwok --config.
# Only missing binaries are built. A warm run
# takes milliseconds; a cold one 15-30 minutes on 2 cores.
set -euo pipefail
K8S_VERSION=${K8S_VERSION:-1.37.2}
ETCD_VERSION=${ETCD_VERSION:-3.6.16}
KWOK_VERSION=${KWOK_VERSION:-0.8.0}
cache=${JOINER_CONTROL_PLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/joiner-control-plane}
dir=$cache/k8s-v$K8S_VERSION-etcd-v$ETCD_VERSION
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"

ok() { [ -x "$dir/$1" ] && "$dir/$1" --version >/dev/null 2>&1; }

kube_bins=(kube-apiserver kube-scheduler kube-controller-manager)

build_kube() {
  local work=$dir/src-kubernetes
  mkdir -p "$work"
  cd "$work"
  if [ ! -f go.mod ]; then
    cat > go.mod <<EOM
module joiner.local/controlplane

go 1.26
EOM
    # k8s.io/kubernetes replaces its staging modules with local paths; point
    # each at the published module of the matching version instead.
    local modjson gomod
    modjson=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION")
    gomod=$(printf '%s' "$modjson" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    grep -E '^\s*k8s.io/[a-z0-9-]+ => ./staging/' "$gomod" | awk '{print $1}' |
      grep -vE 'sample-cli-plugin|sample-controller' | while read -r m; do
        echo "replace $m => $m v0.${K8S_VERSION#1.}" >> go.mod
      done
    echo "require k8s.io/kubernetes v$K8S_VERSION" >> go.mod
  fi
  # Rewritten every time so a cache made before a binary was added learns it;
  # tidy only when the list changed.
  local tools
  tools=$(printf '//go:build tools\n\npackage tools\n\nimport (\n'
    printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "${kube_bins[@]}"
    printf ')')
  if [ "$(cat tools.go 2>/dev/null)" != "$tools" ]; then
    printf '%s\n' "$tools" > tools.go
    go mod tidy >&2
  fi
  local minor=${K8S_VERSION#1.}; minor=${minor%%.*}
  local ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
  done
  for bin in "$@"; do
    echo "building $bin v$K8S_VERSION (cached in $dir)" >&2
    SECONDS=0
    go build -ldflags "$ld" -o "$dir/$bin.tmp" "k8s.io/kubernetes/cmd/$bin" >&2
    mv "$dir/$bin.tmp" "$dir/$bin"
    echo "built $bin in ${SECONDS}s" >&2
  done
}

build_etcd() {
  local work=$dir/src-etcd
  mkdir -p "$work"
  cd "$work"
  if [ ! -f go.mod ]; then
    printf 'module joiner.local/etcd\n\ngo 1.26\n' > go.mod
    go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >&2
  fi
  echo "building etcd v$ETCD_VERSION (cached in $dir)" >&2
  go build -o "$dir/etcd.tmp" go.etcd.io/etcd/server/v3 >&2
  mv "$dir/etcd.tmp" "$dir/etcd"
}

# kwok (sigs.k8s.io/kwok) fakes kubelets: it makes the Nodes it manages Ready
# and their pods Running. Its own module, like etcd, at the versions it pins.
build_kwok() {
  local work=$dir/src-kwok
  mkdir -p "$work"
  cd "$work"
  if ! grep -q "sigs.k8s.io/kwok v$KWOK_VERSION\b" go.mod 2>/dev/null; then
    printf 'module joiner.local/kwok\n\ngo 1.26\n' > go.mod
    go get "sigs.k8s.io/kwok@v$KWOK_VERSION" >&2
  fi
  echo "building kwok v$KWOK_VERSION (cached in $dir)" >&2
  SECONDS=0
  go build -o "$dir/kwok.tmp" sigs.k8s.io/kwok/cmd/kwok >&2
  mv "$dir/kwok.tmp" "$dir/kwok"
  echo "built kwok in ${SECONDS}s" >&2
}

# kwok's controller has no stages of its own: kwokctl hands it the "fast"
# set (kustomize/stage/fast: nodes Ready at once, heartbeats through leases,
# pods Running at once, deletions finished). Keep the same set beside the
# binary, for kwok --config.
write_kwok_stages() {
  local src f
  src=$(cd "$dir" && go mod download -json "sigs.k8s.io/kwok@v$KWOK_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
    pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
    echo "---"
    cat "$src/kustomize/stage/$f.yaml"
  done > "$dir/kwok-stages.yaml.tmp"
  mv "$dir/kwok-stages.yaml.tmp" "$dir/kwok-stages.yaml"
}

ok etcd || build_etcd
missing=()
for b in "${kube_bins[@]}"; do ok "$b" || missing+=("$b"); done
[ ${#missing[@]} -eq 0 ] || build_kube "${missing[@]}"
# The directory is not keyed by kwok's version: ask the binary.
if ! ok kwok || [[ "$("$dir/kwok" --version)" != *"v$KWOK_VERSION "* ]]; then
  build_kwok
  write_kwok_stages
fi
[ -f "$dir/kwok-stages.yaml" ] || write_kwok_stages
echo "$dir"
