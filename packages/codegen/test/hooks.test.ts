import { HOOK_METHOD, Reader, SLOT, decodeExact, layoutOf, viewAt } from '@ringgrain/core/backend';
import { describe, expect, it } from 'vitest';
import { CodegenError, generateKernel } from '../src/index.ts';
import { Harness, HDR } from './harness.ts';
import { ForwardingHook, Hooked, Quiet, ThreeParams } from './fixtures/hooks.ts';
import { Stored } from '../../../test/fixtures/stored.ts';
import { HAVE_GXX, HAVE_NVCC, nvccCompile } from './toolchain.ts';

interface JsSend {
  key: number;
  method: string;
  payload: unknown;
}

/** The hook as the CPU backend runs it: a state view over a copy of `state`, ctx.now() = 1234.5. */
function runJs(
  which: 'onActivate' | 'onDeactivate',
  key: number,
  state: Uint8Array,
): { state: Uint8Array; threw: string | undefined; sent: JsSend[] } {
  const buf = state.slice().buffer;
  const view = viewAt(Hooked.grain.state, buf, 0);
  const sent: JsSend[] = [];
  const ctx = {
    key,
    now: () => 1234.5,
    send: (_g: unknown, k: number, method: string, payload: unknown) => void sent.push({ key: k, method, payload }),
  };
  let threw: string | undefined;
  try {
    (new Hooked() as unknown as Record<string, (s: unknown, c: unknown) => void>)[which]!(view, ctx);
  } catch (e) {
    threw = (e as Error).message;
  }
  return { state: new Uint8Array(buf), threw, sent };
}

const size = layoutOf(Hooked.grain.state).size;
function stateWith(activations: number): Uint8Array {
  const b = new Uint8Array(size);
  const v = viewAt(Hooked.grain.state, b.buffer, 0) as { activations: number; len: number };
  v.activations = activations;
  v.len = activations;
  return b;
}

describe('activation hooks: translated like handlers, (state, ctx)', () => {
  it('the unit defines rg_*_hook with a case per defined hook, and marks the hooks that store into the state', () => {
    const src = generateKernel(Hooked.grain).source;
    expect(src).toContain('#define RG_Hooked_HAS_ON_ACTIVATE 1');
    expect(src).toContain(`case ${HOOK_METHOD.onActivate}u: return rg_hk_Hooked_onActivate(t, s, 0);`);
    expect(src).toContain(`case ${HOOK_METHOD.onDeactivate}u: return rg_hk_Hooked_onDeactivate(t, s, 0);`);
    const writes = src.slice(src.indexOf('rg_Hooked_hook_writes(unsigned int which) {'));
    expect(writes.slice(0, writes.indexOf('default:'))).toContain(`case ${HOOK_METHOD.onActivate}u:`);
    const quiet = generateKernel(Quiet.grain).source;
    expect(quiet).toContain('#define RG_Quiet_HAS_ON_ACTIVATE 0');
    expect(quiet).not.toContain('rg_hk_Quiet_');
  });

  it('refuses a hook with a third parameter and a hook that forwards, with the hook named', () => {
    expect(() => generateKernel(ThreeParams.grain)).toThrow(CodegenError);
    expect(() => generateKernel(ThreeParams.grain)).toThrow(/ThreeParams\.onActivate has 3 parameters/);
    expect(() => generateKernel(ForwardingHook.grain)).toThrow(/ctx\.forward in an activation hook/);
  });

  it.skipIf(!HAVE_GXX)(
    'runs on the host harness as the CPU backend runs the JS hook: state, ctx.key, ctx.now(), sends, a throw',
    () => {
      const h = Harness.build('Hooked', generateKernel(Hooked.grain).source);
      const cases = [
        { which: 'onActivate' as const, key: 7, activations: 0 },
        { which: 'onActivate' as const, key: -42, activations: 2 },
        { which: 'onActivate' as const, key: 9, activations: 3 },
        { which: 'onDeactivate' as const, key: 5, activations: 1 },
      ];
      const got = h.hooks(
        cases.map((c) => ({ which: HOOK_METHOD[c.which], key: c.key, budget: 1000, state: stateWith(c.activations) })),
      );
      const ping = Hooked.grain.methodByName.get('ping')!;
      for (const [i, c] of cases.entries()) {
        const js = runJs(c.which, c.key, stateWith(c.activations));
        const cu = got[i]!;
        expect({ i, rc: cu.rc !== 0, text: cu.error?.text }).toEqual({ i, rc: js.threw !== undefined, text: js.threw });
        // A failed hook leaves what it stored before the throw; here it throws first.
        expect({ i, state: Buffer.from(cu.state).toString('hex') }).toEqual({
          i,
          state: Buffer.from(js.state).toString('hex'),
        });
        expect({ i, sends: cu.sent.length }).toEqual({ i, sends: js.sent.length });
        for (const [j, slot] of cu.sent.entries()) {
          const dv = new DataView(slot.buffer, slot.byteOffset, slot.byteLength);
          const payload = decodeExact(ping.request, new Reader(slot.subarray(HDR)).reset(0, slot.length - HDR));
          expect({
            key: dv.getInt32(SLOT.keyLo, true),
            method: Hooked.grain.methods[dv.getUint32(SLOT.method, true)]?.name,
            payload,
          }).toEqual(js.sent[j]);
        }
      }
      // Hooks the class does not define are no-ops (rc 0, state unchanged).
      const none = Harness.build('Quiet', generateKernel(Quiet.grain).source).hooks([
        { which: HOOK_METHOD.onActivate, key: 1, budget: 10, state: new Uint8Array(layoutOf(Quiet.grain.state).size) },
      ]);
      expect(none.map((r) => [r.rc, Buffer.from(r.state).toString('hex')])).toEqual([[0, '00000000']]);
    },
    120_000,
  );

  it.skipIf(!HAVE_NVCC)(
    'the kernels of classes with hooks compile with nvcc (the hook runs in the turn that activates the actor)',
    () => {
      for (const def of [Hooked.grain, Stored.grain]) {
        const k = generateKernel(def);
        const src = k.source;
        expect(k.grainSource).toContain(`#define RG_${def.name}_HAS_ON_ACTIVATE 1\n`);
        expect(src).toContain('__device__ static __noinline__ void RG_G(on_activate)(');
        const r = nvccCompile(src, 'sm_90');
        expect({ grain: def.name, log: r.log }).toEqual({ grain: def.name, log: '' });
        expect(r.ok).toBe(true);
      }
    },
    480_000,
  );
});
