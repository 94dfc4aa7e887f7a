import { StateStoreError, StateStoreFullError } from '@ringgrain/core/store';
import { RinggrainError } from '@ringgrain/core';

export const KIND = 'lmdb';

/**
 * Error codes that mean the file could not grow: LMDB's own MDB_MAP_FULL, the disk (ENOSPC), a file-size
 * limit (EFBIG), and EIO, which LMDB returns for a short write (the file system took fewer bytes than
 * written, as a full disk does).
 */
const FULL = new Set<unknown>([5, 27, 28, -30792, 'EIO', 'EFBIG', 'ENOSPC', 'MDB_MAP_FULL']);

function codeOf(err: unknown): unknown {
  return (err as { code?: unknown } | null)?.code;
}

/** A failed write transaction as a typed error (typed errors pass through). */
export function writeError(err: unknown, where: string): Error {
  if (err instanceof RinggrainError) return err;
  const message = String((err as Error)?.message ?? err);
  if (FULL.has(codeOf(err)) || /MDB_MAP_FULL|No space left|File too large/i.test(message)) {
    return new StateStoreFullError(KIND, where, message, { cause: err });
  }
  return new StateStoreError('STATE_STORE_IO', KIND, `${where}: ${message}`, {
    hint: 'the write transaction was aborted: nothing of the batch was written; the cause says why',
    cause: err,
  });
}
