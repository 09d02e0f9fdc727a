#!/usr/bin/env bash
# Usage: hack/helm.sh  — prints the path of a real helm binary, built from the
# Go module proxy (no release downloads are reachable here) into a cache
# keyed by version. A warm run takes milliseconds; a cold one 5-10 minutes on
# 2 cores.
#
# helm.sh/helm/v3 has no replace directives, but `go install pkg@version`
# refuses GOFLAGS=-mod=mod, and the version and Kubernetes-version variables
# are set by its Makefile's linker flags, so it is built from a throwaway
# module, as hack/control-plane.sh builds kube-apiserver.
set -euo pipefail
HELM_VERSION=${HELM_VERSION:-3.22.0}
cache=${JOINER_HELM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/joiner-helm}
dir=$cache/v$HELM_VERSION
bin=$dir/helm

ok() { [ -x "$bin" ] && [[ "$("$bin" version --short 2>/dev/null)" == "v$HELM_VERSION" ]]; }

if ! ok; then
  mkdir -p "$dir"
  exec 9>"$dir/.lock"
  flock 9
  if ! ok; then
    export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-mod=mod -buildvcs=false"
    work=$dir/src
    mkdir -p "$work"
    cd "$work"
    if ! grep -q "helm.sh/helm/v3 v$HELM_VERSION\b" go.mod 2>/dev/null; then
      printf 'module joiner.local/helm\n\ngo 1.26\n' > go.mod
      go get "helm.sh/helm/v3@v$HELM_VERSION" >&2
    fi
    # helm template and helm lint assume the Kubernetes version of the
    # client-go helm is built with (its Makefile reads it from go.mod);
    # without these they assume v1.20.
    kminor=$(go list -m -f '{{.Version}}' k8s.io/client-go | cut -d. -f2)
    ld="-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
    for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
      ld="$ld -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$kminor"
    done
    echo "building helm v$HELM_VERSION (once; cached in $dir)" >&2
    SECONDS=0
    go build -trimpath -ldflags "$ld" -o "$bin.tmp" helm.sh/helm/v3/cmd/helm >&2
    mv "$bin.tmp" "$bin"
    echo "built helm in ${SECONDS}s" >&2
    ok || { echo "hack/helm.sh: $bin does not report v$HELM_VERSION: $("$bin" version --short 2>&1)" >&2; exit 1; }
  fi
fi
echo "$bin"
