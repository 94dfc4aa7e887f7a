#!/usr/bin/env bash
# Runs ON the GPU machine: the SIR example at 1,000,000 people with default options on cuda and on cpu
# (same machine, same run); writes $OUT/sir1M.json { cuda: {exact, epidemicS, k2kPerS, exit, seconds}, cpu: … }.
#   bash scripts/device/run.sh bash scripts/device/sir1m.sh [--timeout 240]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/.device/out}"
mkdir -p "$OUT"
limit=240
[[ "${1:-}" == "--timeout" ]] && limit="$2"
[[ "${1:-}" == "-h" || "${1:-}" == "--help" ]] && { sed -n 2,4p "$0"; exit 0; }
rc=0
for b in cuda cpu; do
  t0=$(date +%s)
  timeout -s TERM -k 10 "$limit" node --import tsx examples/sir/main.ts --backend "$b" --people 1000000 >"$OUT/sir1M-$b.log" 2>&1
  echo "$? $(( $(date +%s) - t0 ))" >"/tmp/sir1M-$b.status"
  echo "sir 1M $b: exit $(cut -d' ' -f1 "/tmp/sir1M-$b.status") after $(cut -d' ' -f2 "/tmp/sir1M-$b.status") s"
  grep -E "epidemic|K2K msgs|^OK|MISMATCH|Error" "$OUT/sir1M-$b.log" | head -6
done
python3 - "$OUT" <<'PY'
import json, re, sys
out = sys.argv[1]
res = {}
for b in ("cuda", "cpu"):
    log = open(f"{out}/sir1M-{b}.log", errors="replace").read()
    code, secs = open(f"/tmp/sir1M-{b}.status").read().split()
    def dur(s):
        m = re.search(r"epidemic ([\d.,]+) (ms|s|µs) over", s)
        if not m: return None
        v = float(m.group(1).replace(",", ""))
        return {"ms": v / 1000, "s": v, "µs": v / 1e6}[m.group(2)]
    k = re.search(r"\(([\d,]+) K2K msgs/s during the epidemic\)", log)
    res[b] = {
        "exact": code == "0" and "OK: S/I/R counts" in log,
        "epidemicS": dur(log),
        "k2kPerS": int(k.group(1).replace(",", "")) if k else None,
        "exit": int(code),
        "seconds": int(secs),
        "command": f"node --import tsx examples/sir/main.ts --backend {b} --people 1000000",
    }
json.dump(res, open(f"{out}/sir1M.json", "w"), indent=2)
print(json.dumps(res))
PY
exit 0
