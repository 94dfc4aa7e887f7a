import { AskManyError, KernelNotRunningError, SchemaValidationError } from '../errors.ts';
import type {
  AnyGrainClass,
  AskMethodName,
  GrainDef,
  MethodDef,
  MethodName,
  ReplyOf,
  RequestInput,
  SpecOf,
  TypesOf,
} from '../grain.ts';
import type { RingKernel } from '../kernel.ts';
import { laneOfKey } from '../lanes.ts';
import { columnImageBytes, columnImageFields, packColumnImageRows, type ColumnField } from '../column-image.ts';
import type { AskBatch } from '../pending.ts';
import { HOST_SENDER, SLOT, SlotFlag } from '../protocol.ts';
import { compileRowLoop, type RowLoop } from '../row-codegen.ts';
import type { RowsSegment } from '../spill.ts';
import { validateColumns, type Columns, type ReplyColumns } from '../bulk.ts';
import { isNumericScalar } from '../schema/types.ts';
import type { Sender } from './send.ts';
import type { Route, SystemState } from './state.ts';

/** tellMany calls shorter than this write rows (an image's slot, pack and buffer hand-off cost more). */
const IMAGE_MIN_ROWS = 64;

/** tellMany's rows from `rows.next` on, waiting for ring space as one spill segment. */
export interface RowsWaiting extends RowsSegment {
  readonly rows: BulkRows;
  readonly def: MethodDef;
}

interface BulkRows {
  next: number;
  readonly end: number;
  readonly key: ArrayLike<unknown>;
  readonly cols: Record<string, ArrayLike<unknown>>;
  readonly names: readonly string[];
  /**
   * The generated row loop (row-codegen.ts) and its columns in schema order, once chosen; null where it does not apply
   * (a field that is not a scalar, string keys).
   */
  loop?: { readonly run: RowLoop; readonly cols: ReadonlyArray<ArrayLike<unknown>> } | null;
  /** askMany's rows: row i is an ask with correlation id corrBase + i (its pending entry is made up front). */
  readonly corrBase?: number;
  /** tellMany's rows as column images (next/end then count rows sent, not call indices). */
  readonly images?: ImageRows;
}

interface ImageRows {
  readonly fields: readonly ColumnField[];
  readonly key: ArrayLike<number>;
  /** The request's columns in field order. */
  readonly cols: ReadonlyArray<ArrayLike<unknown>>;
  readonly method: MethodDef;
  /** Per lane: its rows' indices in call order, and how many of them were sent. */
  readonly lists: readonly Int32Array[];
  readonly at: Int32Array;
  /** Rows one image buffer holds. */
  readonly perImage: number;
}

/** The call's index of the first row of a waiting segment not sent (image rows: the least over lanes). */
export function firstUnsent(seg: RowsWaiting): number {
  const img = seg.rows.images;
  if (!img) return seg.rows.next;
  let first = seg.rows.end;
  for (const [l, list] of img.lists.entries()) if (img.at[l]! < list.length) first = Math.min(first, list[img.at[l]!]!);
  return first;
}

/** Rows of these fields one buffer of `bytes` holds. */
function imageRowsFitting(fields: readonly ColumnField[], bytes: number): number {
  const perRow = columnImageBytes(fields, 2) - columnImageBytes(fields, 1) + 8;
  let rows = Math.floor(bytes / perRow);
  while (rows > 0 && columnImageBytes(fields, rows) > bytes) rows--;
  return rows;
}

/**
 * askMany's replies into columns, both paths: row i's reply fields go to out[field][i]; once every row has
 * settled it resolves with the columns, or rejects with an AskManyError naming the lowest failed row.
 */
function replyColumns(
  n: number,
  out: Record<string, Float64Array | unknown[]>,
  replyNames: readonly string[],
  where: string,
  resolve: (v: unknown) => void,
  reject: (e: Error) => void,
): Pick<AskBatch, 'ok' | 'fail' | 'okInPlace'> {
  let left = n;
  let failed = 0;
  let first: { row: number; error: Error } | undefined;
  const settle = () => {
    if (--left > 0) return;
    if (first) reject(new AskManyError(where, first.row, failed, n, first.error));
    else resolve(out);
  };
  if (n === 0) resolve(out);
  return {
    ok: (row, r) => {
      const rec = r as Record<string, unknown>;
      for (const f of replyNames) out[f]![row] = rec[f];
      settle();
    },
    okInPlace: settle,
    fail: (row, e) => {
      failed++;
      if (!first || row < first.row) first = { row, error: e };
      settle();
    },
  };
}

