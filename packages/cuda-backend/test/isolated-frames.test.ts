/**
 * The frames of the GPU host's IPC channel (src/isolated/frames.ts): each frame kind passes through the channel's
 * serialization (v8, as fork's 'advanced') and its check unchanged, typed arrays still typed; a malformed frame is a
 * GpuHostProtocolError naming the direction, the op and the field.
 */
import { deserialize, serialize } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { GpuHostProtocolError } from '../src/isolated/errors.ts';
import { readBatch, readFromHost, readToHost } from '../src/isolated/frames.ts';
import type { FromHost, ToHost } from '../src/isolated/protocol.ts';

const across = <T>(m: T): unknown => deserialize(serialize(m));
const options = { slotSize: 256, ringCapacity: 256, replyCapacity: 256, maxActors: 1024, turnBudget: 1 << 20 };
const grain = { module: 'file:///x/grains.ts', name: 'Account' };
const u8 = (n: number, fill = 0): Uint8Array => new Uint8Array(n).fill(fill);
/** A 'load' upload of `keys` in rows of 16 bytes, every row found. */
const up = (keys: number[], extra: Record<string, unknown> = {}) => ({
  keys,
  bytes: u8(16 * keys.length, 7),
  stride: 16,
  found: u8(keys.length, 1),
  mode: 'load' as const,
  ...extra,
});
/** An evicted batch of `keys` in rows of 16 bytes, every row dirty. */
const ev = (keys: number[], extra: Record<string, unknown> = {}) => ({
  keys,
  bytes: u8(16 * keys.length, 1),
  stride: 16,
  dirty: u8(keys.length, 1),
  ...extra,
});
const plan = (extra: Record<string, unknown>) => ({ grainId: 0, grain, grains: [grain, null], options, ...extra });

describe('GPU host frames', () => {
  it('every state frame crosses the channel and its check unchanged', () => {
    const failed = { keys: [9], error: 'down', failure: 4 };
    const persistence = { load: true, idleMs: null };
    const toHost: ToHost[] = [
      { op: 'create', req: 1, id: 3, plan: plan({ timers: { clock: 'host' }, persistence }) },
      { op: 'readDirty', req: 2, id: 3 },
      { op: 'writeStates', req: 3, id: 3, upload: { ...up([1, 2]), found: Uint8Array.of(1, 0), failed } },
      { op: 'writeStates', req: 4, id: 3, upload: { ...up([]), mode: 'preload' } },
      { op: 'deactivateIdle', req: 5, id: 3, before: Number.POSITIVE_INFINITY, now: 12.5 },
    ];
    expect(readToHost(across({ op: 'wake', id: 3 }))).toEqual({ op: 'wake', id: 3 });
    for (const m of toHost) expect(readToHost(across(m))).toEqual(m);
    const code = 'GPU_STATE_BAD_UPLOAD';
    const error = { name: 'GpuStateError', code, message: 'm', hint: undefined, stack: undefined };
    const fromHost: FromHost[] = [
      { op: 'load', id: 3, keys: [1, -2, 2 ** 40] },
      { op: 'evicted', id: 3, batch: ev([1]) },
      { op: 'laneLoaded', id: 3, keys: [5], versions: Float64Array.of(2) },
      { op: 'reply', req: 2, ok: true, value: { keys: [1], bytes: u8(16), stride: 16 } },
      { op: 'reply', req: 3, ok: false, error },
    ];
    for (const m of fromHost) {
      const got = readFromHost(across(m));
      expect(got).toEqual(m);
      if (m.op === 'evicted') expect((got as typeof m).batch.bytes).toBeInstanceOf(Uint8Array);
      if (m.op === 'laneLoaded') expect((got as typeof m).versions).toBeInstanceOf(Float64Array);
    }
    expect(readBatch(across({ keys: [1], bytes: u8(16), stride: 16 })).keys).toEqual([1]);
  });

  it('a malformed frame is a GpuHostProtocolError naming the op and the field', () => {
    const from = (m: unknown) => () => readFromHost(m);
    const to = (m: unknown) => () => readToHost(m);
    const write = (upload: unknown) => to({ op: 'writeStates', req: 1, id: 1, upload });
    const evicted = (batch: unknown) => from({ op: 'evicted', id: 1, batch });
    const create = (extra: Record<string, unknown>) => to({ op: 'create', req: 1, id: 1, plan: plan(extra) });
    const versions = Float64Array.of(1);
    const cases: Array<[() => unknown, RegExp]> = [
      [from(null), /from the GPU host is malformed \(op \?\): a frame must be an object, got null/],
      [from({ op: 7 }), /must name its op, got 7/],
      [from({ op: 'teleport' }), /\(op teleport\): unknown op/],
      [from({ op: 'load', id: 1, keys: [1.5] }), /\(op load\): keys\[0\] must be an integer or string key, got 1\.5/],
      [from({ op: 'load', id: -1, keys: [] }), /\(op load\): id must be a whole number ≥ 0, got number -1/],
      [evicted(ev([1, 2], { bytes: u8(16) })), /batch\.bytes holds 16 bytes, 2 rows of 16 need 32/],
      [evicted(ev([1], { dirty: u8(0) })), /batch\.dirty holds 0 marks for 1 rows/],
      [evicted(ev([1], { bytes: [0, 1] })), /batch\.bytes must be a Uint8Array, got an array/],
      [from({ op: 'laneLoaded', id: 1, keys: [1, 2], versions }), /versions holds 1 versions for 2 keys/],
      [from({ op: 'reply', req: 1, ok: false, error: { message: 'x' } }), /error\.name must be a string, got nothing/],
      [write(up([1], { mode: 'store' })), /to the GPU host is malformed \(op writeStates\): upload\.mode/],
      [write(up([1], { mode: 'store' })), /upload\.mode must be 'load' or 'preload', got string "store"/],
      [write(up([1], { found: u8(0) })), /upload\.found holds 0 flags for 1 rows/],
      [write(up([], { failed: { keys: [2], error: 3 } })), /upload\.failed\.error must be a string, got number 3/],
      [to({ op: 'wake', id: 'x' }), /\(op wake\): id must be a whole number/],
      [to({ op: 'deactivateIdle', req: 1, id: 1, before: Number.NaN, now: 0 }), /before must be a number, got/],
      [create({ persistence: { load: 'yes', idleMs: null } }), /plan\.persistence\.load must be true or false/],
      [create({ options: { ...options, maxActors: '1024' } }), /plan\.options\.maxActors must be a number, got string/],
      [() => readBatch(undefined), /\(op reply readDirty\): the value must be a state batch, got undefined/],
    ];
    for (const [f, re] of cases) {
      let err: unknown;
      try {
        f();
      } catch (e) {
        err = e;
      }
      expect(err, String(re)).toBeInstanceOf(GpuHostProtocolError);
      expect((err as GpuHostProtocolError).code).toBe('GPU_HOST_PROTOCOL');
      expect((err as Error).message).toMatch(re);
    }
  });

  it("the channel's serialization carries a view's own bytes only (a batch's rows need no copy first)", () => {
    const big = Uint8Array.from({ length: 4096 }, (_, i) => i & 0xff);
    const view = big.subarray(16, 48);
    expect(serialize(view).length).toBeLessThan(64); // 32 bytes of rows and a few of framing, not 4096
    const back = deserialize(serialize(view)) as Uint8Array;
    expect(back).toBeInstanceOf(Uint8Array);
    expect([...back]).toEqual([...view]);
  });
});
