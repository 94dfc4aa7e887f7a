#!/usr/bin/env bash
# The CUDA driver layer after CudaContext's split into parts (context-core, -streams, -memory, -modules; f026bd9):
# driver.test.ts's GPU lane (real kernels through NVRTC and the driver: streams, pinned and device memory, copies,
# launches, occupancy, dispose while busy, a fault) and context.test.ts (the stand-in driver, also run on the host).
# From the repo root on the GPU machine; ~120 s at most; logs under $OUT/context-split/, a SUMMARY last.
set -u
O="$OUT/context-split"; mkdir -p "$O"
git rev-parse --short HEAD > "$O/commit.txt" 2>/dev/null
T0=$(date +%s)
timeout -k 5 110 node node_modules/vitest/vitest.mjs run packages/cuda-backend/test/driver.test.ts \
  packages/cuda-backend/test/context.test.ts --reporter=verbose 2>&1 | sed 's/\x1b\[[0-9;]*m//g' > "$O/driver.log"
echo "rc=${PIPESTATUS[0]}" >> "$O/driver.log"
{
  echo "== SUMMARY (commit $(cat "$O/commit.txt"), $(( $(date +%s) - T0 )) s)"
  echo "driver + context: $(grep -E '^ +Tests ' "$O/driver.log" | tr -s ' ' | tail -1) $(tail -1 "$O/driver.log")"
  grep -E '^ +(×|↓) ' "$O/driver.log" | cut -c1-220 | head -20
} | tee "$O/summary.txt"
exit 0
