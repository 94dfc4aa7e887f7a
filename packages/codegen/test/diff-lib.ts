import { HandlerError } from '@ringgrain/core';
import type { GrainDef, StructSchema } from '@ringgrain/core/types';
import {
  MISMATCH,
  Reader,
  SLOT,
  SlotFlag,
  Writer,
  compileEncoder,
  decodeExact,
  joinKey,
  snapshot,
  viewAt,
} from '@ringgrain/core/backend';
import { expect } from 'vitest';
import { TURN_ERRORS, generateKernel } from '../src/index.ts';
import { diff } from './compare.ts';
import { Harness, HDR, cpuErrorPayload, toHex } from './harness.ts';
import { randomState, randomValue, rng, type Ranges } from './random.ts';

/**
 * The differential run of differential.test.ts and audit.test.ts: random inputs through the JS handler and the
 * generated C (g++).
 */
export function encode(schema: StructSchema, value: unknown): Uint8Array {
  const buf = new Uint8Array(1 << 16);
  const w = new Writer(buf).reset(0, buf.length);
  compileEncoder(schema)(value, w);
  return buf.slice(0, w.pos);
}
/**
 * The host encoding of a handler's reply, or undefined where the host refuses it (a value out of its field's range).
 */
function encodeReply(schema: StructSchema, value: unknown): Uint8Array | undefined {
  try {
    return encode(schema, value);
  } catch (e) {
    if (e === MISMATCH) return undefined;
    throw e;
  }
}
function decode(schema: StructSchema, bytes: Uint8Array): unknown {
  return decodeExact(schema, new Reader(bytes).reset(0, bytes.length));
}

interface Sent {
  grain: string;
  key: number | string;
  method: string;
  payload: unknown;
  forward: boolean;
}

/** Runs the JS handler the CPU backend runs: state view over bytes, message from the host decoder. */
export function runJs(
  cls: any,
  def: GrainDef,
  method: string,
  key: number | string,
  state: Uint8Array,
  payload: Uint8Array,
  opts: { cpuK2K?: boolean | undefined } = {},
) {
  const m = def.methodByName.get(method)!;
  const buf = state.slice().buffer;
  const view = viewAt(def.state, buf, 0);
  const msg = decode(m.request, payload);
  const sent: Sent[] = [];
  const FORWARDED = { __forwarded: true };
  // opts.cpuK2K: the sends fail as cpu-backend's k2kSend fails them (see cpuK2KCheck).
  const check = opts.cpuK2K ? cpuK2KCheck : (_g: GrainDef, _k: number, _n: string, p: unknown) => p;
  const ctx = {
    key,
    now: () => 1234.5,
    send: (g: any, k: number, name: string, p: unknown) =>
      void sent.push({
        grain: g.grain.name,
        key: k,
        method: name,
        payload: check(g.grain, k, name, p),
        forward: false,
      }),
    forward: (g: any, k: number, name: string, p: unknown) => (
      sent.push({ grain: g.grain.name, key: k, method: name, payload: check(g.grain, k, name, p), forward: true }),
      FORWARDED
    ),
  };
  let out: unknown;
  let threw: string | undefined;
  let k2kError: K2KFailure | undefined;
  try {
    out = new cls()[method](view, msg, ctx);
  } catch (e) {
    // What the CPU backend sends back for a throwing handler: e.message (state written before it stays).
    if (e instanceof K2KFailure) k2kError = e;
    else threw = (e as Error).message;
  }
  return { state: new Uint8Array(buf), reply: out === FORWARDED ? 'forwarded' : out, sent, threw, k2kError };
}

/**
 * A K2K send the CPU backend refuses (cpu-backend dispatcher k2kSend: the key is checked first, a safe
 * integer for an int-keyed target, then the payload is encoded): the handler throws there, and the
 * translation fails the turn with the typed error `code`.
 */
export class K2KFailure extends Error {
  constructor(readonly code: 'INVALID_KEY' | 'REPLY_MISMATCH', detail: string) {
    super(detail);
  }
}
/**
 * Returns the payload as encoded at the send (as the CPU backend does): later stores into the state views it names do
 * not change it.
 */
function cpuK2KCheck(target: GrainDef, key: number | string, method: string, payload: unknown): unknown {
  if (typeof key === 'number' && (target.keyKind === 'string' || !Number.isSafeInteger(key)))
    throw new K2KFailure('INVALID_KEY', `send to grain "${target.name}" failed: invalid key ${key}`);
  const schema = target.methodByName.get(method)!.request;
  const bytes = encodeReply(schema, payload);
  if (bytes === undefined)
    throw new K2KFailure('REPLY_MISMATCH', `${target.name}.${method}: payload does not match its schema`);
  return decode(schema, bytes);
}

export interface Case {
  readonly method: string;
  readonly ranges: Ranges;
  readonly tweak?: (msg: any) => void;
  /** The message itself, instead of a random value of the request schema (for schemas with very long vecs). */
  readonly make?: (r: () => number) => unknown;
  /** The actor's key (an int-keyed class), instead of a random one in ±5e5. */
  readonly key?: (r: () => number) => number;
}

/** A string key as JS sees it, for the interned id the kernel sees (ids are per grain class). */
const stringKeyOf = (id: number): string => `key-${id}`;

/**
 * `coop`: the C runs its element-parallel loops on an emulated warp (harness.ts RG_HOST_COOP); `posts` counts
 * them. `lanes`: the C runs the turns 32 at a time on threads, as lane-parallel turns (harness.ts).
 */
