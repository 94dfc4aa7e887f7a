import { layoutOf, viewAt, snapshot, alignUp, type StructSchema } from '@ringgrain/core';
import { StateTableFullError } from './errors.ts';

const CHUNK_SLOTS = 4096;

/**
 * Actor states in SharedArrayBuffer chunks laid out by the state schema (the GPU's layout): a key's slot
 * is taken and zeroed on its first message. Chunks grow on demand up to maxActors.
 */
export class StateTable<K extends number | string> {
  private readonly schema: StructSchema;
  private readonly stride: number;
  private readonly chunks: SharedArrayBuffer[] = [];
  private readonly views = new Map<K, unknown>();
  private readonly where = new Map<K, number>();
  private readonly grain: string;
  private readonly maxActors: number;

  constructor(grain: string, schema: StructSchema, maxActors: number) {
    this.grain = grain;
    this.schema = schema;
    const l = layoutOf(schema);
    this.stride = alignUp(l.size, Math.max(8, l.align));
    this.maxActors = maxActors;
  }

  get size(): number {
    return this.views.size;
  }

  /** The live view of `key`'s state; `activated` is set when this call created it. */
  get(key: K): unknown {
    const v = this.views.get(key);
    if (v !== undefined) return v;
    return this.activate(key);
  }

  has(key: K): boolean {
    return this.views.has(key);
  }

  private activate(key: K): unknown {
    const index = this.views.size;
    if (index >= this.maxActors) throw new StateTableFullError(this.grain, this.maxActors);
    const chunk = Math.floor(index / CHUNK_SLOTS);
    if (chunk === this.chunks.length) this.chunks.push(new SharedArrayBuffer(CHUNK_SLOTS * this.stride)); // zeroed by spec
    const view = viewAt(this.schema, this.chunks[chunk]!, (index % CHUNK_SLOTS) * this.stride);
    this.views.set(key, view);
    this.where.set(key, index);
    return view;
  }

  snapshot(key: K): unknown {
    const index = this.where.get(key);
    if (index === undefined) return undefined;
    return snapshot(this.schema, this.chunks[Math.floor(index / CHUNK_SLOTS)]!, (index % CHUNK_SLOTS) * this.stride);
  }
}
