#!/usr/bin/env bash
# SIR at 1,000,000 people across three silo processes on NATS (issue 31's target), cpu backend, exact against
# the JavaScript model, beside one process with as many pool threads in the same run (examples/sir/cluster.ts:
# the single process first, then a local nats-server, 3 silos x 3 pool threads and a client driving them; the
# barrier is the client's idle(), the cluster's). Needs nats-server on PATH (scripts/device/run.sh puts the
# packed one there). Run from the repo root on the GPU machine (16 cores); one step, at most ~150 s in all.
set -u
O="$OUT/cluster-sir"; mkdir -p "$O"
git rev-parse --short HEAD > "$O/commit.txt" 2>/dev/null
{ echo "cores $(nproc), commit $(cat "$O/commit.txt"), node $(node --version)"; nats-server --version; } > "$O/env.txt" 2>&1
cat "$O/env.txt"

# --ring-log2 18: a step's K2K burst at 1M people (~2.5 M sends) mostly fits the rings instead of the overflow.
# --dead-ms 10000: busy silos on a shared host must not be declared dead between heartbeats.
# PEOPLE: 1,000,000 unless set (a smaller run checks the script on a small machine).
timeout -k 5 140 node --import tsx examples/sir/cluster.ts --people "${PEOPLE:-1000000}" --silos 3 --silo-threads 3 \
  --ring-log2 18 --dead-ms 10000 > "$O/sir-1m.txt" 2> "$O/sir-1m.err"
rc=$?
echo "sir ${PEOPLE:-1000000} people across 3 silos: exit $rc (124/137: cut at 140 s)" | tee "$O/rc.txt"

echo "SUMMARY"
grep -E "^single process:" "$O/sir-1m.err"
grep -E "^cluster: step" "$O/sir-1m.err" | tail -2
grep -E "people|cluster:|^\| |cluster / single|^OK|MISMATCH|  - " "$O/sir-1m.txt" | cut -c1-250
[ $rc -ne 0 ] && tail -8 "$O/sir-1m.err" | cut -c1-300
exit 0
