#!/usr/bin/env bash
# The conformance cases after their split into test/conformance/cases/ (69c3eaa and before): the cuda lane
# must list and pass the same cases as before the split (the cases now read counters through
# `metrics = async () => system.metrics()` when the context has none). Run from the repo root on the GPU machine.
set -u
mkdir -p "$OUT/cluster-conformance"
timeout -k 5 115 node node_modules/vitest/vitest.mjs run test/conformance/conformance.test.ts -t "^cuda " --reporter=verbose \
  > "$OUT/cluster-conformance/cuda-lane.txt" 2>&1
echo "rc=$?" >> "$OUT/cluster-conformance/cuda-lane.txt"
