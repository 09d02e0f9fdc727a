#!/usr/bin/env bash
# Usage: hack/scale.sh [PODS...]  — the scale benchmark (docs/scale.md): the
# autoscaler under test as a process against real kube-apiserver, etcd,
# kube-scheduler, kube-controller-manager and kwok, one fresh control plane
# per autoscaler; scale-out 0 → PODS, hold, scale-in to 30 %, drift under a
# 10 % budget. PODS defaults to $SCALE_PODS, else 100 (the size for CI);
# the issue's sizes are 1000 and 5000. Each size is one
# `go test -tags scale -bench` run.
#
# Environment: SCALE_OUT (timelines, summaries, logs; default a new
# /tmp/joiner-scale.* directory), SCALE_HOLD, SCALE_SETTLE,
# SCALE_PHASE_TIMEOUT, SCALE_AUTOSCALERS (default joiner,karpenter;
# karpenter runs when KARPENTER_KWOK_BIN and KARPENTER_KWOK_CRDS are set),
# SCALE_TIMEOUT (go test -timeout, default 3h), SCALE_PROFILE=1 (heap
# profiles of joiner at each phase's end and at its peak, a CPU profile of
# the scale-out; off by default: profiling costs the process memory),
# SCALE_JOINER_ENV (more
# environment for the joiner process, as words: GODEBUG=memprofilerate=1
# for /debug/heapdump's allocation sites, docs/scale.md session 33).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export GOTOOLCHAIN=local

echo "control plane: hack/control-plane.sh (built once and cached; a cold build takes 15-30 min)" >&2
cp_log=$(mktemp)
if ! hack/control-plane.sh >"$cp_log" 2>&1; then
  cat "$cp_log" >&2
  exit 1
fi
KUBEBUILDER_ASSETS=$(tail -1 "$cp_log")
rm -f "$cp_log"
export KUBEBUILDER_ASSETS
export KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=${KUBEBUILDER_CONTROLPLANE_START_TIMEOUT:-120s}
SCALE_OUT=${SCALE_OUT:-$(mktemp -d /tmp/joiner-scale.XXXXXX)}
export SCALE_OUT
mkdir -p "$SCALE_OUT"

# Upstream Karpenter's own kwok controller beside Joiner (docs/karpenter-kwok.md):
# built once by hack/karpenter.sh, choosing among the same instance types,
# zones, prices and allocatable (hack/karpenter/instancetypes, from Joiner's
# catalog). If it cannot be built, the benchmark runs Joiner alone and says so.
if [[ ",${SCALE_AUTOSCALERS:-joiner,karpenter}," == *",karpenter,"* ]] && [ -z "${KARPENTER_KWOK_BIN:-}" ]; then
  echo "upstream Karpenter's kwok controller: hack/karpenter.sh (built once and cached; a cold build takes ~20 min)" >&2
  k_log=$(mktemp)
  if hack/karpenter.sh >"$k_log" 2>&1; then
    kdir=$(tail -1 "$k_log")
    types=$SCALE_OUT/karpenter-instance-types.json
    go run ./hack/karpenter/instancetypes --out "$types"
    printf 'apiVersion: karpenter.kwok.sh/v1alpha1\nkind: KWOKNodeClass\nmetadata:\n  name: default\n' >"$SCALE_OUT/karpenter-objects.yaml"
    export KARPENTER_KWOK_BIN=$kdir/karpenter-kwok KARPENTER_KWOK_CRDS=$kdir/crds
    export KARPENTER_KWOK_OBJECTS=$SCALE_OUT/karpenter-objects.yaml
    export KARPENTER_KWOK_ENV="INSTANCE_TYPES_FILE_PATH=$types ${KARPENTER_KWOK_ENV:-}"
  else
    cat "$k_log" >&2
    echo "upstream Karpenter's kwok controller could not be built (above): the benchmark runs Joiner alone" >&2
  fi
  rm -f "$k_log"
fi

sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=("${SCALE_PODS:-100}")
for pods in "${sizes[@]}"; do
  echo "scale benchmark, $pods pods: timelines, summaries and logs in $SCALE_OUT" >&2
  SCALE_PODS=$pods go test -tags scale -run '^$' -bench . -benchtime 1x -timeout "${SCALE_TIMEOUT:-3h}" ./test/scale/ |
    tee "$SCALE_OUT/bench-$pods.txt"
done
