#!/usr/bin/env bash
# Runs ON the GPU machine (through scripts/device/run.sh): compute-sanitizer's tools over the workloads
# below, each under its own timeout; writes $OUT/sanitizer.json ({ tool: errors, workloads, runs: [...] })
# and one log per run (in $OUT/sanitizer-logs.tgz). A run whose workload fails (wrong answer, non-zero exit) is counted in failedRuns.
#
#   bash scripts/device/run.sh bash scripts/device/sanitize.sh [--tools memcheck,racecheck,synccheck,initcheck] [--workloads sir,k2k,...]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/.device/out}"
LOGS=/tmp/rg-sanitizer
mkdir -p "$OUT" "$LOGS"
tools="memcheck,racecheck,synccheck,initcheck"
workloads="vector-add,bank,sir,k2k-default,k2k-sir,residency,residency-room"
per_run="${SANITIZE_TIMEOUT:-240}"
# Whole-script budget (s): a run that could not finish inside it is recorded as skipped, not started.
budget="${SANITIZE_BUDGET:-100000}"
t_start=$(date +%s)
while [[ $# -gt 0 ]]; do
  case "$1" in
    --tools) tools="$2"; shift 2 ;;
    --workloads) workloads="$2"; shift 2 ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) echo "device-sanitize: unknown option $1" >&2; exit 2 ;;
  esac
done
# Idle warps sleep after 8 empty polls instead of 4096: under the sanitizer every poll is instrumented,
# and hundreds of spinning warps kept the workloads from finishing. Timing only; the same code paths run.
# Every default timeout (asks, handshake, heartbeat, STOP acknowledgement) times 100: instrumented kernels
# run 10-1000x slower than the defaults are sized for.
export RINGGRAIN_TIMEOUT_SCALE="${RINGGRAIN_TIMEOUT_SCALE-100}"
# Idle polls then sleep 200 µs (workers) / 50 µs (ingress) instead of 1-2 µs: the kernels spend the run
# mostly idle, and every instrumented poll costs; with the short sleeps multi-kernel workloads did not
# finish within 100 s under memcheck.
export RINGGRAIN_NVRTC_DEFINES="${RINGGRAIN_NVRTC_DEFINES-RG_WORKER_SPIN=8,RG_INGRESS_SPIN=8,RG_WORKER_IDLE_NS=200000,RG_INGRESS_IDLE_NS=50000}"
bin="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
[[ -x "$bin" ]] || { echo "device-sanitize: compute-sanitizer not found" >&2; exit 2; }

cmd_of() {
  case "$1" in
    vector-add) echo "node --import tsx examples/vector-add/main.ts --backend cuda --sizes 10,1000" ;;
    bank) echo "node --import tsx examples/bank/main.ts --backend cuda --accounts 200 --transfers 2000" ;;
    sir) echo "node --import tsx examples/sir/main.ts --backend cuda --people 2000 --days 2" ;;
    # SIR with 4 partitions of 16 slots: most K2K messages go through the overflow pool (rg_ov_alloc / free).
    sir-overflow) echo "node --import tsx examples/sir/main.ts --backend cuda --people 2000 --days 2 --partitions 4 --queue-log2 4" ;;
    k2k-default) echo "node --import tsx scripts/device/sanitize-workload.ts k2k" ;;
    k2k-sir) echo "node --import tsx scripts/device/sanitize-workload.ts k2k --partitions 64 --queue 16384" ;;
    # Device-generated timer ticks (timers.ts): 10,000 actors' timers scanned, sent and run as turns.
    timers) echo "node --import tsx bench/timers.ts --backend cuda --actors 10000 --trials 1 --seconds 2 --no-baseline" ;;
    # The dirty gather beside the persistent kernel (state-meta.ts), every row and the no-lost-update check.
    gpu-state) echo "node --import tsx bench/gpu-state.ts --rows 20000 --trials 1" ;;
    # Actor residency (issue 30): idle collections racing tells for the same actors (deactivate, load on
    # the next message with its messages parked, replay), every state checked against the model.
    residency) echo "node --import tsx scripts/residency-workload.ts --backend cuda --keys 300 --rounds 6" ;;
    # A full table making room (issue 30 item 6): 400 keys through 128 slots, new keys deactivating the
    # actors of earlier batches (evict ring) while messages for those actors keep arriving (parked, reloaded).
    residency-room) echo "node --import tsx scripts/residency-workload.ts --backend cuda --keys 400 --rounds 3 --max-actors 128" ;;
    *) return 1 ;;
  esac
}

