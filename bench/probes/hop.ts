/**
 * Where the K2K hop goes: the 1,000-hop forward chain of gpu-latest (relayHop) on the CUDA backend, for
 * each partition count given, under the NVRTC defines of this process (RINGGRAIN_NVRTC_DEFINES: e.g.
 * RG_WORKER_SPIN=4294967295 keeps idle workers polling instead of sleeping). One line per partition
 * count; run it once per define set and compare.
 *
 *   RINGGRAIN_NVRTC_DEFINES=... node --import tsx bench/probes/hop.ts [--partitions 1024,128] [--hops 1000]
 */
import { CudaBackend, probeCuda } from '../../packages/cuda-backend/src/index.ts';
import { QUIET, relaySystem } from '../lib/systems.ts';
import { relayHop } from '../../scripts/gpu-measure.ts';

const argv = process.argv.slice(2);
const option = (n: string, d: string) => (argv.includes(n) ? (argv[argv.indexOf(n) + 1] ?? d) : d);
const partitionsList = option('--partitions', '1024,128').split(',').map(Number);
const hops = Number(option('--hops', '1000'));
if (!probeCuda().ok) {
  console.log('hop-probe: no CUDA device');
  process.exit(0);
}
const defines = process.env['RINGGRAIN_NVRTC_DEFINES'] ?? '(defaults)';
for (const partitions of partitionsList) {
  const sys = relaySystem(new CudaBackend({ partitions, queueCapacity: 1024 }), QUIET);
  await sys.start();
  try {
    const h = await relayHop(sys, hops);
    console.log(
      `hop-probe ${defines} partitions ${partitions}: hop ${h.hopNs.toFixed(0)} ns (chain of ` +
        `0: ${h.chain0P50Us.toFixed(1)} µs, of ${hops}: ${h.chainHP50Us.toFixed(0)} µs)`,
    );
  } finally {
    await sys.shutdown();
  }
}
