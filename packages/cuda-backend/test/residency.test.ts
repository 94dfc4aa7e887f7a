import { describe, expect, it } from 'vitest';
import {
  INSTALL_ERROR_BYTES, LOAD_RING_CAPACITY, RES_MODE, RES_OP, RES_ROW, ResidencyGlobals, ResidencyHostBlock, evictRing, residencyHostBytes, residencyLayout,
} from '@ringgrain/codegen';
import {
  layoutOf,
  offsetOf,
  type ActorKey,
  type EvictedStates,
  type KernelStateHost,
  type StateUpload,
} from '@ringgrain/core/backend';
import { ResidencyHost, clippedUtf8, installChunks, keyWords, residencyExit, residencyGlobalsImage, type ResidencyDevice, type ResidencyTarget } from '../src/residency.ts';
import { GpuStateError } from '../src/errors.ts';

/**
 * The host half of actor residency on a CUDA kernel (residency.ts), driven through a stand-in for the
 * driver calls whose `pause` plays the kernel's side of the protocol on the same bytes (the device area
 * and the pinned host block, as codegen residency.ts lays them out): it answers a request by writing the
 * counts and doneSeq, stages deactivated rows where the kernel's workers will, and reads install boards
 * as they will. What this checks is the host's side: request words, the board images, reading exactly
 * `count` staged rows, the load ring's consumer, typed failures.
 */
const T: ResidencyTarget = { grain: 'Acc', stateSize: 8, maxActors: 16, partitions: 4 };
const L = residencyLayout(T);
const HB = residencyHostBytes();
const hoff = (f: string) => offsetOf(ResidencyHostBlock, f);

class Recorder implements KernelStateHost {
  loads: ActorKey[][] = [];
  evictions: EvictedStates[] = [];
  load(keys: readonly ActorKey[]): void {
    this.loads.push([...keys]);
  }
  evicted(b: EvictedStates): void {
    this.evictions.push(b);
  }
  laneLoaded(): void {}
}

class Kernel implements ResidencyDevice {
  readonly area = new Uint8Array(L.bytes);
  readonly hostMem = new ArrayBuffer(HB.bytes + 64);
  readonly hostAt = 64; // not at 0: the host block is found by its offset
  readonly hv = new DataView(this.hostMem, this.hostAt);
  readonly av = new DataView(this.area.buffer);
  /** Rows the next deactivation stages: key, state byte, dirty. */
  stage: Array<{ key: number; fill: number; dirty: boolean }> = [];
  installs: Array<{ mode: number; rows: Array<{ key: number; kind: number; state: number[] }>; error: string }> = [];
  dead: Error | undefined;
  silent = false;
  pauses = 0;
  /** Called while the kernel services a deactivation (a worker posting a load meanwhile). */
  during: (() => void) | undefined;