# Warm the compile cache outside the sanitizer (NVRTC under instrumentation is slow, and is not what we check).
for w in ${workloads//,/ }; do
  c="$(cmd_of "$w")" || { echo "unknown workload $w" >&2; exit 2; }
  t0=$(date +%s)
  timeout "${SANITIZE_PLAIN_TIMEOUT:-90}" $c >"$LOGS/plain-$w.log" 2>&1
  r=$?
  echo "plain $w: exit $r after $(( $(date +%s) - t0 )) s"
  [[ $r != 0 ]] && tail -15 "$LOGS/plain-$w.log" | sed 's/^/    /'
  # Logs come back even if the whole run is cut off later.
  tar czf "$OUT/sanitizer-logs.tgz" -C /tmp rg-sanitizer
done

runs="[]"
rc=0
for tool in ${tools//,/ }; do
  for w in ${workloads//,/ }; do
    c="$(cmd_of "$w")"
    log="$LOGS/$tool-$w.log"
    t0=$(date +%s)
    if (( t0 - t_start + per_run > budget )); then
      echo "$tool $w: skipped (budget of ${budget}s would be exceeded)"
      runs=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r.append({"tool":sys.argv[2],"workload":sys.argv[3],"skipped":"budget"}); print(json.dumps(r))' "$runs" "$tool" "$w")
      continue
    fi
    extra=""
    [[ $tool == racecheck ]] && extra="--racecheck-report all"
    timeout "$per_run" "$bin" --tool "$tool" $extra --target-processes all --print-limit 20 $c >"$log" 2>&1
    r=$?
    secs=$(( $(date +%s) - t0 ))
    if [[ $tool == racecheck ]]; then
      errs=$(grep -oE 'RACECHECK SUMMARY: [0-9]+ hazard' "$log" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}')
    else
      errs=$(grep -oE 'ERROR SUMMARY: [0-9]+ error' "$log" | grep -oE '[0-9]+' | awk '{s+=$1} END {print s+0}')
    fi
    summaries=$(grep -cE '(ERROR|RACECHECK) SUMMARY' "$log")
    ok=true
    if [[ $r != 0 || $summaries == 0 ]]; then ok=false; rc=1; fi
    # A run that did not finish (timeout) counts nothing: its error count is unknown, not 0.
    [[ $summaries == 0 ]] && errs=-1
    [[ $errs != 0 ]] && rc=1
    echo "$tool $w: exit $r, $errs errors, ${secs}s"
    grep -m3 -E 'Invalid|Hazard|Uninitialized|error' "$log" | head -3 | sed 's/^/    /'
    tar czf "$OUT/sanitizer-logs.tgz" -C /tmp rg-sanitizer
    runs=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r.append({"tool":sys.argv[2],"workload":sys.argv[3],"exit":int(sys.argv[4]),"errors":int(sys.argv[5]),"seconds":int(sys.argv[6]),"workloadOk":sys.argv[7]=="true","command":sys.argv[8]}); print(json.dumps(r))' "$runs" "$tool" "$w" "$r" "$errs" "$secs" "$ok" "$c")
  done
done
python3 - "$runs" "$OUT/${SANITIZE_JSON:-sanitizer.json}" <<'PY'
import json, sys
runs = json.loads(sys.argv[1])
import os
out = {"workloads": sorted({r["workload"] for r in runs}), "failedRuns": {}, "unfinished": [], "defines": os.environ.get("RINGGRAIN_NVRTC_DEFINES", ""), "runs": runs}
out["skipped"] = [f'{r["tool"]} {r["workload"]}' for r in runs if r.get("skipped")]
runs = [r for r in runs if not r.get("skipped")]
out["runs"] = runs
for r in runs:
    if r["errors"] < 0:
        r["errors"] = None
        out["unfinished"].append(f'{r["tool"]} {r["workload"]}')
    # A tool's count covers its finished runs; with none finished it is unknown (null), never 0.
    if r["errors"] is not None:
        out[r["tool"]] = (out.get(r["tool"]) or 0) + r["errors"]
    else:
        out.setdefault(r["tool"], None)
    out["failedRuns"][r["tool"]] = out["failedRuns"].get(r["tool"], 0) + (0 if r["workloadOk"] else 1)
json.dump(out, open(sys.argv[2], "w"), indent=2)
print(json.dumps({k: v for k, v in out.items() if k != "runs"}))
PY
# One file back (the run tool brings at most 8): every log in a tarball.
tar czf "$OUT/sanitizer-logs.tgz" -C /tmp rg-sanitizer
exit $rc
