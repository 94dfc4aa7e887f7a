#!/usr/bin/env bash
# The cuda conformance lane's shared system and its persistence cases (written at shutdown, flush, version conflict,
# idle collection, preload, reminders), the make-room case un-skipped: at d4c1e90 on the H200 no persistence case
# finished in 330 s (a stopped kernel's deactivation request was not answered). Kernels compile cold: the shared
# system ~46-60 s. From the repo root on the GPU machine; ~300 s at most; log under $OUT/residency-stop/, a SUMMARY.
set -u
O="$OUT/residency-stop"; mkdir -p "$O"
git rev-parse --short HEAD > "$O/commit.txt" 2>/dev/null
T0=$(date +%s)
RINGGRAIN_CONFORMANCE_ROOM_ON_GPU=1 timeout -k 5 290 node node_modules/vitest/vitest.mjs run \
  test/conformance/conformance.test.ts -t "^cuda (the shared system|persistent state|idle collection|preload|reminders)" \
  --reporter=verbose 2>&1 | sed 's/\x1b\[[0-9;]*m//g' > "$O/lane.log"
echo "rc=${PIPESTATUS[0]}" >> "$O/lane.log"
{
  echo "== SUMMARY lane (commit $(cat "$O/commit.txt"), $(( $(date +%s) - T0 )) s)"
  echo "cuda persistence cases: $(grep -E '^ +Tests ' "$O/lane.log" | tr -s ' ' | tail -1) $(tail -1 "$O/lane.log")"
  grep -E '^ +× ' "$O/lane.log" | cut -c1-220 | head -20
  grep -cE '^ +✓ ' "$O/lane.log" | sed 's/^/passed lines: /'
} | tee "$O/summary-lane.txt"
exit 0