  copyIn(src: Uint8Array, offset: number): void {
    this.area.set(src, offset);
  }
  copyOut(dst: Uint8Array, offset: number): void {
    dst.set(this.area.subarray(offset, offset + dst.byteLength));
  }
  sync(): void {}
  fault(): Error | undefined {
    return this.dead;
  }
  /** The attempt number of every wait, in order (each request's count starts at 0). */
  attempts: number[] = [];
  async pause(attempt: number): Promise<void> {
    this.pauses++;
    this.attempts.push(attempt);
    await new Promise((r) => setImmediate(r));
    if (this.silent) return;
    const seq = this.hv.getUint32(hoff('seq'), true);
    if (seq === this.hv.getUint32(hoff('doneSeq'), true)) return;
    const op = this.hv.getUint32(hoff('op'), true);
    if (op === RES_OP.DEACTIVATE) {
      this.during?.();
      if (this.silent) return; // the kernel went away meanwhile
      const s = L.staging;
      this.stage.forEach((r, i) => {
        const [lo, hi] = keyWords(r.key);
        this.av.setUint32(L.stagingAt + s.keysAt + 8 * i, lo, true);
        this.av.setInt32(L.stagingAt + s.keysAt + 8 * i + 4, hi, true);
        this.area.fill(r.fill, L.stagingAt + s.statesAt + i * T.stateSize, L.stagingAt + s.statesAt + (i + 1) * T.stateSize);
        this.area[L.stagingAt + s.flagsAt + i] = r.dirty ? 1 : 0;
      });
      this.hv.setUint32(hoff('evicted'), this.stage.length, true);
    } else if (op === RES_OP.INSTALL) {
      const n = this.hv.getUint32(hoff('rows'), true);
      const b = L.boardAt;
      const rows = Array.from({ length: n }, (_, i) => ({
        key: this.av.getInt32(b + L.board.keysAt + 8 * i + 4, true) * 2 ** 32 + this.av.getUint32(b + L.board.keysAt + 8 * i, true),
        kind: this.area[b + L.board.kindsAt + i]!,
        state: [...this.area.subarray(b + L.board.statesAt + i * T.stateSize, b + L.board.statesAt + (i + 1) * T.stateSize)],
      }));
      const len = this.hv.getUint32(hoff('errorLength'), true);
      const error = new TextDecoder().decode(this.area.subarray(b + L.board.errorAt, b + L.board.errorAt + len));
      this.installs.push({ mode: this.hv.getUint32(hoff('mode'), true), rows, error });
    }
    this.hv.setUint32(hoff('doneSeq'), seq, true);
  }
  /** A worker posts an actor it deactivated to make room (reserve index i: key, mark, state, then seq = i + 1). */
  evict(i: number, key: number, fill: number, dirty: boolean): void {
    const ring = evictRing(T.stateSize);
    const at = this.hostAt + HB.evictAt + ring.stride * (i % ring.capacity);
    const dv = new DataView(this.hostMem, at);
    const [lo, hi] = keyWords(key);
    dv.setUint32(4, lo, true);
    dv.setInt32(8, hi, true);
    dv.setUint32(12, dirty ? 1 : 0, true);
    new Uint8Array(this.hostMem, at + 16, T.stateSize).fill(fill);
    dv.setUint32(0, (i + 1) >>> 0, true);
  }
  /** A worker posts a load request (reserve index i: key words, then seq = i + 1). */
  post(i: number, key: number): void {
    const at = this.hostAt + HB.ringAt + 16 * (i % LOAD_RING_CAPACITY);
    const dv = new DataView(this.hostMem, at);
    const [lo, hi] = keyWords(key);
    dv.setUint32(4, lo, true);
    dv.setInt32(8, hi, true);
    dv.setUint32(0, (i + 1) >>> 0, true);
  }
}

function make(over: { timeoutMs?: number } = {}) {
  const k = new Kernel();
  const rec = new Recorder();
  const staging = new Uint8Array(L.staging.bytes);
  const r = new ResidencyHost(T, k, k.hostMem, k.hostAt, staging, rec, { timeoutMs: over.timeoutMs ?? 5000 });
  r.init();
  return { k, rec, r };
}

const upload = (keys: number[], found: number[], fill: (i: number) => number, extra: Partial<StateUpload> = {}): StateUpload => {
  const bytes = new Uint8Array(keys.length * T.stateSize);
  keys.forEach((_, i) => bytes.fill(fill(i), i * T.stateSize, (i + 1) * T.stateSize));
  return { keys, bytes, stride: T.stateSize, found: Uint8Array.from(found), mode: 'load', ...extra };
};

