#!/usr/bin/env bash
# Fails if the generated CRDs or deepcopy functions are not what hack/codegen.sh
# produces from the current Go types (it regenerates them, so a failure leaves
# the fresh files in place to commit).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
files=$(ls pkg/apis/crds/*.yaml charts/joiner/crds/*.yaml pkg/apis/*/zz_generated.deepcopy.go pkg/apis/*/*/zz_generated.deepcopy.go 2>/dev/null)
before=$(sha256sum $files)
hack/codegen.sh
after=$(sha256sum $(ls pkg/apis/crds/*.yaml charts/joiner/crds/*.yaml pkg/apis/*/zz_generated.deepcopy.go pkg/apis/*/*/zz_generated.deepcopy.go 2>/dev/null))
if [ "$before" != "$after" ]; then
  echo "generated code was stale; hack/codegen.sh regenerated it:" >&2
  diff <(echo "$before") <(echo "$after") >&2 || true
  exit 1
fi
echo "generated CRDs and deepcopy are current"
