#!/usr/bin/env bash
# NVRTC compile pool (worker threads, one per core): cold starts with a fresh kernel cache.
# 1) SIR 1M cold (2 classes) and warm; 2) the conformance suite's shared cuda system cold (every shared class:
# did not finish in 255 s with libuv's 4 threads); 3) bench/nvrtc-pool.ts, sequential vs pool, 6 units, 1 trial.
# Worst case ~330 s (each step has its own timeout); steps 1-2 are the figures that matter.
set -u
O="$OUT/nvrtc-pool"; mkdir -p "$O"
export RINGGRAIN_NO_PREBUILD=1
nproc > "$O/nproc.txt"; git rev-parse --short HEAD > "$O/commit.txt" 2>/dev/null
echo "cores $(nproc), commit $(cat "$O/commit.txt")"

D=$(mktemp -d)
for run in cold warm; do
  RINGGRAIN_CACHE_DIR=$D RINGGRAIN_LOG=info timeout -k 5 90 node --import tsx examples/sir/main.ts --backend cuda --people 1000000 > "$O/sir-$run.log" 2>&1
  echo "sir $run exit $?"; grep -E "start|compiled|compile cache" "$O/sir-$run.log" | cut -c1-200 | head -6
done

C=$(mktemp -d)
RINGGRAIN_CACHE_DIR=$C timeout -k 5 150 node node_modules/vitest/vitest.mjs run test/conformance/conformance.test.ts \
  -t "^cuda the shared system starts" --reporter=verbose --reporter=json --outputFile.json="$O/conformance.json" > "$O/conformance.log" 2>&1
echo "conformance shared start exit $?"
sed 's/\x1b\[[0-9;]*m//g' "$O/conformance.log" | grep -E "shared system starts|Tests |×" | cut -c1-250 | head -8
echo "cubins in the cache: $(ls "$C" | wc -l)"

timeout -k 5 120 node --import tsx bench/nvrtc-pool.ts --classes 6 --trials 1 > "$O/bench.log" 2>&1
echo "bench exit $?"; tail -4 "$O/bench.log" | cut -c1-300
exit 0