export function differential(
  cls: any,
  grains: GrainDef[],
  cases: readonly Case[],
  n: number,
  seed: number,
  opts: { coop?: boolean; lanes?: boolean; cpuK2K?: boolean } = {},
) {
  const def = cls.grain as GrainDef;
  const unit = generateKernel(def, { grains }).source;
  const h = Harness.build(def.name, unit, opts);
  const r = rng(seed);
  const inputs = [];
  for (let i = 0; i < n; i++) {
    const c = cases[i % cases.length]!;
    const m = def.methodByName.get(c.method)!;
    const msg = (c.make ? c.make(r) : randomValue(m.request, r, c.ranges)) as any;
    c.tweak?.(msg);
    const key = def.keyKind === 'string' ? Math.floor(r() * 1e6) : c.key ? c.key(r) : Math.floor(r() * 1e6) - 5e5;
    inputs.push({ c, m, key, state: randomState(def.state, r, c.ranges), payload: encode(m.request, msg) });
  }
  const { results, posts, rounds } = h.turnsPosted(
    inputs.map((x) => ({ method: x.m.id, key: x.key, budget: 100000, state: x.state, payload: x.payload })),
  );
  let exactReplies = 0;
  let replies = 0;
  let mismatches = 0;
  let sends = 0;
  let throws = 0;
  let k2kErrors = 0;
  inputs.forEach((x, i) => {
    const got = results[i]!;
    if (got === 'REJECT') throw new Error(`C rejected a host-encoded payload for ${x.m.name}`);
    const js = runJs(cls, def, x.m.name, def.keyKind === 'string' ? stringKeyOf(x.key) : x.key, x.state, x.payload, {
      cpuK2K: opts.cpuK2K,
    });
    const where = `${def.name}.${x.m.name} input #${i}`;
    expect(
      diff(def.state, snapshot(def.state, got.state.slice().buffer, 0), snapshot(def.state, js.state.buffer, 0)),
      `${where} state`,
    ).toEqual([]);
    if (js.threw !== undefined) {
      // JS handler throws ⇔ the unit fails the turn with RG_E_THROW, and the error reply's payload is
      // byte-identical to the CPU backend's, so the host builds the same HandlerError.
      expect(got.rc, `${where} (JS threw "${js.threw}")`).toBe(TURN_ERRORS.THROW);
      expect(got.error?.text, where).toBe(js.threw);
      expect(toHex(got.error!.payload), where).toBe(toHex(cpuErrorPayload(js.threw)));
      expect(new HandlerError(def.name, x.m.name, got.error!.text).message).toBe(
        new HandlerError(def.name, x.m.name, js.threw).message,
      );
      throws++;
    } else if (js.k2kError) {
      // opts.cpuK2K: a send the CPU backend refuses (the handler throws there) ⇔ the unit's typed turn error.
      expect(got.rc, `${where} (JS send failed: ${js.k2kError.message})`).toBe(TURN_ERRORS[js.k2kError.code]);
      k2kErrors++;
    } else if (js.reply === 'forwarded') expect(got.rc, where).toBe(1);
    else if (x.m.reply && encodeReply(x.m.reply, js.reply) === undefined) {
      // The CPU backend answers "reply does not match its schema"; the unit fails the turn the same way.
      expect(got.rc, where).toBe(TURN_ERRORS.REPLY_MISMATCH);
      mismatches++;
    } else {
      expect(got.rc, where).toBe(0);
      if (x.m.reply) {
        const jsBytes = encode(x.m.reply, js.reply);
        replies++;
        if (Buffer.from(jsBytes).equals(Buffer.from(got.reply!))) exactReplies++;
        expect(diff(x.m.reply, decode(x.m.reply, got.reply!), decode(x.m.reply, jsBytes)), `${where} reply`).toEqual(
          [],
        );
      } else expect(Buffer.from(got.reply!).toString('hex')).toBe('a0');
    }
    expect(got.sent.length, `${where} K2K count`).toBe(js.sent.length);
    got.sent.forEach((slot, j) => {
      const dv = new DataView(slot.buffer, slot.byteOffset, slot.byteLength);
      const want = js.sent[j]!;
      const target = grains.find((g) => g.name === want.grain)!;
      const tm = target.methodByName.get(want.method)!;
      expect(dv.getUint32(SLOT.grain, true)).toBe(grains.indexOf(target));
      expect(dv.getUint32(SLOT.method, true)).toBe(tm.id);
      if (target.keyKind === 'string') {
        // The interned id of the sender's own key (the only string-keyed K2K the GPU translates), keyHi 0.
        expect(stringKeyOf(dv.getUint32(SLOT.keyLo, true))).toBe(want.key);
        expect(dv.getUint32(SLOT.keyHi, true)).toBe(0);
      } else
        // a key of -0 travels as 0, on the CPU backend too
        expect(joinKey(dv.getUint32(SLOT.keyLo, true), dv.getUint32(SLOT.keyHi, true))).toBe((want.key as number) + 0);
      expect(dv.getUint32(SLOT.flags, true)).toBe(
        (want.forward ? SlotFlag.ASK : 0) | (target.keyKind === 'string' ? SlotFlag.STRING_KEY : 0),
      );
      expect(dv.getUint32(SLOT.corr, true)).toBe(want.forward ? 7 : 0);
      expect(dv.getUint32(SLOT.sender, true)).toBe(0);
      const len = dv.getUint32(SLOT.length, true);
      expect(len).toBe(slot.length - HDR);
      // The K2K payload is byte-identical to what the host encoder writes for the JS handler's payload.
      expect(Buffer.from(slot.subarray(HDR)).toString('hex')).toBe(
        Buffer.from(encode(tm.request, want.payload)).toString('hex'),
      );
      sends++;
    });
  });
  return { replies, exactReplies, mismatches, sends, throws, k2kErrors, results, inputs, posts, rounds };
}

