/**
 * IsolatedCudaBackend's state access without a GPU: the application side (isolated-backend.ts), the real IPC channel
 * and the GPU host's frame loop (host-loop.ts), with a stand-in for the CUDA kernel's residency in the host process
 * (fixtures/stand-in-gpu-host.ts). What crosses: the plan's persistence, keys the kernel posts for loading (to the
 * plan's load), installs ('load' with found, absent and failed keys, 'preload'), dirty reads, deactivations (rows to
 * the plan's evicted before the request answers), the kernel's errors typed, and a malformed frame refused whole.
 * The GPU lane (test/conformance, cuda-isolated) runs the same paths against the real kernel.
 */
import {
  DEFAULT_KERNEL_OPTIONS,
  layoutOf,
  type ActorKey,
  type EvictedStates,
  type KernelPlan,
  type StateUpload,
} from '@ringgrain/core/backend';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import { GpuStateError, IsolatedCudaBackend } from '../src/index.ts';
import { GpuHostProtocolError } from '../src/isolated/errors.ts';
import { INTERNALS } from '../src/internals.ts';
import { WAKE_EVERY_MS } from '../src/isolated/protocol.ts';

const STAND_IN = new URL('./fixtures/stand-in-gpu-host.mjs', import.meta.url);
const stride = layoutOf(Account.grain.state).size;
const backends: IsolatedCudaBackend[] = [];
afterAll(async () => {
  for (const b of backends.splice(0)) await b.dispose();
});

/** One GPU host for the tests that leave it running (each starts a process: seconds on a loaded machine). */
let sharedHost: IsolatedCudaBackend | undefined;
function shared(): IsolatedCudaBackend {
  sharedHost ??= standIn();
  return sharedHost;
}

function standIn(): IsolatedCudaBackend {
  const b = new IsolatedCudaBackend({ arenaBytes: 1 << 20, hostTimeoutMs: 60_000 });
  b[INTERNALS]().useHostEntry(STAND_IN);
  backends.push(b);
  return b;
}

/** What the plan's KernelStateHost was told, in order, and the first load's keys. */
function recorder() {
  type Call =
    | { op: 'load'; keys: ActorKey[] }
    | { op: 'evicted'; batch: EvictedStates }
    | { op: 'laneLoaded'; keys: ActorKey[]; versions: number[] };
  const calls: Call[] = [];
  let loaded!: (keys: ActorKey[]) => void;
  const firstLoad = new Promise<ActorKey[]>((r) => (loaded = r));
  const host = {
    load: (keys: readonly ActorKey[]) => {
      calls.push({ op: 'load', keys: [...keys] });
      loaded([...keys]);
    },
    evicted: (batch: EvictedStates) => void calls.push({ op: 'evicted', batch }),
    laneLoaded: (keys: readonly ActorKey[], versions: Float64Array) => {
      calls.push({ op: 'laneLoaded', keys: [...keys], versions: [...versions] });
    },
  };
  return { calls, host, firstLoad };
}

function plan(persistence?: KernelPlan['persistence']): KernelPlan {
  const options = { ...DEFAULT_KERNEL_OPTIONS, maxActors: 1024, ringCapacity: 256, replyCapacity: 256 };
  const logger = pino({ level: 'silent' });
  const grain = Account.grain;
  return { grainId: 0, grain, grains: [grain], options, logger, ...(persistence ? { persistence } : {}) };
}

/** A row whose every byte is `seed + i` (so each row is told apart exactly). */
function row(seed: number): Uint8Array {
  return Uint8Array.from({ length: stride }, (_, i) => (seed + i) & 0xff);
}

/** An upload of `keys` (rows in order), found per key. */
function upload(keys: number[], bytes: Uint8Array, found: number[], mode: StateUpload['mode']): StateUpload {
  return { keys, bytes, stride, found: Uint8Array.from(found), mode };
}

function rows(...seeds: number[]): Uint8Array {
  const out = new Uint8Array(seeds.length * stride);
  seeds.forEach((s, i) => out.set(row(s), i * stride));
  return out;
}

