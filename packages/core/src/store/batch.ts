/**
 * Batch checks and row helpers shared by every store, so that each store accepts and refuses exactly the
 * same batches: keys, versions and states are checked column by column before anything is written.
 */
import { StateBatchError, StateScanError } from './errors.ts';
import { showValue } from '../errors.ts';
import type {
  DeleteBatch,
  FixedStates,
  KeyColumn,
  PackedStates,
  PutBatch,
  StateKey,
  StateRows,
  StateTableSpec,
} from './types.ts';

/** Longest string key, in UTF-8 bytes (LMDB keys are at most 1978 bytes; this leaves room for its encoding). */
export const MAX_STRING_KEY_BYTES = 1024;

function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** Checks a scan's page size: an integer ≥ 1 (StateScanError otherwise). */
export function checkScanLimit(store: string, spec: StateTableSpec, limit: unknown): number {
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
    throw new StateScanError(store, spec.name, `limit must be an integer ≥ 1, got ${showValue(limit)}`);
  }
  return limit;
}

/** Checks a key column against the table's key kind; returns its length. */
export function checkKeys(store: string, spec: StateTableSpec, keys: ArrayLike<unknown>): number {
  if (!keys || typeof keys.length !== 'number')
    throw new StateBatchError(store, spec.name, 'keys must be an array (a key column)');
  const n = keys.length;
  if (spec.keyKind === 'string') {
    for (let i = 0; i < n; i++) {
      const k = keys[i];
      if (typeof k !== 'string' || k.length === 0)
        throw new StateBatchError(store, spec.name, `${JSON.stringify(k)} is not a non-empty string key`, i);
      // A lone surrogate has no UTF-8 form: PostgreSQL stored '\uD800' and '\uDC00' both as U+FFFD, one row.
      if (!k.isWellFormed())
        throw new StateBatchError(
          store,
          spec.name,
          `${JSON.stringify(k)} is not a well-formed string key (a lone surrogate)`,
          i,
        );
      // A UTF-16 unit is at most 3 UTF-8 bytes: only long keys need counting.
      if (k.length * 3 > MAX_STRING_KEY_BYTES && utf8Length(k) > MAX_STRING_KEY_BYTES) {
        throw new StateBatchError(
          store,
          spec.name,
          `a key of ${utf8Length(k)} UTF-8 bytes is longer than ${MAX_STRING_KEY_BYTES}`,
          i,
        );
      }
    }
  } else if (!(keys instanceof Int32Array || keys instanceof Uint32Array)) {
    for (let i = 0; i < n; i++) {
      const k = keys[i];
      if (typeof k !== 'number' || !Number.isSafeInteger(k))
        throw new StateBatchError(store, spec.name, `${showValue(k)} is not a safe integer key`, i);
    }
  }
  return n;
}

function checkVersions(store: string, spec: StateTableSpec, what: string, v: ArrayLike<unknown>, n: number): void {
  if (!v || v.length !== n)
    throw new StateBatchError(store, spec.name, `${what} has ${v?.length ?? 'no'} rows, the key column ${n}`);
  for (let i = 0; i < n; i++) {
    const x = v[i];
    if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0)
      throw new StateBatchError(store, spec.name, `${what} ${String(x)} is not a version (an integer ≥ 0)`, i);
  }
}

function isFixed(rows: StateRows): rows is FixedStates {
  return !Array.isArray(rows) && typeof (rows as FixedStates).stride === 'number';
}

function isPacked(rows: StateRows): rows is PackedStates {
  return !Array.isArray(rows) && (rows as PackedStates).offsets instanceof Uint32Array;
}