/** A batch entry is settled through its batch (resolveAsk / rejectAsk), never through these. */
function unexpected(): never {
  throw new Error('internal: an askMany row was settled as a single ask');
}

/** Bulk sends: tellMany and askMany from columns, as rows (a generated loop) or column images. */
export class BulkSender {
  /**
   * Whether tellMany hands a lane that takes column images (LaneMemory.images) one image per chunk of its
   * rows instead of a slot per row. Off: every backend gets rows (benchmarks compare the two).
   */
  images = true;

  constructor(
    private readonly state: SystemState,
    private readonly sender: Sender,
  ) {}

  tellMany<C extends AnyGrainClass, M extends MethodName<SpecOf<C>>>(
    cls: C,
    method: M,
    columns: Columns<RequestInput<SpecOf<C>, M>, TypesOf<C>['key']>,
  ): number {
    const def = cls.grain as GrainDef;
    const route = this.sender.route(def, method);
    const cols = columns as unknown as Record<string, ArrayLike<unknown>>;
    const n = validateColumns(
      `${def.name}.${method} (tellMany)`,
      route.method,
      def.keyKind === 'string',
      cols,
      route.reg.storage.storage !== undefined,
    );
    if (this.state.router !== undefined) return this.tellRowsOneByOne(route, cols, n);
    let rows: BulkRows = { next: 0, end: n, key: cols['key']!, cols, names: route.method.request.fieldNames };
    const kernel = route.reg.kernel;
    if (!kernel) throw new KernelNotRunningError(def.name, 'not started');
    if (!kernel.accepting) kernel.assertAccepting();
    if (n >= IMAGE_MIN_ROWS && this.images && def.keyKind !== 'string') {
      const images = this.imageRows(kernel, route.method, cols, n);
      if (images) rows = { ...rows, images };
    }
    // Straight into the ring while it has room and nothing waits before us; the rest waits as ONE segment.
    // A row that cannot be encoded (a payload over the slot: only encoding tells) is a tellError event with
    // its row and the others still go, as on the waiting path (drainRows): throwing here lost the rows after
    // it, and the caller could not tell which rows had been sent.
    const seg: RowsWaiting = { rows, method, def: route.method };
    if (!this.state.spills.get(kernel)?.size) this.drainRows(kernel, seg);
    if (rows.next < rows.end) {
      this.state.spillOf(kernel).pushRows(seg, performance.now());
      this.state.waiting.add(kernel);
      this.state.schedulePump();
    }
    return n;
  }

  /** tellMany in a cluster: each row routed on its own (its key's owner may be here or on another silo). */
  private tellRowsOneByOne(route: Route, cols: Record<string, ArrayLike<unknown>>, n: number): number {
    const names = route.method.request.fieldNames;
    const key = cols['key']!;
    for (let i = 0; i < n; i++) {
      const payload: Record<string, unknown> = {};
      for (const f of names) payload[f] = cols[f]![i];
      const p = this.sender.sendRoute(route, key[i] as number | string, payload, false);
      if (p) p.catch(() => {});
    }
    return n;
  }

  askMany<C extends AnyGrainClass, M extends AskMethodName<SpecOf<C>>>(
    cls: C,
    method: M,
    columns: Columns<RequestInput<SpecOf<C>, M>, TypesOf<C>['key']>,
  ): Promise<ReplyColumns<ReplyOf<SpecOf<C>, M>>> {
    const def = cls.grain as GrainDef;
    const route = this.sender.route(def, method);
    const where = `${def.name}.${method} (askMany)`;
    const reply = route.method.reply;
    if (!reply)
      return Promise.reject(
        new SchemaValidationError(where, [], `method "${method}" has no reply; send its messages with tellMany`),
      );
    const cols = columns as unknown as Record<string, ArrayLike<unknown>>;
    let n: number;
    try {
      n = validateColumns(where, route.method, def.keyKind === 'string', cols, route.reg.storage.storage !== undefined);
    } catch (e) {
      return Promise.reject(e as Error);
    }
    const out: Record<string, Float64Array | unknown[]> = {};
    for (const f of reply.fieldNames) {
      const s = reply.fields[f]!;
      out[f] = isNumericScalar(s) ? new Float64Array(n) : new Array<unknown>(n);
    }
    const names = route.method.request.fieldNames;
    const replyNames = reply.fieldNames;
    const key = cols['key']!;
    const fast = this.askRows(def, route, cols, n, out, replyNames, where);
    if (fast) return fast as Promise<ReplyColumns<ReplyOf<SpecOf<C>, M>>>;
    return new Promise((resolve, reject) => {
      const rows = replyColumns(n, out, replyNames, where, resolve as (v: unknown) => void, reject);
      for (let i = 0; i < n; i++) {
        const payload: Record<string, unknown> = {};
        for (const f of names) payload[f] = cols[f]![i];
        let p: Promise<unknown> | undefined;
        try {
          p = this.sender.sendRoute(route, key[i] as number | string, payload, true);
        } catch (e) {
          rows.fail(i, e as Error);
          continue;
        }
        p!.then(
          (r) => rows.ok(i, r),
          (e: unknown) => rows.fail(i, e as Error),
        );
      }
    });
  }

