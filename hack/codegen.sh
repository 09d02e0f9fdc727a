#!/usr/bin/env bash
# Regenerates deepcopy functions and the CRDs (charts/joiner/crds, also embedded
# in pkg/apis/crds) from the Go types in pkg/apis. Run after changing a type.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cg=$(hack/tool.sh controller-gen)
"$cg" object paths=./pkg/apis/...
"$cg" crd:allowDangerousTypes=false paths=./pkg/apis/... output:crd:artifacts:config=pkg/apis/crds
# controller-gen writes no trailing header; keep the files free of anything
# that changes between runs so regeneration is byte-identical.
# The chart's CRDs: the same, with the schema additions crds.Patch makes.
go run ./hack/chartcrds charts/joiner/crds
