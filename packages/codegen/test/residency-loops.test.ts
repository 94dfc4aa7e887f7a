/**
 * A class with storage through the kernel's own loops on the host (residency-loops.ts: control, workers and a
 * host-lane ingress warp, 32 threads a warp): loads installed, the kernel stopped (DRAIN → RESIDENT, STOPPED
 * acknowledged), every actor deactivated by the stopped kernel, EXIT ends every warp — the sequence a CUDA class
 * with storage did not finish on the H200 at d4c1e90 (bench/results/gpu/2026-11-28-h200-d4c1e90-cuda-lanes-
 * residency-stop.json). Memory here is sequentially consistent, so these pass where the loops' logic is sound; a
 * failure on the GPU that passes here lies in memory ordering or in what this does not run (the host's ingress of
 * the inbound rings, the backend's TypeScript side).
 */
import { describe, expect, it } from 'vitest';
import { HAVE_GXX } from './toolchain.ts';
import { runLoops } from './residency-loops.ts';

describe.skipIf(!HAVE_GXX)('residency through the real control and worker loops (g++, emulated warps)', () => {
  it('two loads, then the stopped kernel deactivates both, then EXIT ends every warp', () => {
    const r = runLoops('two');
    expect(r.lines).toEqual([
      'ACTIVE acknowledged',
      'send method 0 key 5 corr 1',
      'load 5',
      'install 1 answered: evicted 0 installed 1 rejected 0',
      'reply corr 1 flags 2 fits',
      'send method 0 key 6 corr 2',
      'load 6',
      'install 2 answered: evicted 0 installed 1 rejected 0',
      'reply corr 2 flags 2 fits',
      'STOPPED acknowledged',
      'deactivate 3 answered: evicted 2 installed 0 rejected 0',
      'every warp ended',
    ]);
    expect(r.status).toBe(0);
  }, 120_000);

  it('the same with the messages through the host rings (the control warp and a host-lane ingress warp)', () => {
    const r = runLoops('two', 'rings');
    expect(r.lines.filter((l) => /answered|acknowledged|ended|reply/.test(l))).toEqual([
      'ACTIVE acknowledged',
      'install 1 answered: evicted 0 installed 1 rejected 0',
      'reply corr 1 flags 2 fits',
      'install 2 answered: evicted 0 installed 1 rejected 0',
      'reply corr 2 flags 2 fits',
      'STOPPED acknowledged',
      'deactivate 3 answered: evicted 2 installed 0 rejected 0',
      'every warp ended',
    ]);
    expect(r.status).toBe(0);
  }, 120_000);

  it('a deactivation while active, a reload, then the stopped kernel deactivates the reloaded actor', () => {
    const r = runLoops('active-first');
    expect(r.lines.filter((l) => /answered|acknowledged|ended/.test(l))).toEqual([
      'ACTIVE acknowledged',
      'install 1 answered: evicted 0 installed 1 rejected 0',
      'install 2 answered: evicted 0 installed 1 rejected 0',
      'deactivate 3 answered: evicted 2 installed 0 rejected 0',
      'install 4 answered: evicted 0 installed 1 rejected 0',
      'STOPPED acknowledged',
      'deactivate 5 answered: evicted 1 installed 0 rejected 0',
      'every warp ended',
    ]);
    expect(r.status).toBe(0);
  }, 120_000);

  it("failed loads reject exactly the parked messages, each reply within its slot (a 700-byte store error)", () => {
    const r = runLoops('failed');
    expect(r.lines).toEqual([
      'ACTIVE acknowledged',
      'send method 0 key 5 corr 1',
      'send method 1 key 5 corr 0',
      'load 5',
      'install 1 answered: evicted 0 installed 0 rejected 2',
      // flags 6: REPLY | ERROR. Before the fix the failure text was cut to the 512-byte stage and ran past its
      // 256-byte reply slot into the next one.
      'reply corr 1 flags 6 fits',
      'reply corr 0 flags 6 fits',
      'send method 0 key 6 corr 2',
      'load 6',
      'install 2 answered: evicted 0 installed 1 rejected 0',
      'reply corr 2 flags 2 fits',
      'send method 2 key 5 corr 3',
      'load 5',
      'install 3 answered: evicted 0 installed 0 rejected 1',
      'reply corr 3 flags 6 fits',
      'STOPPED acknowledged',
      'deactivate 4 answered: evicted 1 installed 0 rejected 0',
      'every warp ended',
    ]);
    expect(r.status).toBe(0);
  }, 120_000);
});
