import { layoutOf, viewAt, snapshot, alignUp, type StructSchema } from '@ringgrain/core/backend';
import { StateTableFullError } from './errors.ts';
import { KeySlots } from './key-slots.ts';

const CHUNK_SLOTS = 4096;

interface Chunk {
  readonly sab: SharedArrayBuffer;
  readonly bytes: Uint8Array;
  /** Per slot: the clock of its actor's last turn (idle collection). */
  readonly used: Float64Array;
  /** Per slot: 1 when the state changed since it was last read out. */
  readonly dirty: Uint8Array;
}

/**
 * Actor states in SharedArrayBuffer chunks laid out by the state schema (the GPU's layout): a key's slot
 * is taken and zeroed (or filled with its stored state) on activation and freed on deactivation. Chunks
 * grow on demand up to maxActors. Dirty marks and last-turn times live beside the states, per slot.
 */
export class StateTable<K extends number | string> {
  private readonly schema: StructSchema;
  /** Bytes between slots, and the state layout's own size (what is stored). */
  private readonly stride: number;
  readonly size0: number;
  private readonly chunks: Chunk[] = [];
  /**
   * Key -> slot: the table's one map (key-slots.ts). A turn costs one lookup in it (indexOf), the view
   * and the rest are read by slot. A second map of views, looked up by key again, made has + get +
   * indexOf a third of a persistent lane's time with 1,000,000 actors.
   */
  private readonly where = new KeySlots<K>();
  private readonly keyAt: Array<K | undefined> = [];
  /** Per slot: the live view of its state (undefined: free). */
  private readonly viewAt: unknown[] = [];
  private readonly free: number[] = [];
  private dirtyList: number[] = [];
  private readonly grain: string;
  readonly maxActors: number;

  constructor(grain: string, schema: StructSchema, maxActors: number) {
    this.grain = grain;
    this.schema = schema;
    const l = layoutOf(schema);
    this.size0 = l.size;
    this.stride = alignUp(l.size, Math.max(8, l.align));
    this.maxActors = maxActors;
  }

  get size(): number {
    return this.where.size;
  }

  get full(): boolean {
    return this.where.size >= this.maxActors;
  }

  /** The live view of `key`'s state, activating a zeroed one when absent. */
  get(key: K): unknown {
    const index = this.where.get(key);
    if (index >= 0) return this.viewAt[index];
    return this.activate(key, undefined);
  }

  /** The live view of a held `key`, or undefined (nothing activated): one lookup where has + get take two. */
  peek(key: K): unknown {
    const index = this.where.get(key);
    return index < 0 ? undefined : this.viewAt[index];
  }

  /** The live view of the actor in slot `index` (from indexOf; undefined: the slot is free). */
  viewOf(index: number): unknown {
    return this.viewAt[index];
  }

  has(key: K): boolean {
    return this.where.get(key) >= 0;
  }

  /** The slot index of a held key (-1 when absent). */
  indexOf(key: K): number {
    return this.where.get(key);
  }

  /** The key held in slot `index` (undefined: the slot is free). */
  keyOf(index: number): K | undefined {
    return this.keyAt[index];
  }

  /** Activates `key` with `state` (the layout's bytes) or zeroed; throws StateTableFullError when full. */
  activate(key: K, state: Uint8Array | undefined): unknown {
    if (this.where.size >= this.maxActors) throw new StateTableFullError(this.grain, this.maxActors);
    const index = this.free.length ? this.free.pop()! : this.keyAt.length;
    const c = Math.floor(index / CHUNK_SLOTS);
    if (c === this.chunks.length) {
      const sab = new SharedArrayBuffer(CHUNK_SLOTS * this.stride); // zeroed by spec
      this.chunks.push({
        sab,
        bytes: new Uint8Array(sab),
        used: new Float64Array(CHUNK_SLOTS),
        dirty: new Uint8Array(CHUNK_SLOTS),
      });
    }
    const chunk = this.chunks[c]!;
    const at = (index % CHUNK_SLOTS) * this.stride;
    if (index < this.keyAt.length) chunk.bytes.fill(0, at, at + this.stride); // a freed slot
    if (state) chunk.bytes.set(state.subarray(0, this.size0), at);
    chunk.dirty[index % CHUNK_SLOTS] = 0;
    const view = viewAt(this.schema, chunk.sab, at);
    this.where.set(key, index);
    this.keyAt[index] = key;
    this.viewAt[index] = view;
    return view;
  }

