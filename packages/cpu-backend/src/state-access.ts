import {
  laneOfKey,
  layoutOf,
  type ActorKey,
  type KernelPlan,
  type StateBatch,
  type StateUpload,
} from '@ringgrain/core/backend';
import type { StateOp, StateOut } from './protocol.ts';

type Done = Extract<StateOut, { out: 'done' }>;

interface Waiter {
  readonly lane: number;
  resolve(d: Done): void;
  reject(e: Error): void;
}

/**
 * The host's end of a kernel's state access (core backend.ts readDirty, writeStates, deactivateIdle):
 * each call becomes one StateOp per lane (a key's lane: core laneOfKey), answered by a `done`; the lanes'
 * other reports (misses to load, deactivated actors) go to the plan's KernelStateHost in the order the
 * lanes sent them. Shared by the CPU pool (ops over each thread's port) and the inline backend (calls).
 */
export class StateAccess {
  private nextId = 1;
  private readonly waiters = new Map<number, Waiter>();
  readonly stride: number;

  constructor(
    private readonly plan: KernelPlan,
    private readonly lanes: number,
    private readonly send: (lane: number, op: StateOp) => void,
  ) {
    this.stride = layoutOf(plan.grain.state).size;
  }

  /** A lane's report. */
  onOut(out: StateOut): void {
    const host = this.plan.persistence?.host;
    if (out.out === 'done') {
      const w = this.waiters.get(out.id);
      this.waiters.delete(out.id);
      w?.resolve(out);
    } else if (out.out === 'load') host?.load(out.keys);
    else if (out.out === 'loaded') host?.laneLoaded(out.keys, out.versions);
    else host?.evicted({ keys: out.keys, bytes: out.bytes, stride: this.stride, dirty: out.dirty });
  }

  /** Requests that a lane will never answer (its consumer died, the kernel went away) fail with `error`. */
  fail(error: Error, lane?: number): void {
    for (const [id, w] of this.waiters) {
      if (lane !== undefined && w.lane !== lane) continue;
      this.waiters.delete(id);
      w.reject(error);
    }
  }

  private request(lane: number, make: (id: number) => StateOp): Promise<Done> {
    const id = this.nextId++;
    return new Promise<Done>((resolve, reject) => {
      this.waiters.set(id, { lane, resolve, reject });
      this.send(lane, make(id));
    });
  }

  private all(make: (id: number) => StateOp): Promise<Done[]> {
    return Promise.all(Array.from({ length: this.lanes }, (_, lane) => this.request(lane, make)));
  }

  async readDirty(): Promise<StateBatch> {
    const parts = await this.all((id) => ({ op: 'dirty', id }));
    const keys: ActorKey[] = [];
    let bytesLen = 0;
    for (const p of parts) bytesLen += p.bytes?.length ?? 0;
    const bytes = new Uint8Array(bytesLen);
    let at = 0;
    for (const p of parts) {
      if (!p.keys || !p.bytes) continue;
      // A loop, not push(...keys): spreading 120K+ arguments overflows the stack (RangeError).
      for (const k of p.keys) keys.push(k);
      bytes.set(p.bytes, at);
      at += p.bytes.length;
    }
    return { keys, bytes, stride: this.stride };
  }

  async writeStates(u: StateUpload): Promise<void> {
    const rows: number[][] = Array.from({ length: this.lanes }, () => []);
    for (const [i, key] of u.keys.entries()) rows[laneOfKey(key, this.lanes)]!.push(i);
    const failed: ActorKey[][] = Array.from({ length: this.lanes }, () => []);
    for (const key of u.failed?.keys ?? []) failed[laneOfKey(key, this.lanes)]!.push(key);
    const s = u.stride;
    const sends: Array<Promise<Done>> = [];
    for (let lane = 0; lane < this.lanes; lane++) {
      const mine = rows[lane]!;
      const lost = failed[lane]!;
      if (mine.length === 0 && lost.length === 0) continue;
      const all = mine.length === u.keys.length;
      const keys = all ? u.keys.slice() : mine.map((i) => u.keys[i]!);
      const bytes = all ? u.bytes : new Uint8Array(mine.length * s);
      const found = all ? u.found : new Uint8Array(mine.length);
      if (!all) {
        mine.forEach((r, i) => {
          bytes.set(u.bytes.subarray(r * s, (r + 1) * s), i * s);
          found[i] = u.found[r]!;
        });
      }
      const failedHere = lost.length && u.failed ? { failed: { ...u.failed, keys: lost } } : {};
      sends.push(this.request(lane, (id) => ({ op: 'install', id, mode: u.mode, keys, bytes, found, ...failedHere })));
    }
    await Promise.all(sends);
  }

  async deactivateIdle(before: number, now: number): Promise<number> {
    const parts = await this.all((id) => ({ op: 'collect', id, before, now }));
    return parts.reduce((n, p) => n + (p.count ?? 0), 0);
  }
}
