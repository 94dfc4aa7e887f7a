#!/usr/bin/env bash
# Cold start of a first GPU run (issue 34 item 1): SIR at 1,000,000 people, from the repo root, ≤ 120 s; output under
# $OUT/cold-start/, a SUMMARY last. Target: start ≤ 3 s on a fresh machine, ≤ 0.5 s warm.
#  (1) SIR 1M with a fresh kernel cache (RINGGRAIN_CACHE_DIR in a temp dir), then warm twice: the default build;
#  (2) the same with RINGGRAIN_FAST_COMPILE=min (its own cache keys): its start, and its epidemic time and K2K rate
#      against (1)'s warm runs: the A/B of the kernel's speed that decides whether -Ofc=min may become the default;
#  (3) last, in the time left: per unit, one thread, NVRTC's phases (front end, NVVM, PTX → SASS) for SIR's two
#      units, the default build and -Ofc=min, 1 trial each (bench/probes/nvrtc-unit.ts).
# Each run must end "OK: S/I/R counts ... equal the JavaScript model" (exact); the start is the example's `start`.
set -uo pipefail
O="${OUT:-/tmp/out}/cold-start"
mkdir -p "$O"
export RINGGRAIN_NO_PREBUILD=1
git rev-parse --short HEAD > "$O/commit.txt" 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$O/gpu.txt" 2>&1
T0=$(date +%s)
left() { echo $(( 118 - ($(date +%s) - T0) )); }
S="$O/summary.txt"; : > "$S"
sum() { echo "$*" | cut -c1-400 >> "$S"; }
sum "commit $(cat "$O/commit.txt" 2>/dev/null), $(nproc) cores, $(head -1 "$O/gpu.txt")"

# $1 tag, $2 seconds (capped by what is left), $3 cache dir, rest: env assignments
sir() {
  local tag=$1 t=$2 cache=$3; shift 3
  local l; l=$(left); [ "$l" -lt "$t" ] && t=$l
  if [ "$t" -le 5 ]; then sum "$tag: not run (time left ${l}s)"; return; fi
  env RINGGRAIN_CACHE_DIR="$cache" RINGGRAIN_LOG=info "$@" timeout -k 5 "$t" \
    node --import tsx examples/sir/main.ts --backend cuda --people 1000000 > "$O/$tag.log" 2>&1
  local rc=$?
  local line k2k ok compiled
  line="$(grep -m1 -oE "start [0-9.]+ m?s" "$O/$tag.log")"
  line="$line, $(grep -m1 -oE "epidemic [0-9.]+ m?s over [0-9]+ steps" "$O/$tag.log")"
  k2k=$(grep -m1 -oE "\([0-9,]+ K2K msgs/s" "$O/$tag.log" | tr -d '(')
  ok=$(grep -c "^OK: S/I/R counts" "$O/$tag.log")
  compiled=$(grep -oE "cuda: [A-Za-z]+ kernel[^,]* (from the compile cache|compiled in [0-9]+ ms)" "$O/$tag.log" \
    | sed 's/^cuda: //' | tr '\n' ';' | cut -c1-200)
  sum "$tag: exit $rc, exact $([ "$ok" = 1 ] && echo yes || echo NO), $line, $k2k [$compiled]"
}

D=$(mktemp -d)
F=$(mktemp -d)
sir default-cold 35 "$D"
sir fast-cold 25 "$F" RINGGRAIN_FAST_COMPILE=min
sir default-warm1 15 "$D"
sir fast-warm1 15 "$F" RINGGRAIN_FAST_COMPILE=min
sir default-warm2 15 "$D"
sir fast-warm2 15 "$F" RINGGRAIN_FAST_COMPILE=min
sum "cubins: default $(ls "$D" | wc -l), fast $(ls "$F" | wc -l)"
rm -rf "$D" "$F"

# Last, in the time left: where each unit's compile goes on this host (one thread, 1 trial each).
P=$(left)
if [ "$P" -gt 10 ]; then
  timeout -k 5 "$P" node --import tsx bench/probes/nvrtc-unit.ts --units sir-Person,sir-Ward --trials 1 \
    --opts ",-Ofc=min" > "$O/nvrtc-unit.log" 2>&1
  sum "nvrtc-unit probe exit $? (${P}s given):"
  grep -E "^\| sir|^NVRTC" "$O/nvrtc-unit.log" >> "$S"
else
  sum "nvrtc-unit probe: not run (time left ${P}s)"
fi
sum "total $(( $(date +%s) - T0 )) s"

echo "==== SUMMARY (cold-start) ===="
cat "$S"
exit 0
