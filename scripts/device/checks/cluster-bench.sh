#!/usr/bin/env bash
# bench/cluster.ts on the 16-core GPU machine (issue 31's targets: cross-silo ask p50 <= 1.5x a raw NATS
# request, cross-silo tells >= 2 M/s between two silos beside raw NATS publish, on a multi-core host), then
# bench/probes/cluster-costs.ts (ns per tell of each stage, one process). CPU only; nats-server on PATH
# (scripts/device/run.sh puts the packed one there). Run from the repo root; at most ~150 s in all.
set -u
O="$OUT/cluster-bench"; mkdir -p "$O"
git rev-parse --short HEAD > "$O/commit.txt" 2>/dev/null
{ echo "cores $(nproc), commit $(cat "$O/commit.txt"), node $(node --version)"; nats-server --version; } > "$O/env.txt" 2>&1
cat "$O/env.txt"

# TELLS / N: the sizes unless set (smaller ones check the script on a small machine).
timeout -k 5 105 node --import tsx bench/cluster.ts --asks 1000 --tells "${TELLS:-500000}" --trials 5 > "$O/bench.json" 2> "$O/bench.err"
echo "bench/cluster.ts exit $?"
cp bench/results/local/cluster-latest.json "$O/cluster-latest.json" 2>/dev/null

timeout -k 5 40 node --import tsx bench/probes/cluster-costs.ts --n "${N:-300000}" --trials 3 > "$O/costs.txt" 2> "$O/costs.err"
echo "cluster-costs exit $?"

echo "SUMMARY"
grep -E "^trial" "$O/bench.err" | cut -c1-300
node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const f = (x) => Math.round(x).toLocaleString("en-US");
console.log(`ask p50 ${r.askP50Us.median.toFixed(0)} us / raw request ${r.rawRequestP50Us.median.toFixed(0)} us = ${r.askP50OverRaw.toFixed(2)}x (target <= 1.5x)`);
console.log(`tells ${f(r.tellsPerS.median)}/s, tellMany ${f(r.tellManyPerS.median)}/s, raw publish ${f(r.rawPublishPerS.median)}/s: ${r.tellsOverRawPublish.toFixed(2)}x (target >= 2,000,000/s)`);
console.log(`K2K ${f(r.k2kPerS.median)}/s, cross-silo ${f(r.k2kCrossSiloPerS.median)}/s (${r.k2kCrossSiloOverRawPublish.toFixed(2)}x raw publish)`);
const c = r.cpuNsPerTell, k = r.cpuNsK2K;
if (c && k) console.log(`thread CPU ns/tell: client ${f(c.client)}, silo host ${f(c.siloHost)}, silo pool ${f(c.siloPool)}; K2K: hosts ${f(k.siloHost)}/cross-silo msg, pool ${f(k.siloPool)}/msg (2 M/s needs each < 500)`);
' "$O/cluster-latest.json" 2>&1 | head -6
grep -E "^\||frames through" "$O/costs.txt"
exit 0
