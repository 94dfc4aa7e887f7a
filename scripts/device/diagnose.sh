#!/usr/bin/env bash
# On the GPU machine (after `run` carried .device/): the CUDA backend's test files, each in a fresh
# process, then the conformance suite's CUDA lane under a watchdog. If the suite still runs after
# WATCH seconds, its processes get a Node diagnostic report (SIGUSR2: JS stack, if the main thread
# reaches JS) and cuda-gdb prints every thread's native stack (a thread blocked in the driver).
#   bash scripts/device/diagnose.sh      (writes $OUT/{backend.log,conf.log,diag.txt,*.json})
set -uo pipefail
cd "$(dirname "$0")/../.."
WATCH=${WATCH:-75}
bash scripts/device/run.sh true >/dev/null 2>&1
export PATH=/tmp/rg-node/bin:$PATH
vt() { node node_modules/vitest/vitest.mjs run "$@" --no-file-parallelism --reporter=verbose --reporter=json; }
timeout 120 bash -c "$(declare -f vt); vt packages/cuda-backend/test/backend.test.ts packages/cuda-backend/test/gpu-fault.test.ts --outputFile.json=$OUT/vitest-backend.json" > "$OUT/backend.log" 2>&1
echo "backend tests exit $?"
pkill -9 -f node_modules/vitest
NODE_OPTIONS="--report-on-signal --report-signal=SIGUSR2 --report-directory=/tmp/rg-reports" \
  vt test/conformance -t cuda --testTimeout=20000 --outputFile.json="$OUT/vitest-conf.json" > "$OUT/conf.log" 2>&1 &
main=$!
for ((i = 0; i < WATCH; i++)); do kill -0 $main 2>/dev/null || break; sleep 1; done
{
  if kill -0 $main 2>/dev/null; then
    echo "== conformance still running after ${WATCH}s: diagnosing"
    for p in $(pgrep -f node_modules/vitest); do
      echo "== pid $p: $(tr '\0' ' ' < /proc/$p/cmdline | cut -c1-200)"
      kill -USR2 "$p"
    done
    sleep 3
    for p in $(pgrep -f node_modules/vitest); do
      echo "== native stacks of $p"
      timeout 40 cuda-gdb -p "$p" -batch -ex 'info threads' -ex 'thread apply all bt 12' 2>&1 | grep -v '^\[New\|^$' | head -150
    done
    for r in /tmp/rg-reports/*.json; do
      [[ -f $r ]] || continue
      echo "== report $r"
      node -e 'const r=require(process.argv[1]);console.log(JSON.stringify({js:r.javascriptStack,native:(r.nativeStack||[]).slice(0,25)},null,1))' "$r" | head -120
    done
    pkill -9 -f node_modules/vitest
  else
    echo "== conformance finished by itself"
  fi
} > "$OUT/diag.txt" 2>&1
wait $main 2>/dev/null
echo "conformance exit $?"
