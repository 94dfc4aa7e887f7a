#!/usr/bin/env bash
# Where a first run's NVRTC time goes (issue 34 item 1): on the H200 at 1c413fd bench/probes/nvrtc-unit.ts compiled
# SIR's Person unit in 264 ms on the main thread, while the example's own cold compile of it took 10,683 ms (the
# NVRTC pool's worker thread). The same unit, same options, three ways, each with a fresh cache and bounded:
#   (1) the probe (main thread), (2) ringgrain build --threads 0 (libuv's threads), (3) --threads 2 (the pool).
# From the repo root on the GPU machine; ~100 s at most; logs under $OUT/nvrtc-where/, a SUMMARY last.
set -u
O="$OUT/nvrtc-where"; mkdir -p "$O"
C="node --import tsx packages/codegen/src/cli.ts build examples/sir/grains.ts --grains Person,Ward --arch sm_90"
timeout -k 5 30 node --import tsx bench/probes/nvrtc-unit.ts --units sir-Person,sir-Ward --trials 1 --opts "" \
  > "$O/probe.log" 2>&1; echo "rc=$?" >> "$O/probe.log"
timeout -k 5 30 $C --cache "$(mktemp -d)" --threads 0 > "$O/build-t0.log" 2>&1; echo "rc=$?" >> "$O/build-t0.log"
timeout -k 5 30 $C --cache "$(mktemp -d)" --threads 2 > "$O/build-t2.log" 2>&1; echo "rc=$?" >> "$O/build-t2.log"
{
  echo "== SUMMARY nvrtc-where ($(nproc) cores)"
  grep -E '^\| sir|^NVRTC|rc=' "$O/probe.log"
  for f in build-t0 build-t2; do echo "$f: $(grep -E 'compiled in|kernels in|rc=' "$O/$f.log" | sed -E 's/ \(.*cubin\)//' | tr '\n' ';')"; done
} | tee "$O/summary.txt"