describe('residency host (deactivateIdle, writeStates, load requests) against a stand-in kernel', () => {
  it('key words are the int64 halves the kernel holds', () => {
    expect(keyWords(0)).toEqual([0, 0]);
    expect(keyWords(-1)).toEqual([0xffffffff, -1]);
    expect(keyWords(2 ** 32 + 5)).toEqual([5, 1]);
    expect(keyWords(-(2 ** 53) + 1)).toEqual([1, -2097152]);
    expect(keyWords(Number.MAX_SAFE_INTEGER)).toEqual([0xffffffff, 0x1fffff]);
  });

  it('globals image: the device addresses of the parts and the board offsets', () => {
    const img = residencyGlobalsImage(T, 0x1_2345_6700n, 0x7_0000_0000n);
    const dv = new DataView(img.buffer);
    const u = (f: string) => dv.getUint32(offsetOf(ResidencyGlobals, f), true);
    expect(img.length).toBe(layoutOf(ResidencyGlobals).size);
    expect([u('hostLo'), u('hostHi')]).toEqual([0x2345_6700, 1]);
    expect(u('acksLo') + u('acksHi') * 2 ** 32).toBe(0x7_0000_0000 + L.acksAt);
    expect(u('stagingLo') + u('stagingHi') * 2 ** 32).toBe(0x7_0000_0000 + L.stagingAt);
    expect(u('boardLo') + u('boardHi') * 2 ** 32).toBe(0x7_0000_0000 + L.boardAt);
    expect(u('parksLo') + u('parksHi') * 2 ** 32).toBe(0x7_0000_0000 + L.parksAt);
    expect([u('boardKindsAt'), u('boardStatesAt'), u('boardErrorAt'), u('installCapacity'), u('loadCapacity')]).toEqual([L.board.kindsAt, L.board.statesAt, L.board.errorAt, L.installCapacity, LOAD_RING_CAPACITY]);
    expect(u('roomsLo') + u('roomsHi') * 2 ** 32).toBe(0x7_0000_0000 + L.roomsAt);
    expect([u('evictCapacity'), u('evictStride')]).toEqual([evictRing(T.stateSize).capacity, evictRing(T.stateSize).stride]);
    // No idleMs: Infinity (a full table makes no room); the class's idleMs when it has one.
    expect(dv.getFloat64(offsetOf(ResidencyGlobals, 'idleMs'), true)).toBe(Number.POSITIVE_INFINITY);
    expect(new DataView(residencyGlobalsImage({ ...T, idleMs: 1500 }, 0n, 0n).buffer).getFloat64(offsetOf(ResidencyGlobals, 'idleMs'), true)).toBe(1500);
    // The request and counter lines start zero: the kernel sees no request before the host's first.
    expect(img.subarray(0, 256).every((b) => b === 0)).toBe(true);
  });

  it('deactivateIdle: the request words, then exactly the staged rows to evicted, dirty marks included', async () => {
    const { k, rec, r } = make();
    k.stage = [
      { key: 7, fill: 1, dirty: true },
      { key: -3, fill: 2, dirty: false },
      { key: 2 ** 40, fill: 3, dirty: true },
    ];
    expect(await r.deactivateIdle(1000, 2000)).toBe(3);
    expect(k.hv.getUint32(hoff('op'), true)).toBe(RES_OP.DEACTIVATE);
    expect(k.hv.getFloat64(hoff('before'), true)).toBe(1000);
    expect(k.hv.getFloat64(hoff('now'), true)).toBe(2000);
    expect(rec.evictions).toHaveLength(1);
    const e = rec.evictions[0]!;
    expect(e.keys).toEqual([7, -3, 2 ** 40]);
    expect([...e.dirty]).toEqual([1, 0, 1]);
    expect(e.stride).toBe(8);
    expect([...e.bytes]).toEqual([...Array(8).fill(1), ...Array(8).fill(2), ...Array(8).fill(3)]);
    // A batch of its own: the next deactivation does not write into it.
    k.stage = [{ key: 9, fill: 4, dirty: true }];
    expect(await r.deactivateIdle(Infinity, 3000)).toBe(1);
    expect(e.bytes[0]).toBe(1);
    expect(k.hv.getFloat64(hoff('before'), true)).toBe(Infinity);
    // Nothing idle: no evicted call.
    k.stage = [];
    expect(await r.deactivateIdle(0, 4000)).toBe(0);
    expect(rec.evictions).toHaveLength(2);
    expect(k.hv.getUint32(hoff('seq'), true)).toBe(3);
  });

  it('writeStates: board images in capacity-sized parts, found / absent / failed rows, the clipped error text', async () => {
    const { k, r } = make();
    const n = L.installCapacity + 3; // two installs
    const keys = Array.from({ length: n }, (_, i) => i * 3 - 5);
    await r.writeStates(upload(keys, keys.map((_, i) => i % 2), (i) => i & 0xff, { failed: { keys: [100, 101], error: 'store said no' } }));
    expect(k.installs).toHaveLength(2);
    expect(k.installs[0]!.rows).toHaveLength(L.installCapacity);
    expect(k.installs[1]!.rows.map((x) => x.key)).toEqual([...keys.slice(L.installCapacity), 100, 101]);
    const all = [...k.installs[0]!.rows, ...k.installs[1]!.rows];
    keys.forEach((key, i) => {
      expect(all[i]!.key).toBe(key);
      expect(all[i]!.kind).toBe(i % 2 ? RES_ROW.FOUND : RES_ROW.ABSENT);
      if (i % 2) expect(all[i]!.state).toEqual(Array(8).fill(i & 0xff));
    });
    expect(all.slice(-2).map((x) => x.kind)).toEqual([RES_ROW.FAILED, RES_ROW.FAILED]);
    expect(k.installs.every((x) => x.mode === RES_MODE.LOAD && x.error === 'store said no')).toBe(true);
    await r.writeStates({ ...upload([1], [1], () => 9), mode: 'preload' });
    expect(k.installs[2]!.mode).toBe(RES_MODE.PRELOAD);
    expect(k.installs[2]!.error).toBe('');
    expect(clippedUtf8('é'.repeat(INSTALL_ERROR_BYTES), INSTALL_ERROR_BYTES).length).toBe(INSTALL_ERROR_BYTES);
    expect(clippedUtf8('a' + 'é'.repeat(INSTALL_ERROR_BYTES), INSTALL_ERROR_BYTES).length).toBe(INSTALL_ERROR_BYTES - 1);
  });

  it('bad uploads are typed errors before anything reaches the kernel', () => {
    const bad = (u: StateUpload) => () => installChunks(u, 8, 4, 'Acc');
    expect(bad({ ...upload([1], [1], () => 0), stride: 4 })).toThrow(GpuStateError);
    expect(bad({ ...upload([1, 2], [1, 1], () => 0), bytes: new Uint8Array(8) })).toThrow(/2 keys with 8 state bytes/);
    expect(bad(upload([1.5], [1], () => 0))).toThrow(/not a safe integer/);
    expect(bad({ ...upload([], [], () => 0), keys: ['a'] as unknown as number[], bytes: new Uint8Array(8), found: Uint8Array.of(0) })).toThrow(/"a" is not a safe integer/);
    try {
      bad(upload([2 ** 53], [1], () => 0))();
    } catch (e) {
      expect((e as GpuStateError).code).toBe('GPU_STATE_BAD_UPLOAD');
    }
  });

  it('a key posted for loading while a deactivation runs reaches load only after that deactivation\'s evicted (its final state first)', async () => {
    const { k, rec, r } = make();
    const order: string[] = [];
    const host = rec as Recorder;
    const load0 = host.load.bind(host);
    const ev0 = host.evicted.bind(host);
    host.load = (keys) => { order.push(`load ${keys.join(',')}`); load0(keys); };
    host.evicted = (b) => { order.push(`evicted ${b.keys.join(',')}`); ev0(b); };
    k.post(0, 3); // posted before: goes out at once
    expect(r.pollLoads()).toBe(1);
    k.stage = [{ key: 7, fill: 1, dirty: true }];
    k.during = () => {
      k.post(1, 7); // 7 was deactivated and a message for it came in at once
      expect(r.pollLoads()).toBe(1); // drained (no worker waits on the ring), not delivered
    };
    expect(await r.deactivateIdle(5, 5)).toBe(1);
    expect(order).toEqual(['load 3', 'evicted 7', 'load 7']);
    // A deactivation that failed still lets the held keys through.
    k.during = () => {
      k.post(2, 8);
      r.pollLoads();
      k.dead = new Error('gone');
      k.silent = true;
    };
    const p = r.deactivateIdle(6, 6);
    await expect(p).rejects.toThrow(GpuStateError);
    expect(order.at(-1)).toBe('load 8');
  });

  it('requests run one at a time, in call order', async () => {
    const { k, r } = make();
    k.stage = [{ key: 1, fill: 1, dirty: true }];
    const order: string[] = [];
    const a = r.deactivateIdle(10, 10).then(() => order.push('a'));
    const b = r.writeStates(upload([5], [1], () => 5)).then(() => order.push('b'));
    const c = r.deactivateIdle(20, 20).then(() => order.push('c'));
    await Promise.all([a, b, c]);
    expect(order).toEqual(['a', 'b', 'c']);
    expect(k.hv.getUint32(hoff('seq'), true)).toBe(3);
  });

  it('load uploads queued behind a request install as one, in call order; a request queued between keeps them ' +
    'apart', async () => {
    const { k, r } = make();
    k.stage = [];
    const order: string[] = [];
    const a = r.deactivateIdle(1, 1).then(() => order.push('a'));
    const b = r.writeStates(upload([5, 6], [1, 0], (i) => 50 + i)).then(() => order.push('b'));
    const c = r.writeStates(upload([7], [1], () => 70)).then(() => order.push('c'));
    const failed = { keys: [9], error: 'no', failure: 3 };
    const d = r.writeStates(upload([], [], () => 0, { failed })).then(() => order.push('d')); // never joins
    const e = r.writeStates(upload([8], [1], () => 80)).then(() => order.push('e'));
    const f = r.deactivateIdle(2, 2).then(() => order.push('f'));
    const g = r.writeStates(upload([10], [1], () => 100)).then(() => order.push('g'));
    const bad = r.writeStates({ ...upload([11], [1], () => 1), stride: 4 }); // fails alone, typed
    const h = r.writeStates(upload([12], [1], () => 120)).then(() => order.push('h'));
    await expect(bad).rejects.toMatchObject({ code: 'GPU_STATE_BAD_UPLOAD' });
    await Promise.all([a, b, c, d, e, f, g, h]);
    expect(order).toEqual(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']);
    // b and c as one install (rows in call order, kinds and states kept), then d, e, f's deactivation, g, h.
    expect(k.installs.map((i) => i.rows.map((row) => row.key))).toEqual([[5, 6, 7], [9], [8], [10], [12]]);
    expect(k.installs[0]!.rows.map((row) => [row.kind, row.state[0]])).toEqual([
      [RES_ROW.FOUND, 50],
      [RES_ROW.ABSENT, 51],
      [RES_ROW.FOUND, 70],
    ]);
    expect(k.installs[1]!.rows[0]!.kind).toBe(RES_ROW.FAILED);
    expect(k.hv.getUint32(hoff('seq'), true)).toBe(7);
  });

  it('a kernel that faults or never answers fails the request with a typed error, and the next request still runs', async () => {
    const { k, r } = make({ timeoutMs: 30 });
    k.silent = true;
    await expect(r.deactivateIdle(1, 1)).rejects.toThrow(/did not answer a deactivation within 30 ms/);
    k.dead = new Error('illegal address');
    await expect(r.writeStates(upload([1], [0], () => 0))).rejects.toMatchObject({ code: 'GPU_STATE_UNAVAILABLE', cause: k.dead });
    k.dead = undefined;
    k.silent = false;
    k.stage = [];
    expect(await r.deactivateIdle(1, 1)).toBe(0);
  });

  it('a kernel freed while a request waits: it fails typed, nothing reads the freed host block again', async () => {
    const { k, rec, r } = make();
    k.silent = true;
    const pending = r.deactivateIdle(1, 1);
    const install = r.writeStates(upload([1], [0], () => 0)); // queued behind it
    while (k.pauses < 2) await new Promise((res) => setImmediate(res));
    // Freed pinned memory faults the process when read: a detached buffer throws instead.
    structuredClone(k.hostMem, { transfer: [k.hostMem] });
    r.close();
    const gone = (what: string) => ({
      code: 'GPU_STATE_UNAVAILABLE',
      message: expect.stringMatching(`disposed during a ${what}`),
    });
    await expect(pending).rejects.toMatchObject(gone('deactivation'));
    await expect(install).rejects.toMatchObject(gone('state install'));
    expect(r.pollLoads()).toBe(0);
    expect(r.drainEvicted()).toBe(0);
    expect(rec.loads).toHaveLength(0);
  });

  it('load requests: each key once, in the order posted, across the ring wrap; none posted: no call', () => {
    const { k, rec, r } = make();
    expect(r.pollLoads()).toBe(0);
    expect(rec.loads).toHaveLength(0);
    // Start near the end of the ring: move the consumer there as if that many had been read.
    const start = LOAD_RING_CAPACITY - 2;
    k.hv.setUint32(hoff('loadTail'), start, true);
    const keys = [11, -12, 2 ** 45, 0, 7];
    keys.forEach((key, i) => k.post(start + i, key));
    expect(r.pollLoads()).toBe(5);
    expect(rec.loads).toEqual([keys]);
    expect(k.hv.getUint32(hoff('loadTail'), true)).toBe(start + 5);
    expect(r.pollLoads()).toBe(0);
    // A slot whose seq is not yet published stops the drain there.
    k.post(start + 6, 99); // index start + 5 not published
    expect(r.pollLoads()).toBe(0);
    k.post(start + 5, 98);
    expect(r.pollLoads()).toBe(2);
    expect(rec.loads[1]).toEqual([98, 99]);
  });
});

describe('waiting for the kernel', () => {
  it('counts the waits per request (the backend polls at once again for each new request, not only after a deactivation)', async () => {
    const { k, r } = make();
    let slow = 3;
    const pause = k.pause.bind(k);
    // The kernel answers the first install only at its fourth look, the next ones at once.
    k.pause = async (attempt: number) => {
      if (slow-- > 0) {
        k.attempts.push(attempt);
        await new Promise((res) => setImmediate(res));
        return;
      }
      return pause(attempt);
    };
    await r.writeStates(upload([1], [1], () => 1));
    await r.writeStates(upload([2], [1], () => 2));
    await r.writeStates(upload([3], [1], () => 3));
    expect(k.attempts).toEqual([0, 1, 2, 3, 0, 0]);
  });
});

describe('the evict ring (actors deactivated to make room for a new key)', () => {
  it('published rows go to evicted in order, one batch per poll (keys, final states, marks), the tail moves past them; an unpublished row waits', () => {
    const { k, rec, r } = make();
    const cap = evictRing(T.stateSize).capacity;
    expect(r.pollLoads()).toBe(0);
    expect(rec.evictions).toEqual([]);
    k.evict(0, 5, 0x11, true);
    k.evict(1, -3, 0x22, false);
    k.evict(3, 9, 0x33, true); // index 2 not yet published: 3 waits behind it
    r.pollLoads();
    expect(rec.evictions).toHaveLength(1);
    const b = rec.evictions[0]!;
    expect([...b.keys]).toEqual([5, -3]);
    expect([...b.dirty]).toEqual([1, 0]);
    expect(b.stride).toBe(T.stateSize);
    expect([...b.bytes]).toEqual([...new Array(8).fill(0x11), ...new Array(8).fill(0x22)]);
    expect(k.hv.getUint32(hoff('evictTail'), true)).toBe(2);
    k.evict(2, 7, 0x44, true);
    expect(r.drainEvicted()).toBe(2);
    expect([...rec.evictions[1]!.keys]).toEqual([7, 9]);
    // Across the wrap: the ring's capacity rows further on, the same slots.
    for (let i = 4; i < 4 + cap; i++) k.evict(i, 1000 + i, i & 0xff, i % 2 === 0);
    expect(r.drainEvicted()).toBe(cap);
    expect(rec.evictions[2]!.keys.length).toBe(cap);
    expect(rec.evictions[2]!.keys[cap - 1]).toBe(1000 + 3 + cap);
    expect(r.drainEvicted()).toBe(0);
  });

  it('a key deactivated to make room and missed again reaches evicted before load (its final state first)', () => {
    const { k, rec, r } = make();
    const order: string[] = [];
    rec.evicted = (b) => void order.push(`evicted ${b.keys.join(',')}`);
    rec.load = (keys) => void order.push(`load ${keys.join(',')}`);
    k.evict(0, 42, 1, true);
    k.post(0, 42);
    r.pollLoads();
    expect(order).toEqual(['evicted 42', 'load 42']);
  });

  it('a deactivation request hands rows deactivated to make room meanwhile before its own staged batch', async () => {
    const { k, rec, r } = make();
    k.stage = [{ key: 8, fill: 3, dirty: true }];
    k.during = () => k.evict(0, 6, 9, true);
    expect(await r.deactivateIdle(10, 20)).toBe(1);
    expect(rec.evictions.map((b) => [...b.keys])).toEqual([[6], [8]]);
  });
});

describe('residency exit', () => {
  it('an exit request is the next request number, op EXIT, on the same block', async () => {
    const { k, r } = make();
    k.stage = [];
    await r.deactivateIdle(1, 1);
    residencyExit(k.hostMem, k.hostAt);
    expect(k.hv.getUint32(hoff('seq'), true)).toBe(2);
    expect(k.hv.getUint32(hoff('op'), true)).toBe(RES_OP.EXIT);
  });
});