describe('IsolatedCudaBackend state access through the GPU host channel (a stand-in kernel, no GPU)', () => {
  it('posted loads reach the plan; installs, dirty reads, deactivations cross exactly, in order', async () => {
    const rec = recorder();
    const k = await shared().createKernel(plan({ load: true, idleMs: 1000, host: rec.host }));
    const methods = [k.readDirty, k.writeStates, k.deactivateIdle].map((f) => typeof f);
    expect(methods).toEqual(['function', 'function', 'function']);
    await k.start();
    expect(await rec.firstLoad).toEqual([10, 11, 12]);

    // 10 stored, 11 absent (zeroed), 12's load failed: its text and failure id reach the kernel as given.
    const failed = { keys: [12], error: 'store down', failure: 42 };
    await k.writeStates!({ ...upload([10, 11], rows(5, 0), [1, 0], 'load'), failed });
    expect(await k.inspect!(12)).toEqual({ rejected: { error: 'store down', failure: 42 } });
    expect(await k.inspect!(11)).toEqual({ state: [...new Uint8Array(stride)], dirty: true });
    // A row handed over as a view into a larger buffer crosses as its own bytes only.
    const big = rows(1, 2, 3, 20);
    await k.writeStates!(upload([10, 20], big.subarray(2 * stride), [1, 1], 'preload'));
    expect(await k.inspect!(10)).toEqual({ state: [...row(5)], dirty: true }); // held: preload does not replace it
    expect(await k.inspect!(20)).toEqual({ state: [...row(20)], dirty: false });

    const dirty = await k.readDirty!();
    expect(dirty.keys).toEqual([10, 11]);
    expect(dirty.stride).toBe(stride);
    const zero = new Uint8Array(stride);
    expect([...dirty.bytes]).toEqual([...row(5), ...zero]); // 11 was absent: a zeroed state
    expect((await k.readDirty!()).keys).toEqual([]); // marks cleared by the read

    let answered = false;
    const n = await k.deactivateIdle!(Number.POSITIVE_INFINITY, 1234.5).then((v) => {
      answered = true;
      return v;
    });
    expect(n).toBe(3);
    expect(answered).toBe(true);
    expect(await k.inspect!('last')).toEqual({ before: Number.POSITIVE_INFINITY, now: 1234.5 });
    // Every report in the kernel's order; the evicted rows came before the deactivation's answer.
    expect(rec.calls.map((c) => c.op)).toEqual(['load', 'laneLoaded', 'evicted']);
    expect(rec.calls[1]).toEqual({ op: 'laneLoaded', keys: [7], versions: [3] });
    const ev = (rec.calls[2] as { batch: EvictedStates }).batch;
    expect(ev.keys).toEqual([10, 11, 20]);
    expect([...ev.bytes]).toEqual([...row(5), ...zero, ...row(20)]);
    expect([...ev.dirty]).toEqual([0, 0, 0]); // read out by readDirty before: nothing left to write
    await k.dispose();
  }, 60_000);

  it("the kernel's errors come back typed; a plan without persistence gets a kernel without state access", async () => {
    const b = shared();
    const rec = recorder();
    const k = await b.createKernel(plan({ load: true, idleMs: undefined, host: rec.host }));
    const wide = { ...upload([1], new Uint8Array(stride + 8), [1], 'load'), stride: stride + 8 };
    const bad = await k.writeStates!(wide).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(GpuStateError);
    expect(bad).toMatchObject({ code: 'GPU_STATE_BAD_UPLOAD' });
    expect((bad as Error).message).toMatch(/^grain "Account": rows of \d+ bytes, the state layout has \d+/);
    const plain = await b.createKernel(plan());
    expect([plain.readDirty, plain.writeStates, plain.deactivateIdle]).toEqual([undefined, undefined, undefined]);
    plain.wake(0);
    expect(await plain.inspect!('wakes')).toBe(0); // no load-request ring to poll: nothing sent
    await plain.dispose();
    await k.dispose();
  }, 60_000);

  it('wakes reach the GPU host kernel that loads, at most one per WAKE_EVERY_MS', async () => {
    const k = await shared().createKernel(plan({ load: true, idleMs: undefined, host: recorder().host }));
    const t0 = performance.now();
    for (let i = 0; i < 20_000; i++) k.wake(0);
    const ms = performance.now() - t0;
    // Frames arrive in order: the inspect is answered after every wake sent before it.
    const wakes = (await k.inspect!('wakes')) as number;
    expect(wakes).toBeGreaterThanOrEqual(1);
    expect(wakes).toBeLessThanOrEqual(Math.floor(ms / WAKE_EVERY_MS) + 1);
    await k.dispose();
  }, 60_000);

  it('a malformed frame from the host is refused whole: the waiting request fails typed, the host stops', async () => {
    const b = standIn();
    const rec = recorder();
    const k = await b.createKernel(plan({ load: true, idleMs: 1000, host: rec.host }));
    // before = -1: the stand-in sends an evicted frame of two keys and one row's bytes, and never answers.
    const err = await k.deactivateIdle!(-1, 0).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GpuHostProtocolError);
    expect(err).toMatchObject({ code: 'GPU_HOST_PROTOCOL' });
    expect((err as Error).message).toMatch(/op evicted\): batch\.bytes holds \d+ bytes, 2 rows of \d+ need/);
    expect(rec.calls.filter((c) => c.op === 'evicted')).toEqual([]); // nothing of it reached the plan
    expect(k.health().fault).toBe(err);
    await expect(k.readDirty!()).rejects.toBe(err);
  }, 60_000);

  it('a report for a kernel the application lacks is a protocol error (states must not go nowhere)', async () => {
    const k = await standIn().createKernel(plan({ load: true, idleMs: 1000, host: recorder().host }));
    const err = await k.inspect!('ghost').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GpuHostProtocolError);
    expect((err as Error).message).toMatch(/\(op load\): no kernel 9999 with persistence here/);
    expect(k.health().fault).toBe(err);
  }, 60_000);
});
