#!/usr/bin/env bash
# Runs a command while the machine's cores are kept busy, to find the tests
# that pass on an idle machine and fail on a busy CI runner (a timeout that
# is too tight, a count of retried requests, a race with the clock).
#
#   hack/load.sh hack/test.sh                      # the whole suite under load
#   hack/load.sh go test -count=5 ./pkg/...        # the unit packages, repeated
#   LOAD_CPUS=1 hack/load.sh go test ./pkg/sim/    # one core busy, not all
#
# LOAD_CPUS (default: every core, nproc) CPU-bound processes at nice 0 run
# until the command ends; they are stopped however it ends. The command's
# exit code is the script's.
set -uo pipefail
cpus=${LOAD_CPUS:-$(nproc)}
if [ "$#" -eq 0 ]; then
  echo "usage: hack/load.sh COMMAND [ARGS...]  (runs COMMAND with $cpus cores kept busy)" >&2
  exit 2
fi
pids=()
stop() { [ "${#pids[@]}" -gt 0 ] && kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null; pids=(); }
trap stop EXIT
trap 'stop; exit 130' INT TERM
for _ in $(seq "$cpus"); do
  sh -c 'while :; do :; done' &
  pids+=("$!")
done
echo "hack/load.sh: $cpus busy processes (${pids[*]}) while running: $*" >&2
"$@"
rc=$?
stop
echo "hack/load.sh: '$*' exited $rc under load" >&2
exit "$rc"
