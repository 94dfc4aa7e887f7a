#!/usr/bin/env bash
# Runs ON the GPU test machine, from the repository root, after `run` carried .device/ there:
#   bash scripts/device/run.sh <command...>
# Unpacks node to /tmp/rg-node/bin/node (and nats-server beside it when packed) and the node_modules trees into place, puts node first on
# PATH, prints the GPU and node versions, then runs the command. Everything printed also goes to
# $OUT/device-run.log (the run tool brings $OUT back).
#
# There is no npx/pnpm there, only node: invoke tools through node, e.g.
#   bash scripts/device/run.sh node node_modules/vitest/vitest.mjs run packages/cuda-backend/test/driver.test.ts
#   bash scripts/device/run.sh node --import tsx scripts/device/driver-record.ts
set -euo pipefail
cd "$(dirname "$0")/../.."

export OUT="${OUT:-$PWD/.device/out}"
mkdir -p "$OUT"
exec > >(tee -a "$OUT/device-run.log") 2>&1

# xz may be missing on a bare image; python3's lzma reads the same files.
unxz_to() { # $1 = .xz file, $2 = destination ("-" for stdout)
  if command -v xz >/dev/null; then
    if [[ "$2" == - ]]; then xz -dc "$1"; else xz -dc "$1" > "$2"; fi
  else
    python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer if sys.argv[2]=="-" else open(sys.argv[2],"wb"))' "$1" "$2"
  fi
}

t0=$(date +%s)
for f in .device/node.xz .device/node_modules.tar.xz; do
  [[ -f "$f" ]] || { echo "device-run: $f missing: run scripts/device/pack.sh here and pass carry: [\".device\"]" >&2; exit 2; }
done

mkdir -p /tmp/rg-node/bin
if [[ ! -x /tmp/rg-node/bin/node || .device/node.xz -nt /tmp/rg-node/bin/node ]]; then
  unxz_to .device/node.xz /tmp/rg-node/bin/node.tmp
  chmod +x /tmp/rg-node/bin/node.tmp
  mv /tmp/rg-node/bin/node.tmp /tmp/rg-node/bin/node
fi
# nats-server (the cluster tests and bench), when device-pack.sh found one to pack: beside node, on PATH.
if [[ -f .device/nats-server.xz ]] && [[ ! -x /tmp/rg-node/bin/nats-server || .device/nats-server.xz -nt /tmp/rg-node/bin/nats-server ]]; then
  unxz_to .device/nats-server.xz /tmp/rg-node/bin/nats-server.tmp
  chmod +x /tmp/rg-node/bin/nats-server.tmp
  mv /tmp/rg-node/bin/nats-server.tmp /tmp/rg-node/bin/nats-server
fi
export PATH="/tmp/rg-node/bin:$PATH"

# Replace the node_modules trees wholesale so that a warm machine never mixes two installs.
rm -rf node_modules packages/*/node_modules examples/node_modules test/node_modules bench/node_modules
unxz_to .device/node_modules.tar.xz - | tar -xf -
echo "device-run: unpacked node and node_modules in $(( $(date +%s) - t0 )) s"

echo "== GPU"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used,utilization.gpu,temperature.gpu,pstate --format=csv || true
  nvidia-smi | sed -n '1,4p' | grep -i 'cuda version' || true
else
  echo "nvidia-smi not found"
fi
echo "== node $(node --version) ($(command -v node)), $(uname -srm)"
if command -v nats-server >/dev/null; then echo "== $(nats-server --version) ($(command -v nats-server))"; else echo "== no nats-server (the cluster tests skip)"; fi
echo "== running: $*"

set +e
"$@"
rc=$?
set -e
echo "device-run: command exited with $rc after $(( $(date +%s) - t0 )) s"
exit $rc