  /**
   * askMany's fast path (int keys, scalar request fields, no send of this kernel waiting for ring space):
   * rows are written like tellMany's (row-codegen.ts, a loop generated per method) with the ASK flag and
   * correlation ids corrBase + i, and replies go straight into the columns: no payload object and no
   * Promise per row. A ring that fills makes the rest wait as one segment, as for tellMany. Undefined
   * where it does not apply (askMany then sends row by row).
   */
  private askRows(
    def: GrainDef,
    route: Route,
    cols: Record<string, ArrayLike<unknown>>,
    n: number,
    out: Record<string, Float64Array | unknown[]>,
    replyNames: readonly string[],
    where: string,
  ): Promise<unknown> | undefined {
    const kernel = route.reg.kernel;
    if (
      n === 0 ||
      def.keyKind === 'string' ||
      !kernel ||
      !kernel.accepting ||
      this.state.spills.get(kernel)?.size ||
      this.state.router
    )
      return undefined;
    const key = cols['key'] as ArrayLike<number>;
    const run = compileRowLoop(route.method, kernel.grainId, key, cols, kernel.lanes[0]!.inbound.payloadCapacity, true);
    if (!run) return undefined;
    const corrBase = this.sender.reserveCorrs(n);
    if (corrBase === undefined) return undefined;
    const names = route.method.request.fieldNames;
    return new Promise((resolve, reject) => {
      const batch: AskBatch = {
        corrBase,
        n,
        key,
        lanes: kernel.lanes.length,
        columns: replyNames.map((f) => out[f]!),
        ...replyColumns(n, out, replyNames, where, resolve, reject),
      };
      this.state.pending.addBatch({
        resolve: unexpected,
        reject: unexpected,
        kernel,
        lane: 0,
        method: route.method,
        deadline: performance.now() + this.state.config.askTimeoutMs,
        batch,
      });
      const rows: BulkRows = {
        next: 0,
        end: n,
        key,
        cols,
        names,
        loop: { run, cols: names.map((f) => cols[f]!) },
        corrBase,
      };
      this.writeRows(kernel, route.method, rows);
      if (rows.next < n) {
        this.state
          .spillOf(kernel)
          .pushRows({ rows, method: route.method.name, def: route.method } as RowsWaiting, performance.now());
        this.state.waiting.add(kernel);
      }
      this.state.schedulePump();
    });
  }

  /**
   * tellMany's rows split for column images, where every lane of the kernel takes them (LaneMemory.images)
   * and the request is all scalars: per lane its rows' indices in call order. Undefined: rows apply.
   */
  private imageRows(
    kernel: RingKernel,
    method: MethodDef,
    cols: Record<string, ArrayLike<unknown>>,
    n: number,
  ): ImageRows | undefined {
    const lanes = kernel.lanes;
    if (!lanes.every((l) => l.images !== undefined)) return undefined;
    const fields = columnImageFields(method, kernel.grainId);
    if (!fields) return undefined;
    const key = cols['key'] as ArrayLike<number>;
    const L = lanes.length;
    let lists: Int32Array[];
    if (L === 1) {
      const all = new Int32Array(n);
      for (let i = 0; i < n; i++) all[i] = i;
      lists = [all];
    } else {
      const counts = new Int32Array(L);
      const laneOfRow = new Uint16Array(n);
      for (let i = 0; i < n; i++) counts[(laneOfRow[i] = laneOfKey(key[i]!, L))]!++;
      lists = Array.from(counts, (c) => new Int32Array(c));
      const fill = new Int32Array(L);
      for (let i = 0; i < n; i++) {
        const l = laneOfRow[i]!;
        lists[l]![fill[l]!++] = i;
      }
    }
    const perImage = imageRowsFitting(fields, lanes[0]!.images!.buffers[0]!.byteLength);
    if (perImage < 1) return undefined;
    return { fields, key, cols: fields.map((f) => cols[f.name]!), method, lists, at: new Int32Array(L), perImage };
  }

