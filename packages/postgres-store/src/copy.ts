/**
 * PostgreSQL's binary COPY format, both ways: batches go to the server as COPY ... FROM STDIN (FORMAT
 * binary) (no per-row statement, no text escaping of bytea) and come back as COPY (SELECT ...) TO STDOUT.
 */
import { stateAt, type StateKey, type StateRows } from '@ringgrain/core/store';

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const CHUNK_ROWS = 16_384;

/** The stage rows of a batch: (row int4, key int8|text, expected int8, state bytea), `state` left out when absent. */
export interface StageRows {
  readonly n: number;
  readonly keys: ArrayLike<StateKey>;
  readonly stringKeys: boolean;
  readonly expected?: ArrayLike<number>;
  readonly states?: StateRows;
  /** Which rows, in which order (null: all, in order). */
  readonly order?: Uint32Array | null;
}

/** The batch as binary COPY chunks of about CHUNK_ROWS rows each. */
export function* copyChunks(s: StageRows): Generator<Buffer> {
  const head = Buffer.alloc(SIGNATURE.length + 8);
  SIGNATURE.copy(head);
  yield head;
  const fields = 2 + (s.expected ? 1 : 0) + (s.states ? 1 : 0);
  const encodedKeys = s.stringKeys ? new Array<Buffer>(Math.min(CHUNK_ROWS, s.n)) : undefined;
  for (let j0 = 0; j0 < s.n; j0 += CHUNK_ROWS) {
    const j1 = Math.min(s.n, j0 + CHUNK_ROWS);
    let size = 0;
    for (let j = j0; j < j1; j++) {
      const i = s.order ? s.order[j]! : j;
      size += 2 + 8 + (s.expected ? 12 : 0);
      if (encodedKeys) {
        const k = Buffer.from(s.keys[i] as string, 'utf8');
        encodedKeys[j - j0] = k;
        size += 4 + k.length;
      } else size += 12;
      if (s.states) size += 4 + stateAt(s.states, i).length;
    }
    const b = Buffer.allocUnsafe(size);
    let o = 0;
    for (let j = j0; j < j1; j++) {
      const i = s.order ? s.order[j]! : j;
      o = b.writeInt16BE(fields, o);
      o = b.writeInt32BE(4, o);
      o = b.writeInt32BE(i, o);
      if (encodedKeys) {
        const k = encodedKeys[j - j0]!;
        o = b.writeInt32BE(k.length, o);
        o += k.copy(b, o);
      } else {
        o = b.writeInt32BE(8, o);
        o = b.writeBigInt64BE(BigInt(s.keys[i] as number), o);
      }
      if (s.expected) {
        o = b.writeInt32BE(8, o);
        o = b.writeBigInt64BE(BigInt(s.expected[i]!), o);
      }
      if (s.states) {
        const st = stateAt(s.states, i);
        o = b.writeInt32BE(st.length, o);
        b.set(st, o);
        o += st.length;
      }
    }
    yield b;
  }
  const tail = Buffer.alloc(2);
  tail.writeInt16BE(-1);
  yield tail;
}

/** Reads binary COPY output: calls `row` with the buffer and each field's [start, end) (start -1: NULL). */
export function readCopy(data: Buffer, fields: number, row: (b: Buffer, at: Int32Array) => void): number {
  if (data.length < SIGNATURE.length + 8 || !data.subarray(0, SIGNATURE.length).equals(SIGNATURE))
    throw new Error('not binary COPY output');
  let o = SIGNATURE.length + 4;
  o += 4 + data.readInt32BE(o); // header extension
  const at = new Int32Array(fields * 2);
  let rows = 0;
  for (;;) {
    const count = data.readInt16BE(o);
    o += 2;
    if (count === -1) return rows;
    if (count !== fields) throw new Error(`a COPY row of ${count} fields, expected ${fields}`);
    for (let f = 0; f < fields; f++) {
      const len = data.readInt32BE(o);
      o += 4;
      at[2 * f] = len < 0 ? -1 : o;
      at[2 * f + 1] = len < 0 ? -1 : o + len;
      if (len > 0) o += len;
    }
    row(data, at);
    rows++;
  }
}
