#!/usr/bin/env bash
# chains (issue 37): message chains across actors on the inline backend, the CPU pool (15 threads) and cuda
# side by side (bench/chains.ts: one token, N/4 tokens, ping/pong) at 10,000 and 1,000,000 actors, the idle
# cost (bench/chains.ts idle CPU after each backend, and the held-overflow probe), the one-token chain on a
# pool of 8 threads beside the 15, and the 15 with the paced idle spin (CpuBackendOptions.spinPause 4) beside
# the tight one (default). Writes bench/results/chains.json (the record) and everything under $OUT/chains/.
# At most ~147 s: timeouts 12 + 40 + 55 + 12 + 20 + 8.
set -u
O="$OUT/chains"; mkdir -p "$O"
# Sizes (the defaults are the issue's; smaller ones only to try the script on a small machine).
T=${CHAINS_THREADS:-15}; T2=${CHAINS_THREADS_SCAN:-8}; BIG=${CHAINS_BIG:-1000000}; H=${CHAINS_HOPS:-200000}
export RG_COMMIT="${RG_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
export RINGGRAIN_LOG=warn
lscpu > "$O/lscpu.txt" 2>&1
echo "commit $RG_COMMIT; $(nproc) cpus; $(grep -E '^(Model name|Socket\(s\)|Thread\(s\) per core|NUMA node\(s\))' \
  "$O/lscpu.txt" | tr -s ' ' | tr '\n' ';')"
rm -f bench/results/local/chains-10k.json bench/results/local/chains-1m.json

timeout -k 5 12 node --import tsx bench/probes/held-overflow.ts > "$O/held-overflow.log" 2>&1
echo "[held-overflow rc=$?] $(head -1 "$O/held-overflow.log")"
HELD=$(sed -nE 's/.*holds K2K for a deactivated kernel: ([0-9.]+) %.*/\1/p' "$O/held-overflow.log")

# Each ring size in its own run and time limit; cuda compiles Link cold (~5-8 s) in each.
B="--threads $T --hops $H --backends inline,cpu,cuda"
C="node --import tsx bench/chains.ts"
timeout -k 5 40 $C --actors 10000 --trials 3 $B --out chains-10k > "$O/chains-10k.log" 2>&1
echo "[chains 10,000 actors rc=$?]"
timeout -k 5 55 $C --actors $BIG --trials 2 $B --out chains-1m > "$O/chains-1m.log" 2>&1
echo "[chains $BIG actors rc=$?]"
timeout -k 5 12 $C --actors 10000 --hops $((H / 2)) --trials 3 --threads $T2 --backends cpu --shapes one \
  --out chains-scan > "$O/chains-scan.log" 2>&1
echo "[pool of $T2 threads, one token, 10,000 actors rc=$?]"
timeout -k 5 20 $C --actors 10000 --hops $((H / 2)) --trials 3 --threads $T --backends cpu,cpu-paced --pause 4 \
  --shapes one --out chains-paced > "$O/chains-paced.log" 2>&1
echo "[$T threads, tight spin (cpu) and paced spin (cpu-paced, spinPause 4), one token, 10,000 actors rc=$?]"
cp bench/results/local/chains-*.json "$O/" 2>/dev/null

echo "== SUMMARY"
J=""
for f in bench/results/local/chains-10k.json bench/results/local/chains-1m.json; do [ -f "$f" ] && J="$J $f"; done
if [ -n "$J" ]; then
  timeout -k 5 8 node --import tsx bench/chains-summary.ts $J ${HELD:+--held-overflow $HELD} \
    --write bench/results/chains.json 2>&1 | tee "$O/summary.txt"
  cp bench/results/chains.json "$O/chains.json" 2>/dev/null
else
  echo "no chains record was written: see $O/chains-10k.log, $O/chains-1m.log"
  tail -5 "$O/chains-10k.log" "$O/chains-1m.log"
fi
echo "one token, 10,000 actors: pool of $T2 threads, then $T threads with the tight and the paced idle spin:"
grep -hE '^cpu(-paced)? +[0-9]+ actors +one ' "$O/chains-scan.log" "$O/chains-paced.log" | tr -s ' ' |
  sed -E 's/spin µs [0-9/]+//' | cut -c1-170
grep -hE "FAILED|Error" "$O"/chains-*.log | head -5
exit 0
