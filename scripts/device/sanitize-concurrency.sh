#!/usr/bin/env bash
# Runs ON the GPU machine: does compute-sanitizer let two persistent kernels run at once? Single-kernel
# workloads finish under every tool in seconds, every multi-kernel one never finished; if the tool runs
# one kernel launch at a time, the second kernel of a system never starts (its launch handshake waits).
# Prints the sanitizer's options about launches/concurrency, then runs the 5-kernel k2k workload under
# memcheck with info logs for $1 seconds (default 90) and shows which kernels acknowledged their launch.
#   bash scripts/device/run.sh bash scripts/device/sanitize-concurrency.sh [seconds]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/.device/out}"
mkdir -p "$OUT"
limit="${1:-90}"
bin="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
"$bin" --version | tail -2
"$bin" --help >"$OUT/compute-sanitizer-help.txt" 2>&1
echo "== options mentioning launches, streams, serialization or concurrency"
grep -n -i -E -A3 'serial|concurren|blocking|launch|stream' "$OUT/compute-sanitizer-help.txt" | head -60
export RINGGRAIN_TIMEOUT_SCALE=100
export RINGGRAIN_NVRTC_DEFINES=RG_WORKER_SPIN=8,RG_INGRESS_SPIN=8,RG_WORKER_IDLE_NS=200000,RG_INGRESS_IDLE_NS=50000
node --import tsx scripts/device/sanitize-workload.ts k2k >/dev/null 2>&1 # warm the compile cache
for extra in "" ${SANITIZE_EXTRA:-}; do
  echo "== memcheck ${extra:-(default options)}, k2k workload, ${limit}s"
  t0=$(date +%s)
  RINGGRAIN_LOG=info timeout "$limit" "$bin" --tool memcheck ${extra//,/ } --print-limit 5 node --import tsx scripts/device/sanitize-workload.ts k2k >"$OUT/concurrency${extra//[^a-z]/}.log" 2>&1
  echo "exit $? after $(( $(date +%s) - t0 )) s"
  grep -o -E 'kernel [A-Za-z0-9]+: [a-z]+ → [a-z]+' "$OUT/concurrency${extra//[^a-z]/}.log" | head -20
  grep -E 'ERROR SUMMARY|all answers|WRONG' "$OUT/concurrency${extra//[^a-z]/}.log" | head -3
done
