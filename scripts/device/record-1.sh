#!/usr/bin/env bash
# GPU record, part 1 (runs ON the GPU machine through scripts/device/run.sh): the CUDA tests and every
# conformance lane (tests.json), then SIR at 1,000,000 people on cuda and cpu (sir1M.json).
#   RG_COMMIT=<sha> bash scripts/device/run.sh bash scripts/device/record-1.sh [sir timeout s]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/.device/out}"
node --import tsx scripts/device/tests.ts > "$OUT/tests.log" 2>&1
echo "tests: exit $?"; grep -E "^tests:|FAILED" "$OUT/tests.log" | head -20
bash scripts/device/sir1m.sh --timeout "${1:-200}"