/** Checks a put batch (keys, expected versions, states); returns the row count. */
export function checkPut<K extends StateKey>(store: string, spec: StateTableSpec, batch: PutBatch<K>): number {
  const n = checkKeys(store, spec, batch.keys);
  checkVersions(store, spec, 'expected', batch.expected, n);
  const size = spec.stateSize;
  const rows = batch.states;
  if (Array.isArray(rows)) {
    if (rows.length !== n) throw new StateBatchError(store, spec.name, `${rows.length} states for ${n} keys`);
    for (let i = 0; i < n; i++) {
      const s: unknown = rows[i];
      if (!(s instanceof Uint8Array)) throw new StateBatchError(store, spec.name, 'a state must be a Uint8Array', i);
      if (size !== undefined && s.length !== size)
        throw new StateBatchError(
          store,
          spec.name,
          `a state of ${s.length} bytes; the table's states are ${size} bytes`,
          i,
        );
    }
  } else if (isFixed(rows)) {
    if (!(rows.bytes instanceof Uint8Array) || !Number.isInteger(rows.stride) || rows.stride < 0)
      throw new StateBatchError(store, spec.name, 'states { bytes, stride } needs a Uint8Array and a stride ≥ 0');
    if (size !== undefined && rows.stride !== size)
      throw new StateBatchError(
        store,
        spec.name,
        `states of stride ${rows.stride}; the table's states are ${size} bytes`,
      );
    if (rows.bytes.length < n * rows.stride)
      throw new StateBatchError(
        store,
        spec.name,
        `states hold ${rows.bytes.length} bytes, ${n} rows of ${rows.stride} need ${n * rows.stride}`,
      );
  } else if (isPacked(rows)) {
    const { offsets, bytes } = rows;
    if (!(bytes instanceof Uint8Array) || offsets.length !== n + 1)
      throw new StateBatchError(
        store,
        spec.name,
        `states { bytes, offsets } needs a Uint8Array and ${n + 1} offsets, got ${offsets.length}`,
      );
    for (let i = 0; i < n; i++) {
      const len = offsets[i + 1]! - offsets[i]!;
      if (len < 0 || offsets[i + 1]! > bytes.length)
        throw new StateBatchError(
          store,
          spec.name,
          `offsets ${offsets[i]}..${offsets[i + 1]} are outside the ${bytes.length} state bytes`,
          i,
        );
      if (size !== undefined && len !== size)
        throw new StateBatchError(store, spec.name, `a state of ${len} bytes; the table's states are ${size} bytes`, i);
    }
  } else
    throw new StateBatchError(
      store,
      spec.name,
      'states must be { bytes, stride }, { bytes, offsets } or an array of Uint8Array',
    );
  return n;
}

/** Checks a delete batch; returns the row count. */
export function checkDelete<K extends StateKey>(store: string, spec: StateTableSpec, batch: DeleteBatch<K>): number {
  const n = checkKeys(store, spec, batch.keys);
  if (batch.expected !== undefined) checkVersions(store, spec, 'expected', batch.expected, n);
  return n;
}

/** Row i of a batch's states as a view (no copy). */
export function stateAt(rows: StateRows, i: number): Uint8Array {
  if (Array.isArray(rows)) return rows[i] as Uint8Array;
  if (isFixed(rows)) return rows.bytes.subarray(i * rows.stride, (i + 1) * rows.stride);
  const p = rows as PackedStates;
  return p.bytes.subarray(p.offsets[i]!, p.offsets[i + 1]!);
}

/** Total bytes of a batch's states. */
export function stateBytes(rows: StateRows, n: number): number {
  if (Array.isArray(rows)) {
    let t = 0;
    for (let i = 0; i < n; i++) t += (rows[i] as Uint8Array).length;
    return t;
  }
  if (isFixed(rows)) return n * rows.stride;
  const p = rows as PackedStates;
  return p.offsets[n]! - p.offsets[0]!;
}

/**
 * The order to apply a batch in: null when its keys already ascend, else the rows sorted by key (writes
 * in key order touch each B-tree page once). A repeated key fails the batch with StateBatchError.
 */
export function keyOrder<K extends StateKey>(
  store: string,
  spec: StateTableSpec,
  keys: KeyColumn<K>,
): Uint32Array | null {
  const k = keys as ArrayLike<StateKey>;
  const n = k.length;
  let ascending = true;
  for (let i = 1; i < n; i++) {
    if (k[i]! === k[i - 1]!)
      throw new StateBatchError(
        store,
        spec.name,
        `key ${JSON.stringify(k[i])} is repeated (rows ${i - 1} and ${i})`,
        i,
      );
    if (k[i]! < k[i - 1]!) {
      ascending = false;
      break;
    }
  }
  if (ascending) return null;
  let order: Uint32Array;
  if (spec.keyKind === 'string') {
    order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = i;
    order.sort((a, b) => (k[a]! < k[b]! ? -1 : k[a]! > k[b]! ? 1 : a - b));
  } else order = radixOrder(k as ArrayLike<number>);
  for (let i = 1; i < n; i++) {
    const a = order[i - 1]!;
    const b = order[i]!;
    if (k[a] === k[b])
      throw new StateBatchError(store, spec.name, `key ${JSON.stringify(k[b])} is repeated (rows ${a} and ${b})`, b);
  }
  return order;
}

