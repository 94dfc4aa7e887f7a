/**
 * K2K throughput against occupancy: the walk benchmark of gpu-latest (16,384 walks of 1,000 sends over
 * RELAY_ACTORS actors, every sampled actor checked against the JS walks) for each partition count given,
 * under the NVRTC defines of this process (RINGGRAIN_NVRTC_DEFINES, e.g. RG_MIN_BLOCKS_PER_SM=6 caps
 * registers so that more worker warps fit an SM). One JSON line per partition count: registers per
 * thread, stack bytes (spills), blocks per SM, the hop and the median of the trials.
 *
 * With RG_WAVE_STATS among the defines, each line also says where a worker warp's time went during the
 * walks (device.ts RG_WS_*): messages per batch of lane turns, waves per batch, cycles per batch, per
 * lane turn and per phase of a turn, and the cycles between batches.
 *
 *   RINGGRAIN_NVRTC_DEFINES=... node --import tsx bench/probes/k2k.ts [--partitions 1024,2048] [--queue 1024,256]
 *   [--walks 16384] [--trials 3]
 */
import { CudaBackend, probeCuda } from '../../packages/cuda-backend/src/index.ts';
import { readWaveStats } from '../../packages/cuda-backend/src/fault-injection.ts';
import { RELAY_ACTORS } from '../grains.ts';
import { relaySystem } from '../lib/systems.ts';
import { relayHop, relayWalks } from '../../scripts/gpu-measure.ts';

const argv = process.argv.slice(2);
const option = (n: string, d: string) => (argv.includes(n) ? (argv[argv.indexOf(n) + 1] ?? d) : d);
const partitionsList = option('--partitions', '1024').split(',').map(Number);
const walksList = option('--walks', '16384').split(',').map(Number);
const trials = Number(option('--trials', '3'));
const queues = option('--queue', '1024').split(',').map(Number);
if (!probeCuda().ok) {
  console.log('k2k-probe: no CUDA device');
  process.exit(0);
}
const defines = process.env['RINGGRAIN_NVRTC_DEFINES'] ?? '(defaults)';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const partitions of partitionsList)
  for (const queueCapacity of queues) {
    const backend = new CudaBackend({ partitions, queueCapacity });
    const sys = relaySystem(backend);
    try {
      await sys.start();
    } catch (e) {
      console.log(JSON.stringify({ defines, partitions, queueCapacity, error: String(e) }));
      continue;
    }
    try {
      const launch = backend.launches.at(-1)!;
      const hop = await relayHop(sys);
      const model = new Uint32Array(RELAY_ACTORS);
      const byWalks: Record<string, number> = {};
      const waves: Record<string, unknown> = {};
      for (const walks of walksList) {
        const runs: number[] = [];
        const before = readWaveStats(backend);
        for (let t = 0; t < trials; t++) runs.push((await relayWalks(sys, walks, 1000, model)).perSecond);
        byWalks[walks] = Math.round(median(runs));
        // Idle warps add what they summed after 256 empty polls: give them a moment.
        await new Promise((r) => setTimeout(r, 50));
        const after = readWaveStats(backend);
        if (before && after) waves[walks] = waveSummary(after.map((v, i) => v - before[i]!));
      }
      console.log(
        JSON.stringify({
          defines,
          partitions,
          queueCapacity,
          registers: launch.registersPerThread,
          stackBytes: launch.stackBytesPerThread,
          blocksPerSM: launch.blocksPerSM,
          blocks: launch.blocks,
          hopNs: Math.round(hop.hopNs),
          k2kPerSByWalks: byWalks,
          ...(Object.keys(waves).length ? { waves } : {}),
        }),
      );
    } finally {
      await sys.shutdown();
    }
  }

/** device.ts RG_WS_* sums → per batch and per turn figures (SM clock cycles). */
function waveSummary(w: BigUint64Array): Record<string, number> {
  const n = (i: number) => Number(w[i] ?? 0n);
  const [
    batches,
    messages,
    batchCycles,
    wavesN,
    turns,
    turnCycles,
    dec,
    act,
    handle,
    after,
    maxTurn,
    singles,
    singleCycles,
    preSend,
    claim,
    publish,
    postSend,
  ] = Array.from({ length: 17 }, (_, i) => n(i));
  const per = (a: number, b: number) => (b ? Math.round((a / b) * 10) / 10 : 0);
  return {
    batches: batches!,
    messagesPerBatch: per(messages!, batches!),
    wavesPerBatch: per(wavesN!, batches!),
    cyclesPerBatch: per(batchCycles!, batches!),
    cyclesPerLaneTurn: per(turnCycles!, turns!),
    slowestLaneTurnPerBatch: per(maxTurn!, batches!),
    decodeCycles: per(dec!, turns!),
    activateCycles: per(act!, turns!),
    handleCycles: per(handle!, turns!),
    afterCycles: per(after!, turns!),
    // The handler's parts, per turn that sent one K2K message (averaged over all turns: Relay's walks all send).
    handlerBeforeSendCycles: per(preSend!, turns!),
    sendClaimCycles: per(claim!, turns!),
    sendFillPublishCycles: per(publish!, turns!),
    handlerAfterSendCycles: per(postSend!, turns!),
    singles: singles!,
    cyclesPerSingle: per(singleCycles!, singles!),
  };
}
