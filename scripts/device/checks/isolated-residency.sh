#!/usr/bin/env bash
# Persistence and reminders on the cuda-isolated lane (IsolatedCudaBackend: the kernels' state access and their
# load/evicted reports over the GPU host's IPC channel, cuda-backend src/isolated/frames.ts, host-loop.ts,
# host-client.ts): the conformance cases the lane used to skip (persistent state, flush, version conflict, idle
# collection, preload, reminders), after the shared system's cold start (~60 s of NVRTC); then, with the time left,
# test/persistence/bad-row.test.ts on that lane (a failed load's StateLoadError reaching the asker typed).
# The make-room case (100,000 keys through maxActors 1024) stays skipped as on the cuda lane unless ROOM=1.
# WITH_CUDA=1 runs the same cases on the cuda lane (in-process) beside it, as the control: a case failing on both
# is the kernel's, one failing on cuda-isolated alone the channel's (both compile cold at once: slower).
# From the repo root on the GPU machine; at most $1 s (default 200); logs under $OUT/isolated-residency/,
# a SUMMARY last.
set -u
B=${1:-200}
O="$OUT/isolated-residency"; mkdir -p "$O"
git rev-parse --short HEAD > "$O/commit.txt" 2>/dev/null || echo unknown > "$O/commit.txt"
T0=$(date +%s)
strip() { sed 's/\x1b\[[0-9;]*m//g'; }
[[ "${ROOM:-0}" == 1 ]] && export RINGGRAIN_CONFORMANCE_ROOM_ON_GPU=1

CASES="(the shared system|persistent state|idle collection|preload|reminders)"
lane() { # $1 log name, $2 lane
  timeout -k 5 $(( B - 40 )) node node_modules/vitest/vitest.mjs run test/conformance/conformance.test.ts \
    -t "^$2 $CASES" --reporter=verbose > "$O/$1.raw" 2>&1
  echo "rc=$?" >> "$O/$1.raw"
  strip < "$O/$1.raw" > "$O/$1.log"
}
LOGS="conformance"
if [[ "${WITH_CUDA:-0}" == 1 ]]; then
  LOGS="conformance cuda-lane"
  lane cuda-lane cuda & control=$!
fi
lane conformance cuda-isolated
[[ -n "${control:-}" ]] && wait "$control"

left=$(( B - ($(date +%s) - T0) - 5 ))
if (( left > 20 )); then
  timeout -k 5 "$left" node node_modules/vitest/vitest.mjs run test/persistence/bad-row.test.ts \
    -t "cuda-isolated" --reporter=verbose > "$O/bad-row.raw" 2>&1
  echo "rc=$?" >> "$O/bad-row.raw"
  strip < "$O/bad-row.raw" > "$O/bad-row.log"
fi

{
  echo "== SUMMARY isolated-residency (commit $(cat "$O/commit.txt"), $(( $(date +%s) - T0 )) s of $B)"
  for f in $LOGS bad-row; do
    [[ -f "$O/$f.log" ]] || { echo "$f: not run (no time left)"; continue; }
    echo "$f: $(grep -E '^ +Tests ' "$O/$f.log" | tr -s ' ' | tail -1) $(tail -1 "$O/$f.log")"
    echo "  passed: $(grep -cE '^ +✓ ' "$O/$f.log")  failed: $(grep -cE '^ +× ' "$O/$f.log")"
    grep -E '^ +× ' "$O/$f.log" | cut -c1-220 | head -20
    grep -E '^ +↓ .*> cuda(-isolated)? > .*\(skipped:' "$O/$f.log" | cut -c1-200 | head -10
    grep -E 'GpuHostProtocolError|GPU_HOST_PROTOCOL|StorageUnsupportedError|GpuStateError' "$O/$f.log" \
      | cut -c1-220 | sort | uniq -c | head -10
  done
} | tee "$O/summary.txt"
exit 0
