/**
 * First-fit allocator over one shared mapping, in aligned blocks. Freeing is bookkeeping only (no driver
 * call), so it never waits for running kernels, unlike cuMemFreeHost.
 */
import { ArenaFullError } from './errors.ts';

export class Arena {
  /** Free ranges, sorted by offset, never adjacent (merged on free). */
  private free: Array<{ offset: number; bytes: number }>;
  private readonly used = new Map<number, number>();

  constructor(readonly bytes: number, readonly align = 128) {
    this.free = [{ offset: 0, bytes }];
  }

  alloc(bytes: number): number {
    const need = Math.ceil(bytes / this.align) * this.align;
    const i = this.free.findIndex((r) => r.bytes >= need);
    if (i < 0) {
      throw new ArenaFullError(need, this.bytes, this.inUse());
    }
    const r = this.free[i]!;
    const offset = r.offset;
    if (r.bytes === need) this.free.splice(i, 1);
    else this.free[i] = { offset: r.offset + need, bytes: r.bytes - need };
    this.used.set(offset, need);
    return offset;
  }

  release(offset: number): void {
    const bytes = this.used.get(offset);
    if (bytes === undefined) throw new RangeError(`arena: no allocation at offset ${offset}`);
    this.used.delete(offset);
    let i = this.free.findIndex((r) => r.offset > offset);
    if (i < 0) i = this.free.length;
    this.free.splice(i, 0, { offset, bytes });
    const next = this.free[i + 1];
    if (next && offset + bytes === next.offset) {
      this.free[i] = { offset, bytes: bytes + next.bytes };
      this.free.splice(i + 1, 1);
    }
    const prev = this.free[i - 1];
    const cur = this.free[i]!;
    if (prev && prev.offset + prev.bytes === cur.offset) {
      this.free[i - 1] = { offset: prev.offset, bytes: prev.bytes + cur.bytes };
      this.free.splice(i, 1);
    }
  }

  inUse(): number {
    let n = 0;
    for (const b of this.used.values()) n += b;
    return n;
  }

  /** Free ranges (for tests): offsets ascending, none adjacent. */
  freeRanges(): ReadonlyArray<{ offset: number; bytes: number }> {
    return this.free.map((r) => ({ ...r }));
  }
}
