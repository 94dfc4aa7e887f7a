/**
 * Lane groups (CudaBackend `devices`) on the GPU: the K2K walks of gpu-latest (walks of 1,000 sends over
 * RELAY_ACTORS actors, sampled actors checked against the same walks in JS: exact or exit 1) and the K2K hop,
 * once per devices list given, in one process; with two GPUs, the one-word peer ping-pong floor first (a word
 * bounced between a block on each GPU through peer memory, st.release.sys / ld.acquire.sys).
 *
 *   node --import tsx scripts/lane-groups-probe.ts --devices 0 --devices 0,0 \
 *     [--walks 16384] [--trials 3] [--peer-floor]
 *
 * One JSON line per devices list: launches (blocks, partitions per group), hop, K2K/s of each trial and their
 * median, actors checked, device memory per GPU; the last line compares each list's rate to the first's.
 */
import { CudaBackend, CudaContext, arg, compileCached, probeCuda } from '../packages/cuda-backend/src/index.ts';
import { RELAY_ACTORS } from '../bench/grains.ts';
import { relaySystem } from '../bench/lib/systems.ts';
import { median } from '../bench/trials.ts';
import { relayHop, relayWalks } from './gpu-measure.ts';

const argv = process.argv.slice(2);
const lists: number[][] = [];
for (let i = 0; i < argv.length; i++) if (argv[i] === '--devices') lists.push(argv[i + 1]!.split(',').map(Number));
const option = (n: string, d: string) => (argv.includes(n) ? (argv[argv.indexOf(n) + 1] ?? d) : d);
const walks = Number(option('--walks', '16384'));
const trials = Number(option('--trials', '3'));
if (lists.length === 0) lists.push([0], [0, 0]);

const probe = probeCuda();
if (!probe.ok) {
  console.log(JSON.stringify({ skipped: `no CUDA device: ${probe.reason}` }));
  process.exit(0);
}
const need = Math.max(...lists.flat()) + 1;
if (probe.deviceCount < need) {
  console.log(
    JSON.stringify({
      skipped: `devices ${JSON.stringify(lists)} need ${need} GPUs; this machine has ${probe.deviceCount}`,
    }),
  );
  process.exit(0);
}

const PEER_FLOOR_SOURCE = `
extern "C" __global__ void rg_peer_floor(unsigned int* mine, unsigned int* theirs, unsigned int hops,
                                         unsigned int first,
                                         unsigned long long* out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  unsigned long long t0 = 0, t1 = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  for (unsigned int i = 1; i <= hops; i++) {
    unsigned int v;
    if (first) {
      asm volatile("st.release.sys.u32 [%0], %1;" : : "l"(theirs), "r"(i) : "memory");
      do { asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(mine) : "memory"); } while (v != i);
    } else {
      do { asm volatile("ld.acquire.sys.u32 %0, [%1];" : "=r"(v) : "l"(mine) : "memory"); } while (v != i);
      asm volatile("st.release.sys.u32 [%0], %1;" : : "l"(theirs), "r"(i) : "memory");
    }
  }
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  out[0] = t1 - t0;
}
`;