  /**
   * Sends waiting image rows: per lane, while it has a free buffer and a free slot, its next rows packed
   * into the buffer and announced by ONE slot (SlotFlag.IMAGE) at their place in the ring; the lane runs
   * them as tells. Lanes go on independently (FIFO is per lane). Returns the rows sent (counted as sent).
   */
  private pushImages(kernel: RingKernel, img: ImageRows): number {
    const lanes = kernel.lanes;
    const time = this.state.config.clock();
    let sent = 0;
    for (let l = 0; l < lanes.length; l++) {
      const list = img.lists[l]!;
      const area = lanes[l]!.images!;
      const producer = lanes[l]!.producer;
      let at = img.at[l]!;
      while (at < list.length) {
        let b = 0;
        while (b < area.busy.length && Atomics.load(area.busy, b) !== 0) b++;
        if (b === area.busy.length) break;
        const slot = producer.claim();
        if (slot < 0) break;
        const to = Math.min(list.length, at + img.perImage);
        packColumnImageRows(img.fields, area.buffers[b]!, {
          grainId: kernel.grainId,
          method: img.method.id,
          key: img.key,
          cols: img.cols,
          idx: list,
          from: at,
          to,
        });
        Atomics.store(area.busy, b, 1);
        const dv = producer.ring.dv;
        dv.setUint32(slot + SLOT.length, 0, true);
        dv.setUint32(slot + SLOT.method, img.method.id, true);
        dv.setUint32(slot + SLOT.flags, SlotFlag.IMAGE, true);
        dv.setUint32(slot + SLOT.corr, 0, true);
        dv.setUint32(slot + SLOT.keyLo, b, true);
        dv.setUint32(slot + SLOT.keyHi, to - at, true);
        dv.setUint32(slot + SLOT.sender, HOST_SENDER, true);
        dv.setUint32(slot + SLOT.grain, kernel.grainId, true);
        dv.setFloat64(slot + SLOT.time, time, true);
        producer.publish(slot);
        sent += to - at;
        at = to;
      }
      img.at[l] = at;
    }
    kernel.sent += sent;
    if (sent) kernel.wakeAll();
    return sent;
  }

  /** Writes tellMany rows from `rows.next` while the ring has room; returns whether any was written. */
  private writeRows(kernel: RingKernel, method: MethodDef, rows: BulkRows): boolean {
    const start = rows.next;
    if (rows.images) {
      rows.next += this.pushImages(kernel, rows.images);
      return rows.next !== start;
    }
    const lanes = kernel.lanes;
    if (rows.loop === undefined) {
      // tellMany's rows (askMany's come with their loop): the generated loop, where the request is all scalars.
      const run =
        kernel.def.keyKind !== 'string'
          ? compileRowLoop(method, kernel.grainId, rows.key, rows.cols, lanes[0]!.inbound.payloadCapacity, false)
          : undefined;
      rows.loop = run ? { run, cols: rows.names.map((f) => rows.cols[f]!) } : null;
    }
    if (rows.loop) {
      rows.next = rows.loop.run(
        kernel.producers,
        rows.key as ArrayLike<number>,
        rows.loop.cols,
        rows.next,
        rows.end,
        this.state.config.clock(),
        rows.corrBase ?? 0,
      );
      kernel.sent += rows.next - start;
      if (rows.next !== start) kernel.wakeAll();
      return rows.next !== start;
    }
    const payload: Record<string, unknown> = {};
    while (rows.next < rows.end) {
      const i = rows.next;
      for (const f of rows.names) payload[f] = rows.cols[f]![i];
      let wrote: boolean;
      const key = rows.key[i] as number | string;
      try {
        wrote = this.sender.tryWrite(kernel, kernel.laneOf(key), method, key, payload, 0);
      } catch (e) {
        if (e && typeof e === 'object') (e as { row?: number }).row = i;
        throw e;
      }
      if (!wrote) break;
      kernel.sent++;
      rows.next++;
    }
    if (rows.next !== start) kernel.wakeAll();
    return rows.next !== start;
  }

  /** Writes a waiting tellMany segment's rows while the ring has room; returns rows consumed (written or failed). */
  readonly drainRows = (kernel: RingKernel, seg: RowsWaiting): number => {
    const start = seg.rows.next;
    for (;;) {
      try {
        this.writeRows(kernel, seg.def, seg.rows);
        return seg.rows.next - start;
      } catch (e) {
        // A row that cannot be encoded: report it, skip it, keep the rest in order.
        seg.rows.next++;
        this.state.events.emit('tellError', {
          grain: kernel.def.name,
          method: seg.method,
          error: e as Error,
          row: seg.rows.next - 1,
        });
      }
    }
  };
}
