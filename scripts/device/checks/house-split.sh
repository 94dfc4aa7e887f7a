#!/usr/bin/env bash
# The GPU scripts that now share bench/lib (systems.ts, floors.ts, lone-ask.ts), run short on the GPU: each must
# finish with exact results, and its figures should sit where the earlier runs put them (same kernels, options, loops).
set -u
O="$OUT/house-split"; mkdir -p "$O"
timeout -k 5 50 node --import tsx scripts/latency-probe.ts --asks 2000 --ask-partitions 4 --hop-partitions 1024 \
  --json "$O/latency.json" > "$O/latency.log" 2>&1; echo "latency-probe exit $?"; tail -4 "$O/latency.log" | cut -c1-250
timeout -k 5 35 node --import tsx bench/probes/k2k.ts --partitions 1024 --walks 4096 --trials 1 > "$O/k2k.log" 2>&1
echo "probes/k2k exit $?"; tail -2 "$O/k2k.log" | cut -c1-300
timeout -k 5 35 node --import tsx scripts/lane-groups-probe.ts --devices 0 --walks 4096 --trials 1 > "$O/lane-groups.log" 2>&1
echo "lane-groups-probe exit $?"; tail -2 "$O/lane-groups.log" | cut -c1-300
exit 0
