import { describe, expect, it } from 'vitest';
import { layoutOf, offsetOf } from '@ringgrain/core/backend';
import { Account } from '../../../examples/bank/grains.ts';
import { Slab, Tiny } from '../../../bench/state-grains.ts';
import { generateKernel } from '../src/index.ts';
import { makeAbi, scratchLayout } from '../src/cuda/abi.ts';
import {
  GATHER_MAX_BLOCKS,
  GATHER_PARAMS,
  GATHER_THREADS,
  GatherHeader,
  STATE_META_BYTES,
  STATE_REGION_ALIGN,
  StateMeta,
  gatherLaunch,
  gatherLayout,
  stateRegion,
  freeRingCapacity,
} from '../src/cuda/state-meta.ts';
import { HAVE_NVCC, nvccCompile } from './toolchain.ts';

describe('actor meta layout (state-meta.ts: the one definition the C and the host share)', () => {
  it('StateMeta: 32 bytes, the turn-stored words first, the key after', () => {
    expect(STATE_META_BYTES).toBe(32);
    expect(offsetOf(StateMeta, 'lastActive')).toBe(0);
    expect(offsetOf(StateMeta, 'dirty')).toBe(8);
    expect(offsetOf(StateMeta, 'busy')).toBe(12);
    expect(offsetOf(StateMeta, 'keyLo')).toBe(16);
    expect(offsetOf(StateMeta, 'keyHi')).toBe(20);
    expect(layoutOf(GatherHeader).size).toBeLessThanOrEqual(gatherLayout(32, 1).keysAt);
  });

  it(
    'the meta array starts aligned after the states, then the free-slot ring, and the ABI sizes the states ' +
      'region with both',
    () => {
      // 1,000,000 slots: a 2^20-entry ring (a power of two ≥ maxActors) of u32.
      expect(stateRegion(32, 1_000_000)).toEqual({
        metaAt: 32_000_000,
        freeAt: 64_000_000,
        bytes: 64_000_000 + 4 * 1_048_576,
      });
      expect([1, 2, 3, 1000, 1024, 1025].map(freeRingCapacity)).toEqual([1, 2, 4, 1024, 1024, 2048]);
      const odd = stateRegion(3, 1001);
      expect(odd.metaAt).toBe(3072); // 3003 rounded up to 256
      expect(odd.metaAt % STATE_REGION_ALIGN).toBe(0);
      const abi = makeAbi('Slab', 0, Slab.grain.state, scratchLayout([], []));
      const sizes = abi.sizes({
        maxActors: 1000,
        ringCapacity: 4,
        replyCapacity: 4,
        slotSize: 256,
        partitions: 2,
        queueCapacity: 4,
      });
      expect(sizes.states).toBe(stateRegion(32, 1000).bytes);
      expect(abi.gatherEntry).toBe('rg_Slab_gather_dirty');
      expect(abi.schemas.StateMeta).toBe(StateMeta);
    },
  );

  it('the gather staging buffer: keys, then the packed states, each part aligned', () => {
    const g = gatherLayout(32, 1_000_000);
    expect(g.keysAt).toBe(256);
    expect(g.statesAt).toBe(256 + 8_000_000);
    expect(g.statesAt % STATE_REGION_ALIGN).toBe(0);
    expect(g.flagsAt).toBe(g.statesAt + 32_000_000);
    expect(g.bytes).toBe(g.flagsAt + 1_000_000);
    const t = gatherLayout(3, 5);
    expect(t.statesAt).toBe(512);
    expect(t.flagsAt).toBe(768);
    expect(t.bytes).toBe(768 + 5);
    expect(offsetOf(GatherHeader, 'count')).toBe(0);
    expect(offsetOf(GatherHeader, 'dropped')).toBe(4);
  });

  it('the gather launch covers every slot with a bounded grid (it strides)', () => {
    expect(gatherLaunch(1)).toEqual({ blocks: 1, threadsPerBlock: GATHER_THREADS });
    expect(gatherLaunch(100_000).blocks).toBe(Math.ceil(100_000 / GATHER_THREADS));
    expect(gatherLaunch(100_000_000).blocks).toBe(GATHER_MAX_BLOCKS);
    expect(GATHER_PARAMS.map((p) => p.name)).toEqual(['states', 'globals', 'maxActors', 'out']);
  });

  it(
    'the unit marks after the handler, keys at activation, and has the gather entry with the listed parameters',
    () => {
      const k = generateKernel(Slab.grain);
      const src = k.source;
      const turn = src.slice(src.indexOf('RG_G(turn)('), src.indexOf('RG_G(turn)(') + 6000);
      const handle = turn.indexOf('RG_G(handle)(&t, st, req, rep)');
      expect(turn.indexOf('if (writes && k->metaOn) rg_meta_enter(k->states, k->maxActors, st);')).toBeGreaterThan(0);
      expect(turn.indexOf('if (writes && k->metaOn) rg_meta_enter(k->states, k->maxActors, st);')).toBeLessThan(handle);
      expect(turn.indexOf('if (writes) rg_meta_touch(k->states, k->maxActors, st, now);')).toBeGreaterThan(handle);
      expect(turn.indexOf('else rg_meta_seen(k->states, k->maxActors, st, now);')).toBeGreaterThan(handle);
      expect(src).toContain('rg_meta_activate(k->states, k->maxActors, slot, lo, hi);');
      // The gather entry (runtime/state-meta.cuh: rg_<grain>_gather_dirty) takes the generated parameter list.
      expect(k.grainSource).toContain('#define RG_GRAIN Slab\n');
      expect(src).toContain(
        '#define RG_GATHER_PARAMS \\\n    unsigned char* states, \\\n    const unsigned char* globals, \\\n    ' +
          'unsigned int maxActors, \\\n    unsigned char* out\n',
      );
      expect(src).toContain(
        'extern "C" __global__ void __launch_bounds__(RG_GATHER_THREADS) RG_G(gather_dirty)(RG_GATHER_PARAMS) {',
      );
    },
  );
});

describe.skipIf(!HAVE_NVCC)(
  'the meta and gather C compile with nvcc (warnings as errors, static_asserts included)',
  () => {
    for (const [name, def] of [
      ['Slab (32-byte state: 16-byte copies)', Slab.grain],
      ['Tiny (3-byte state: byte copies)', Tiny.grain],
      ['Account', Account.grain],
    ] as const) {
      it(name, () => {
        const r = nvccCompile(generateKernel(def).source, 'sm_90');
        expect(r.log).toBe('');
        expect(r.ok).toBe(true);
      }, 240_000);
    }

    it('a StateMeta drift is caught by the emitted static_asserts', () => {
      const src = generateKernel(Slab.grain).source.replace(
        'struct rg_StateMeta {\n  double lastActive;\n  unsigned int dirty;',
        'struct rg_StateMeta {\n  unsigned int dirty;\n  double lastActive;',
      );
      expect(src).toContain('unsigned int dirty;\n  double lastActive;');
      const r = nvccCompile(src, 'sm_90');
      expect(r.ok).toBe(false);
      expect(r.log).toContain('rg_StateMeta');
    }, 240_000);
  },
);