/**
 * Rows in ascending key order, stable, for safe-integer keys: an LSD radix sort on 16-bit digits of
 * (high word + 2^21, low word), skipping digits every key shares. A million shuffled keys sort in tens of
 * milliseconds, against over a second for a comparator sort.
 */
function radixOrder(keys: ArrayLike<number>): Uint32Array {
  const n = keys.length;
  const lo = new Uint32Array(n);
  const hi = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const h = Math.floor(keys[i]! / 4294967296);
    lo[i] = keys[i]! - h * 4294967296;
    hi[i] = h + 2097152;
  }
  let order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  let next = new Uint32Array(n);
  const count = new Uint32Array(65536);
  for (const [word, shift] of [
    [lo, 0],
    [lo, 16],
    [hi, 0],
    [hi, 16],
  ] as const) {
    count.fill(0);
    for (let i = 0; i < n; i++) count[(word[i]! >>> shift) & 0xffff]!++;
    if (count[(word[0]! >>> shift) & 0xffff] === n) continue; // every key has this digit: the pass changes nothing
    let sum = 0;
    for (let d = 0; d < 65536; d++) {
      const c = count[d]!;
      count[d] = sum;
      sum += c;
    }
    for (let j = 0; j < n; j++) {
      const i = order[j]!;
      next[count[(word[i]! >>> shift) & 0xffff]!++] = i;
    }
    [order, next] = [next, order];
  }
  return order;
}

/** Builds a StateRead (or a page) row by row, states copied into one growing buffer. */
export class StateReadBuilder {
  bytes: Uint8Array;
  readonly offsets: Uint32Array;
  readonly versions: Float64Array;
  private readonly missingRows: Uint32Array;
  private missingCount = 0;
  private row = 0;
  private end = 0;

  /** `rows`: how many rows will be added; `bytesHint`: a guess at their total size. */
  constructor(rows: number, bytesHint = rows * 32) {
    this.bytes = new Uint8Array(Math.max(64, bytesHint));
    this.offsets = new Uint32Array(rows + 1);
    this.versions = new Float64Array(rows);
    this.missingRows = new Uint32Array(rows);
  }

  /** Room for `n` more bytes; returns where they go (write them, then call `found`). */
  reserve(n: number): number {
    if (this.end + n > this.bytes.length) {
      const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.end + n));
      grown.set(this.bytes.subarray(0, this.end));
      this.bytes = grown;
    }
    return this.end;
  }

  /** The next row has a stored state of `size` bytes already written at `reserve(size)`. */
  found(version: number, size: number): void {
    this.versions[this.row] = version;
    this.end += size;
    this.offsets[++this.row] = this.end;
  }

  /** The next row has a stored state: copies it. */
  add(version: number, state: Uint8Array): void {
    const at = this.reserve(state.length);
    this.bytes.set(state, at);
    this.found(version, state.length);
  }

  /** The next row has no stored state. */
  missing(): void {
    this.missingRows[this.missingCount++] = this.row;
    this.versions[this.row] = 0;
    this.offsets[++this.row] = this.end;
  }

  get rows(): number {
    return this.row;
  }

  /** getMany's answer. */
  read(): {
    count: number;
    found: number;
    versions: Float64Array;
    bytes: Uint8Array;
    offsets: Uint32Array;
    missing: Uint32Array;
  } {
    return {
      count: this.row,
      found: this.row - this.missingCount,
      versions: this.versions.subarray(0, this.row),
      bytes: this.bytes.subarray(0, this.end),
      offsets: this.offsets.subarray(0, this.row + 1),
      missing: this.missingRows.slice(0, this.missingCount),
    };
  }
}
