// Host memory probe (no GPU): what copying a large reply costs into reused memory and into a fresh typed array
// (first touch of newly mapped pages). `node bench/probes/copy.mjs`
const N = 1 << 20;
const src = new Float32Array(N).fill(1.5);
const reuse = new Float32Array(N).fill(0);
const keep = [];
const t = (name, f, reps = 30) => {
  for (let i = 0; i < 3; i++) f();
  const xs = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    f();
    xs.push(performance.now() - t0);
  }
  xs.sort((a, b) => a - b);
  console.log(
    `${name.padEnd(48)} p50 ${xs[reps >> 1].toFixed(3)} ms  (${((4 * N) / xs[reps >> 1] / 1e6).toFixed(2)} GB/s)`,
  );
};
t('copy 4 MiB into reused memory', () => reuse.set(src));
t('new Float32Array(1 Mi) only', () => {
  keep.push(new Float32Array(N));
  if (keep.length > 40) keep.length = 0;
});
t('new Float32Array(1 Mi) + copy 4 MiB (kept)', () => {
  const o = new Float32Array(N);
  o.set(src);
  keep.push(o);
  if (keep.length > 40) keep.length = 0;
});
t('new Float32Array(1 Mi) + copy 4 MiB (dropped)', () => {
  const o = new Float32Array(N);
  o.set(src);
});