  /** The state bytes of slot `index` (a live view into the table). */
  bytes(index: number): Uint8Array {
    const at = (index % CHUNK_SLOTS) * this.stride;
    return this.chunks[Math.floor(index / CHUNK_SLOTS)]!.bytes.subarray(at, at + this.size0);
  }

  /**
   * Copies slot `index`'s state into `into` (size0 bytes), and compares it with `was`: the before-image of
   * every turn of a persistent lane. Read in place, not through bytes(): a view made twice a turn was most
   * of that lane's garbage.
   */
  copyOut(index: number, into: Uint8Array): void {
    const b = this.chunks[Math.floor(index / CHUNK_SLOTS)]!.bytes;
    const at = (index % CHUNK_SLOTS) * this.stride;
    for (let i = 0; i < this.size0; i++) into[i] = b[at + i]!;
  }

  /** Whether slot `index`'s state differs from `was` (its first size0 bytes). */
  differs(index: number, was: Uint8Array): boolean {
    const b = this.chunks[Math.floor(index / CHUNK_SLOTS)]!.bytes;
    const at = (index % CHUNK_SLOTS) * this.stride;
    for (let i = 0; i < this.size0; i++) if (b[at + i] !== was[i]) return true;
    return false;
  }

  touch(index: number, time: number): void {
    this.chunks[Math.floor(index / CHUNK_SLOTS)]!.used[index % CHUNK_SLOTS] = time;
  }

  markDirty(index: number): void {
    const c = this.chunks[Math.floor(index / CHUNK_SLOTS)]!;
    if (c.dirty[index % CHUNK_SLOTS]) return;
    c.dirty[index % CHUNK_SLOTS] = 1;
    this.dirtyList.push(index);
  }

  private isDirty(index: number): boolean {
    return this.chunks[Math.floor(index / CHUNK_SLOTS)]!.dirty[index % CHUNK_SLOTS] === 1;
  }

  /** Copies out every dirty state (keys and one packed buffer) and clears their marks. */
  takeDirty(): { keys: K[]; bytes: Uint8Array } {
    const keys: K[] = [];
    const list = this.dirtyList;
    this.dirtyList = [];
    const bytes = new Uint8Array(list.length * this.size0);
    for (const index of list) {
      const key = this.keyAt[index];
      if (key === undefined || !this.isDirty(index)) continue; // freed since (its eviction carried the state)
      bytes.set(this.bytes(index), keys.length * this.size0);
      this.chunks[Math.floor(index / CHUNK_SLOTS)]!.dirty[index % CHUNK_SLOTS] = 0;
      keys.push(key);
    }
    return { keys, bytes: bytes.subarray(0, keys.length * this.size0) };
  }

  /** Keys whose last turn is before `before` (all keys for Infinity). */
  idleKeys(before: number): K[] {
    const out: K[] = [];
    // In slot order (the key map has no order of its own).
    const keyAt = this.keyAt;
    for (let index = 0; index < keyAt.length; index++) {
      const key = keyAt[index];
      if (key !== undefined && this.chunks[Math.floor(index / CHUNK_SLOTS)]!.used[index % CHUNK_SLOTS]! < before)
        out.push(key);
    }
    return out;
  }

  /** Frees `key`'s slot; copies its final state into `into` at `at` and returns whether it was dirty. */
  evict(key: K, into: Uint8Array, at: number): boolean {
    const index = this.where.get(key);
    into.set(this.bytes(index), at);
    const dirty = this.isDirty(index);
    this.chunks[Math.floor(index / CHUNK_SLOTS)]!.dirty[index % CHUNK_SLOTS] = 0;
    this.where.delete(key);
    this.keyAt[index] = undefined;
    this.viewAt[index] = undefined;
    this.free.push(index);
    return dirty;
  }

  snapshot(key: K): unknown {
    const index = this.where.get(key);
    if (index < 0) return undefined;
    return snapshot(
      this.schema,
      this.chunks[Math.floor(index / CHUNK_SLOTS)]!.sab,
      (index % CHUNK_SLOTS) * this.stride,
    );
  }
}
