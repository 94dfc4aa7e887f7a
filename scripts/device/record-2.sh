#!/usr/bin/env bash
# GPU record, part 2 (runs ON the GPU machine through scripts/device/run.sh): SIR at 1,000,000 people on
# cuda and cpu (sir1M.json), the timers bench on cuda (timers-cuda-1000000.json), the GPU state bench
# (gpu-state.json), then gpu-latest.json folding them in (with tests.json / sanitizer.json from part 1 or
# an earlier run, when given).
#   RG_COMMIT=<sha> bash scripts/device/run.sh bash scripts/device/record-2.sh [--tests F] [--sanitizer F]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/.device/out}"
mkdir -p "$OUT"
bash scripts/device/sir1m.sh --timeout 120
timeout 200 node --import tsx bench/timers.ts --backend cuda --actors 1000000 --trials 3 > "$OUT/timers.log" 2>&1
echo "timers: exit $?"; grep -E "^target|kernel-generated ticks" "$OUT/timers.log"
cp bench/results/timers-cuda-1000000.json "$OUT/" 2>/dev/null
if [[ -f bench/gpu-state.ts ]]; then
  OUT="$OUT" timeout 120 node --import tsx bench/gpu-state.ts --rows 1000000 --trials 7 > "$OUT/gpu-state.log" 2>&1
  echo "gpu-state: exit $?"; grep -E "median|race" "$OUT/gpu-state.log"
fi
extra=()
[[ -f "$OUT/gpu-state.json" ]] && extra+=(--gpu-state "$OUT/gpu-state.json")
timeout 400 node --import tsx bench/gpu-latest.ts --trials 5 --sir "$OUT/sir1M.json" --timers "$OUT/timers-cuda-1000000.json" "${extra[@]}" "$@" > "$OUT/gpu-latest.log" 2>&1
echo "gpu-latest: exit $?"; tail -c 2500 "$OUT/gpu-latest.log"