/** One cross-GPU hop (half a round trip) in ns: the median of `n` runs of 20,000 round trips, a block on each GPU. */
async function peerFloor(a: number, b: number, n = 3): Promise<{ hopNs: number; runs: number[] }> {
  const ca = CudaContext.create({ device: a });
  const cb = CudaContext.create({ device: b });
  if (!ca.canAccessPeer(cb) || !cb.canAccessPeer(ca))
    throw new Error(`GPU ${a} and GPU ${b} cannot access each other's memory`);
  ca.enablePeerAccess(cb);
  cb.enablePeerAccess(ca);
  const side = (ctx: CudaContext) => {
    const mod = ctx.loadModule(
      compileCached(PEER_FLOOR_SOURCE, { arch: ctx.device.arch, name: 'rg_peer_floor.cu' }).cubin,
    );
    return {
      ctx,
      mod,
      fn: ctx.getFunction(mod, 'rg_peer_floor'),
      word: ctx.allocDevice(256),
      out: ctx.allocDevice(8),
      stream: ctx.createStream(),
    };
  };
  const x = side(ca);
  const y = side(cb);
  const hops = 20_000;
  const runs: number[] = [];
  try {
    for (let t = 0; t < n; t++) {
      x.ctx.memsetDevice(x.word, 0);
      y.ctx.memsetDevice(y.word, 0);
      y.ctx.launch(y.fn, { grid: 1, block: 32, stream: y.stream }, [
        arg.ptr(y.word.devPtr),
        arg.ptr(x.word.devPtr),
        arg.u32(hops),
        arg.u32(0),
        arg.ptr(y.out.devPtr),
      ]);
      x.ctx.launch(x.fn, { grid: 1, block: 32, stream: x.stream }, [
        arg.ptr(x.word.devPtr),
        arg.ptr(y.word.devPtr),
        arg.u32(hops),
        arg.u32(1),
        arg.ptr(x.out.devPtr),
      ]);
      for (const s of [x, y])
        if (!(await s.ctx.waitForStream(s.stream, { timeoutMs: 20_000 })))
          throw new Error('peer floor kernel did not finish in 20 s');
      const ns = new BigUint64Array(1);
      x.ctx.copyFromDevice(ns, x.out);
      runs.push(Number(ns[0]) / (2 * hops));
    }
  } finally {
    for (const s of [x, y]) {
      s.ctx.freeDevice(s.word);
      s.ctx.freeDevice(s.out);
      s.ctx.destroyStream(s.stream);
      s.ctx.unloadModule(s.mod);
    }
    cb.dispose();
    ca.dispose();
  }
  return { hopNs: median(runs), runs };
}

if (argv.includes('--peer-floor')) {
  const two = lists.find((l) => new Set(l).size >= 2);
  if (two)
    console.log(JSON.stringify({ peerFloor: { devices: [two[0], two[1]], ...(await peerFloor(two[0]!, two[1]!)) } }));
}

let bad = 0;
const rates: Record<string, number> = {};
for (const devices of lists) {
  const backend = new CudaBackend({ devices });
  const sys = relaySystem(backend);
  const t0 = performance.now();
  try {
    await sys.start();
  } catch (e) {
    bad++;
    console.log(JSON.stringify({ devices, error: String(e) }));
    continue;
  }
  try {
    const startMs = Math.round(performance.now() - t0);
    const hop = await relayHop(sys);
    const model = new Uint32Array(RELAY_ACTORS);
    const runs: number[] = [];
    let checked = 0;
    for (let t = 0; t < trials; t++) {
      const r = await relayWalks(sys, walks, 1000, model);
      runs.push(Math.round(r.perSecond));
      checked = r.checkedActors;
    }
    const m = sys.metrics()['Relay']!;
    rates[devices.join(',')] = median(runs);
    console.log(
      JSON.stringify({
        devices,
        ...(process.env['RINGGRAIN_PEER_SCOPE'] ? { peerScope: process.env['RINGGRAIN_PEER_SCOPE'] } : {}),
        exact: true,
        startMs,
        launches: backend.launches.map((l) => ({
          blocks: l.blocks,
          partitions: l.partitions,
          group: l.group,
          device: l.device,
        })),
        hopNs: Math.round(hop.hopNs),
        walks,
        k2kPerS: runs,
        k2kPerSMedian: median(runs),
        checkedActors: checked,
        k2kSent: m.k2kSent,
        k2kReceived: m.k2kReceived,
        overflow: m.overflow,
        classMemory: m.devices,
        memoryByDevice: backend
          .memoryByDevice()
          .map((d) => ({ device: d.device, deviceUsedBytes: d.mem.totalBytes - d.mem.freeBytes })),
      }),
    );
  } catch (e) {
    bad++;
    console.log(JSON.stringify({ devices, exact: false, error: String(e) }));
  } finally {
    await sys.shutdown();
  }
}
const base = rates[lists[0]!.join(',')];
if (base)
  console.log(
    JSON.stringify({
      rateVsFirst: Object.fromEntries(Object.entries(rates).map(([k, v]) => [k, +(v / base).toFixed(3)])),
    }),
  );
process.exit(bad ? 1 : 0);
