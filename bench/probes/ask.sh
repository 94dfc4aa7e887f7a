#!/usr/bin/env bash
# Where an ask's time goes, without Node in the loop (packages/cuda-backend/test/gpu/ask-probe.cu).
#   bash bench/probes/ask.sh build   # here: generate Echo/Relay units, nvcc every variant into .device/probe/
#   bash bench/probes/ask.sh run     # on the GPU machine (carry .device): JSON lines to $OUT/ask-probe.jsonl
# A variant is the generated unit compiled with other back-off/polling macros (codegen device.ts BACKOFF);
# "prof" variants take clock64 stamps at every RG_STAMP point (a few ns each), "plain" ones take none.
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=.device/probe
SRC=packages/cuda-backend/test/gpu/ask-probe.cu

# label | unit | tuning macros
# reply-no-fence is not a safe protocol: it publishes the reply's seq with a plain store, only to
# measure what the system-scope release costs. ctrl-every-poll is the pre-5ffb2e3 control polling.
# always-wide polls 32 host slots' seqs even when idle (the batched ingress without its narrow idle poll).
# (Staggered inbound polls, 4 in flight, measured 12.1 µs against 7.1 µs at c4af2d0 and were removed.)
VARIANTS=(
  "default|Echo|"
  "always-wide|Echo|-DRG_INGRESS_ALWAYS_WIDE"
  "ctrl-every-poll|Echo|-DRG_CTRL_EVERY=1"
  "reply-no-fence|Echo|-DPROBE_REPLY_NO_FENCE"
  "default|Relay|"
)

case "${1:-}" in
  build)
    mkdir -p "$DIR"
    npx tsx packages/codegen/src/cli.ts bench/grains.ts --out "$DIR" >/dev/null
    for v in "${VARIANTS[@]}"; do
      IFS='|' read -r label unit macros <<<"$v"
      id=$(node -e "console.log(require('./$DIR/$unit.abi.json').grainId)")
      for prof in plain prof; do
        extra=""; [[ $prof == prof ]] && extra="-DRG_PROFILE"
        # shellcheck disable=SC2086
        nvcc -arch=sm_90 -O3 -std=c++17 -I"$DIR" -DRG_UNIT="\"$unit.cu\"" -DRG_ENTRY="rg_${unit}_main" -DRG_SELF_ID="$id" \
          -DRG_STATE="rg_${unit}_state" $extra $macros -o "$DIR/$unit-$label-$prof" "$SRC" &
      done
    done
    wait
    ls "$DIR"
    ;;
  run)
    OUT="${OUT:-$PWD/.device/out}"
    mkdir -p "$OUT"
    f="$OUT/ask-probe.jsonl"
    : >"$f"
    "$DIR/Echo-default-plain" pingpong pingpong 20000 | tee -a "$f"
    for v in "${VARIANTS[@]}"; do
      IFS='|' read -r label unit _ <<<"$v"
      for prof in plain prof; do
        if [[ $unit == Echo ]]; then
          "$DIR/$unit-$label-$prof" "$label-$prof" echo 20000 3 | tee -a "$f"
        else
          "$DIR/$unit-$label-$prof" "$label-$prof" chain 2000 3 64 | tee -a "$f"
          "$DIR/$unit-$label-$prof" "$label-$prof-0" chain 5000 3 0 | tee -a "$f"
        fi
      done
    done
    ;;
  *) echo "usage: $0 build|run" >&2; exit 2 ;;
esac
