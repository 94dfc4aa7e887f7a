#!/usr/bin/env bash
# chains (issue 37): message chains across actors on the inline backend, the CPU pool (15 threads) and cuda
# side by side (bench/chains.ts: one token, N/4 tokens, ping/pong) at 10,000 and 1,000,000 actors, the idle
# cost (bench/chains.ts idle CPU after each backend, and the held-overflow probe), and the one-token chain on
# the pool by its size (4, 8 threads) beside the 15. Writes bench/results/chains.json (the record) and
# everything under $OUT/chains/. At most ~145 s: timeouts 15 + 45 + 55 + 12 + 12, plus the summary.
set -u
O="$OUT/chains"; mkdir -p "$O"
export RG_COMMIT="${RG_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
export RINGGRAIN_LOG=warn
lscpu > "$O/lscpu.txt" 2>&1
echo "commit $RG_COMMIT; $(nproc) cpus; $(grep -E '^(Model name|Socket\(s\)|Thread\(s\) per core|NUMA node\(s\))' \
  "$O/lscpu.txt" | tr -s ' ' | tr '\n' ';')"
rm -f bench/results/local/chains-10k.json bench/results/local/chains-1m.json

timeout -k 5 15 node --import tsx bench/probes/held-overflow.ts > "$O/held-overflow.log" 2>&1
echo "[held-overflow rc=$?] $(head -1 "$O/held-overflow.log")"
HELD=$(sed -nE 's/.*holds K2K for a deactivated kernel: ([0-9.]+) %.*/\1/p' "$O/held-overflow.log")

# Each ring size in its own run and time limit; cuda compiles Link cold (~5-8 s) in each.
B="--threads 15 --hops 200000 --backends inline,cpu,cuda"
C="node --import tsx bench/chains.ts"
timeout -k 5 45 $C --actors 10000 --trials 3 $B --out chains-10k > "$O/chains-10k.log" 2>&1
echo "[chains 10,000 actors rc=$?]"
timeout -k 5 55 $C --actors 1000000 --trials 2 $B --out chains-1m > "$O/chains-1m.log" 2>&1
echo "[chains 1,000,000 actors rc=$?]"
for t in 4 8; do
  timeout -k 5 12 $C --actors 10000 --hops 100000 --trials 3 --threads $t --backends cpu --shapes one \
    --out chains-t$t > "$O/chains-t$t.log" 2>&1
  echo "[pool of $t threads, one token, 10,000 actors rc=$?] $(grep -E '^cpu .* one ' "$O/chains-t$t.log" | tr -s ' ' |
    sed -E 's/spin µs [0-9/]+//' | cut -c1-160)"
done
cp bench/results/local/chains-*.json "$O/" 2>/dev/null

echo "== SUMMARY"
J=""
for f in bench/results/local/chains-10k.json bench/results/local/chains-1m.json; do [ -f "$f" ] && J="$J $f"; done
if [ -n "$J" ]; then
  timeout -k 5 15 node --import tsx bench/chains-summary.ts $J ${HELD:+--held-overflow $HELD} \
    --write bench/results/chains.json 2>&1 | tee "$O/summary.txt"
  cp bench/results/chains.json "$O/chains.json" 2>/dev/null
else
  echo "no chains record was written: see $O/chains-10k.log, $O/chains-1m.log"
  tail -5 "$O/chains-10k.log" "$O/chains-1m.log"
fi
grep -hE "FAILED|Error" "$O"/chains-*.log | head -5
exit 0
