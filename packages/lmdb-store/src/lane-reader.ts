/**
 * A kernel consumer thread's own reader of an int-keyed table (core store/types.ts LaneReader): the
 * same LMDB environment opened in that thread, one chunk read per actor's first message, synchronous,
 * so an actor's activation needs no hop through the host. Reads always see the latest commit.
 */
import { open, type Database, type RootDatabase } from 'lmdb';
import type { LaneReader } from '@ringgrain/core/store';
import { readRow } from './chunk-table.ts';

export interface LaneReaderOptions {
  readonly path: string;
  readonly maxDbs: number;
  readonly table: string;
  readonly stateSize: number;
}

export function openLaneReader(options: LaneReaderOptions): LaneReader {
  const env: RootDatabase = open({ path: options.path, compression: false, maxDbs: options.maxDbs });
  const db: Database<Buffer, number> = env.openDB<Buffer, number>({
    name: options.table,
    encoding: 'binary',
    compression: false,
  });
  const spec = { name: options.table, keyKind: 'int', stateSize: options.stateSize } as const;
  return {
    get(key) {
      // lmdb-js keeps a read snapshot until a timer tick: start a fresh one (the host may have committed since).
      db.resetReadTxn();
      const row = readRow(db, spec, key);
      return row && { version: row.version, bytes: row.state };
    },
    close() {
      void env.close();
    },
  };
}
