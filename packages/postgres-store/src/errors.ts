import { StateStoreError, StateStoreFullError, StateStoreUnavailableError } from '@ringgrain/core/store';
import { RinggrainError } from '@ringgrain/core';

export const KIND = 'postgres';

/** SQLSTATE of a server error; undefined for a client-side failure (a refused or lost connection). */
function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * A failure as a typed error. `committing`: the error came from COMMIT itself, so a lost connection
 * leaves the outcome unknown. Typed errors pass through.
 */
export function pgError(err: unknown, where: string, location: string, committing = false): Error {
  if (err instanceof RinggrainError) return err;
  const message = String((err as Error)?.message ?? err);
  const state = sqlState(err);
  // Class 53: insufficient resources (53100 disk_full, 53200 out_of_memory, 53400 configuration_limit_exceeded).
  if (state?.startsWith('53'))
    return new StateStoreFullError(KIND, location, `${where}: ${message} (SQLSTATE ${state})`, { cause: err });
  // Class 08: connection exceptions; 57P0x: the server is shutting down or starting; 3D000: no such database; 28:
  // authentication.
  const lost =
    state === undefined &&
    /ECONN|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|terminated|Connection ended|timeout/i.test(
      `${String((err as { code?: unknown })?.code)} ${message}`,
    );
  if (
    lost ||
    (state !== undefined &&
      (state.startsWith('08') || state.startsWith('57P') || state === '3D000' || state.startsWith('28')))
  ) {
    return new StateStoreUnavailableError(KIND, location, `${where}: ${message}`, {
      cause: err,
      outcomeUnknown: committing && lost,
    });
  }
  return new StateStoreError('STATE_STORE_SQL', KIND, `${where}: ${message} (SQLSTATE ${state})`, {
    hint: "the transaction was rolled back: nothing of the batch was written; the cause is the server's error",
    cause: err,
  });
}
