/**
 * A kernel consumer thread's own reader of an int-keyed table (core store/types.ts LaneReader): the
 * same LMDB environment opened in that thread, one chunk read per actor's first message, synchronous,
 * so an actor's activation needs no hop through the host. Reads always see the latest commit.
 */
import { open, type Database, type RootDatabase } from 'lmdb';
import { CHUNK, StateDecodeError, chunkOf, parseChunk, rowOf, stateEnd, stateStart, versionAt, type LaneReader } from '@ringgrain/core';
import { KIND } from './errors.ts';

export interface LaneReaderOptions {
  readonly path: string;
  readonly maxDbs: number;
  readonly table: string;
  readonly stateSize: number;
}

export function openLaneReader(options: LaneReaderOptions): LaneReader {
  const env: RootDatabase = open({ path: options.path, compression: false, maxDbs: options.maxDbs });
  const db: Database<Buffer, number> = env.openDB<Buffer, number>({ name: options.table, encoding: 'binary', compression: false });
  return {
    get(key) {
      // lmdb-js keeps a read snapshot until a timer tick: start a fresh one (the host may have committed since).
      db.resetReadTxn();
      const raw = db.getBinaryFast(chunkOf(key));
      if (raw === undefined) return undefined;
      const c = parseChunk(raw.subarray(0, raw.length));
      if (typeof c === 'string') throw new StateDecodeError(KIND, options.table, key, c);
      const r = rowOf(c, key - chunkOf(key) * CHUNK);
      if (r < 0) return undefined;
      const version = versionAt(c, r);
      const s = stateStart(c, r);
      const e = stateEnd(c, r);
      if (!Number.isSafeInteger(version) || version < 1 || e - s !== options.stateSize) throw new StateDecodeError(KIND, options.table, key, `version ${version}, ${e - s} bytes`);
      return { version, bytes: c.buf.slice(s, e) };
    },
    close() {
      void env.close();
    },
  };
}
