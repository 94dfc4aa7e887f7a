#!/usr/bin/env bash
# A CUDA class with storage stopping (a stopped kernel's deactivation request was not answered on the H200 at
# d4c1e90: bench/results/gpu/2026-11-28-h200-d4c1e90-cuda-lanes-residency-stop.json). Steps, each bounded:
#   1. test/probes/bad-row-probe.ts, plain (start, two loads, shutdown; then a damaged row, its failed loads, shutdown)
#   2. the same with PROBE_DEVICE=1 (every 2 s while a phase waits: ResidencyGlobals, each worker's ack, the mode)
#   3. the same with PROBE_DEACTIVATE_FIRST=1 PROBE_DEVICE=1 (a deactivation while the kernel is active first)
#   4. test/persistence/bad-row.test.ts (cpu pool, inline, cuda residency, cuda-isolated)
# From the repo root on the GPU machine; ~150 s at most; logs under $OUT/residency-stop/, a SUMMARY last.
# The cuda conformance lane's persistence cases: scripts/device/checks/residency-stop-lane.sh (300 s).
set -u
O="$OUT/residency-stop"; mkdir -p "$O"
git rev-parse --short HEAD > "$O/commit.txt" 2>/dev/null
T0=$(date +%s)
clean() { sed 's/\x1b\[[0-9;]*m//g'; }
probe() { # $1 tag, $2 seconds, then env assignments
  local tag=$1 s=$2; shift 2
  env "$@" timeout -k 5 "$s" node --import tsx test/probes/bad-row-probe.ts > "$O/$tag.raw" 2>&1
  echo "rc=$?" >> "$O/$tag.raw"
  clean < "$O/$tag.raw" > "$O/$tag.log"
}
if [[ "${ONLY_TRACE:-0}" == 1 ]]; then
  # Each call on the shutdown path logged with how it ended (PROBE_TRACE), the device words while it waits.
  probe probe-trace 40 PROBE_TRACE=1 PROBE_DEVICE=1
  probe probe-trace-first 30 PROBE_TRACE=1 PROBE_DEACTIVATE_FIRST=1
  cat "$O"/probe-trace.log | cut -c1-300 | grep -v waiting | head -80
  exit 0
fi
probe probe-plain 30 PROBE_X=0
probe probe-device 30 PROBE_DEVICE=1
probe probe-first 25 PROBE_DEACTIVATE_FIRST=1 PROBE_DEVICE=1
left=$(( 145 - ($(date +%s) - T0) ))
if (( left > 15 )); then
  timeout -k 5 "$left" node node_modules/vitest/vitest.mjs run test/persistence/bad-row.test.ts --reporter=verbose \
    2>&1 | clean > "$O/bad-row.log"; echo "rc=${PIPESTATUS[0]}" >> "$O/bad-row.log"
fi
{
  echo "== SUMMARY (commit $(cat "$O/commit.txt"), $(( $(date +%s) - T0 )) s)"
  for f in probe-plain probe-device probe-first; do
    [[ -f "$O/$f.log" ]] || { echo "$f: not run"; continue; }
    # rc=0 and an 'end' line: both systems shut down; a phase that waited shows its last device words
    echo "$f: $(tail -1 "$O/$f.log") $(grep -c 'shutdown: done' "$O/$f.log") shutdowns done, end: $(grep -c ' end$' "$O/$f.log")"
    grep -E 'shutdown: (done|threw)|deactivat.*(failed|not answer)|did not acknowledge|GPU_STATE' "$O/$f.log" | cut -c1-240 | head -6
    grep -E 'waiting' -A1 "$O/$f.log" | grep -E 'resGlobals|words' | tail -2 | cut -c1-400
  done
  [[ -f "$O/bad-row.log" ]] && echo "bad-row: $(grep -E '^ +Tests ' "$O/bad-row.log" | tr -s ' ' | tail -1) $(tail -1 "$O/bad-row.log")" \
    && grep -E '^ +(×|✓|↓) ' "$O/bad-row.log" | cut -c1-200 | head -8
} | tee "$O/summary.txt"
exit 0
