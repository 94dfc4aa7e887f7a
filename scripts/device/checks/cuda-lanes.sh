#!/usr/bin/env bash
# The CUDA conformance lanes ($LANES, default cuda cuda-isolated cuda-groups) in full, side by side, one process each (kernels compile cold on a fresh machine:
# the shared cuda system ~46 s on 16 cores, then each case's own classes), with the make-room case un-skipped
# (RINGGRAIN_CONFORMANCE_ROOM_ON_GPU=1), then test/persistence/bad-row.test.ts (a failed load's StateLoadError on
# the cuda residency lane). From the repo root on the GPU machine; ~$1 s at most (default 480); logs under
# $OUT/cuda-lanes/, a SUMMARY last, everything also in $OUT/cuda-lanes.tgz.
set -u
B=${1:-480}
O="$OUT/cuda-lanes"; mkdir -p "$O"
git rev-parse --short HEAD > "$O/commit.txt" 2>/dev/null
T0=$(date +%s)
VITEST="node node_modules/vitest/vitest.mjs run test/conformance/conformance.test.ts --reporter=verbose"
lane() { # $1 tag, $2 -t pattern
  # the cuda-groups lane is opt-in (test/conformance/backends.ts)
  RINGGRAIN_CONFORMANCE_CUDA_GROUPS=$([[ $1 == cuda-groups ]] && echo 1 || echo 0) RINGGRAIN_CONFORMANCE_ROOM_ON_GPU=1 \
    timeout -k 5 $(( B - 110 )) $VITEST -t "$2" > "$O/$1.raw" 2>&1
  echo "rc=$?" >> "$O/$1.raw"
  sed 's/\x1b\[[0-9;]*m//g' "$O/$1.raw" > "$O/$1.log"
}
pids=()
for l in ${LANES:-cuda cuda-isolated cuda-groups}; do lane "$l" "^$l " & pids+=($!); done
wait "${pids[@]}"
left=$(( B - ($(date +%s) - T0) - 5 ))
if (( left > 20 )); then
  timeout -k 5 "$left" node node_modules/vitest/vitest.mjs run test/persistence/bad-row.test.ts --reporter=verbose \
    2>&1 | sed 's/\x1b\[[0-9;]*m//g' > "$O/bad-row.log"; echo "rc=${PIPESTATUS[0]}" >> "$O/bad-row.log"
fi
{
  echo "== SUMMARY (commit $(cat "$O/commit.txt"), $(( $(date +%s) - T0 )) s)"
  for f in ${LANES:-cuda cuda-isolated cuda-groups} bad-row; do
    [[ -f "$O/$f.log" ]] || { echo "$f: not run"; continue; }
    echo "$f: $(grep -E '^ +Tests ' "$O/$f.log" | tr -s ' ' | tail -1) $(tail -1 "$O/$f.log")"
    grep -E '^ +× ' "$O/$f.log" | cut -c1-220 | head -20
    grep -E '^ +↓ .*\[store\]|ROOM|make room|maxActors 1024' "$O/$f.log" | cut -c1-160 | head -8
  done
} | tee "$O/summary.txt"
tar -czf "$OUT/cuda-lanes.tgz" -C "$OUT" cuda-lanes
exit 0
