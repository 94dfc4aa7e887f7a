#!/usr/bin/env bash
# Issue 30's persistence figures on one GPU and how much of each is the host's, ~610 s at most, from the repo root;
# output under $OUT/residency-host/, a SUMMARY last.
#  (A) bench/probes/residency-host.ts on this host, no GPU used: the host side of each figure (write-behind, LMDB,
#      ResidencyHost) against a stand-in device answering at once, then answering 300 us after each request;
#  (B) bench/gpu-persistence.ts at 1,000,000 keys, cpu beside cuda, medians of 3 (the idle run left out).
set -uo pipefail
O="${OUT:-/tmp/out}/residency-host"
mkdir -p "$O"
export RINGGRAIN_NO_PREBUILD=1
git rev-parse --short HEAD > "$O/commit.txt" 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$O/gpu.txt" 2>&1
nproc > "$O/cores.txt"
S="$O/summary.txt"; : > "$S"
sum() { echo "$*" | cut -c1-600 >> "$S"; }
T0=$(date +%s)

# (A) the host side alone
timeout -k 5 90 node --import tsx bench/probes/residency-host.ts --keys 1000000 --first 2000 --trials 3 \
  > "$O/probe.log" 2>&1
sum "probe rc=$? $(( $(date +%s) - T0 ))s: $(grep median "$O/probe.log" | tail -1)"
timeout -k 5 90 node --import tsx bench/probes/residency-host.ts --keys 1000000 --first 300 --trials 3 \
  --phases cold --answer-us 300 > "$O/probe-answer300.log" 2>&1
sum "probe answer-us 300 rc=$? $(( $(date +%s) - T0 ))s: $(grep median "$O/probe-answer300.log" | tail -1)"

# (B) the figures through the public API
timeout -k 5 420 node --import tsx bench/gpu-persistence.ts --keys 1000000 --first 2000 --trials 3 --backends cpu,cuda \
  --idle-keys 0 --out "$O/gpu-persistence.json" > "$O/gpu-persistence.log" 2>&1
sum "gpu-persistence rc=$? $(( $(date +%s) - T0 ))s"
grep -E '^(cpu|cuda) ' "$O/gpu-persistence.log" | while read -r l; do sum "  $l"; done
grep -E '^\{' "$O/gpu-persistence.log" | tail -1 | while read -r l; do sum "  $l"; done
grep -E 'Error|error' "$O/gpu-persistence.log" | head -4 | while read -r l; do sum "  ! $l"; done
echo "SUMMARY"; cat "$S"
