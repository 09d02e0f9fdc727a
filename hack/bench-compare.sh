#!/usr/bin/env bash
# Issue 17's speed check: the engine benchmarks at two commits, built once
# each and run interleaved (before, after, before, after, …) so that a
# machine's load falls on both alike. Prints each run's line.
#   hack/bench-compare.sh BEFORE AFTER [ROUNDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
before=${1:?before commit}; after=${2:?after commit}; rounds=${3:-3}
work=$(mktemp -d); trap 'git -C "$root" worktree remove --force "$work/before" >/dev/null 2>&1 || true; git -C "$root" worktree remove --force "$work/after" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
for side in before after; do
  rev=${!side}
  git -C "$root" worktree add -q --detach "$work/$side" "$rev"
  for pkg in provisioning disruption sim; do
    (cd "$work/$side" && go test -c -o "$work/$side-$pkg.test" "./pkg/$pkg/")
  done
done
run() { # side pkg bench
  (cd "$work/$1/pkg/$2" && "$work/$1-$2.test" -test.run '^$' -test.bench "$3" -test.benchtime "$4" 2>&1 | grep '^Benchmark' | sed "s/^/$1 /")
}
for i in $(seq "$rounds"); do
  for side in before after; do
    run "$side" provisioning '^BenchmarkScheduling(5000|20000)$' 5x
    run "$side" disruption '^BenchmarkConsolidationPass$' 5x
    run "$side" sim '^BenchmarkSimulateWeek20k$' 1x
  done
done
