#!/usr/bin/env bash
# Runs ON the GPU machine (through scripts/device/run.sh): the three examples with --backend cuda, then
# the soak (default 10,000,000 mixed messages) on cuda. Logs and the soak's JSON go to $OUT.
#   bash scripts/device/run.sh bash scripts/device/examples.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/.device/out}"
mkdir -p "$OUT"
rc=0
for ex in vector-add bank sir; do
  echo "== example $ex --backend cuda"
  t0=$(date +%s)
  node --import tsx "examples/$ex/main.ts" --backend cuda >"$OUT/example-$ex.log" 2>&1
  r=$?
  echo "exit $r after $(( $(date +%s) - t0 )) s"
  grep -v '█\|░' "$OUT/example-$ex.log" | tail -30
  [[ $r == 0 ]] || rc=1
done
n="${SOAK_MESSAGES:-10000000}"
echo "== soak --backend cuda --messages $n"
node --expose-gc --import tsx bench/soak.ts --backend cuda --messages "$n" >"$OUT/soak-cuda.log" 2>&1
r=$?
echo "exit $r"
grep -v '█\|░' "$OUT/soak-cuda.log" | tail -12
cp bench/results/local/soak-cuda.json "$OUT/" 2>/dev/null || true
[[ $r == 0 ]] || rc=1
exit $rc
