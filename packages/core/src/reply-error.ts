import { DecodeError, HandlerError, StateTableFullError, type RinggrainError } from './errors.ts';
import { SLOT, SLOT_HEADER_SIZE, SlotFlag } from './protocol.ts';
import type { Ring } from './ring.ts';
import type { StateLoadError } from './store/errors.ts';
import { TURN_ERROR, decodeTurnError, type TurnErrorValue } from './turn-error.ts';

/** The load failures a reply may name, by StateLoadError.failureId. */
export interface LoadFailures {
  byId(id: number): StateLoadError | undefined;
}

/**
 * The typed error of a failed or refused turn's reply (SlotFlag.ERROR / REJECTED): built on the host from
 * its code and fields (turn-error.ts), never from the message's text.
 */
export function errorOfReply(
  ring: Ring,
  slot: number,
  flags: number,
  grain: string,
  method: string,
  loads: LoadFailures,
): RinggrainError {
  const refused = `${grain}.${method}${ring.dv.getUint32(slot + SLOT.corr, true) === 0 ? '' : ' refused the message'}`;
  const length = Math.min(ring.dv.getUint32(slot + SLOT.length, true), ring.payloadCapacity);
  const start = slot + SLOT_HEADER_SIZE;
  const data = decodeTurnError(ring.u8, ring.dv, start, start + length);
  const rejected = (flags & SlotFlag.REJECTED) !== 0;
  if (!data)
    return rejected
      ? new DecodeError(`${refused}: (unreadable reason)`)
      : new HandlerError(
          grain,
          method,
          `(unreadable error payload, type byte 0x${(ring.u8[start] ?? 0).toString(16)})`,
        );
  return build(data.code, data.fields, grain, method, refused, loads);
}

function text(fields: readonly TurnErrorValue[], at: number): string {
  const v = fields[at];
  return typeof v === 'string' ? v : v === undefined ? '' : String(v);
}

function build(
  code: number,
  fields: readonly TurnErrorValue[],
  grain: string,
  method: string,
  refused: string,
  loads: LoadFailures,
): RinggrainError {
  switch (code) {
    case TURN_ERROR.HANDLER:
      return new HandlerError(grain, method, text(fields, 0));
    case TURN_ERROR.DECODE:
      return new DecodeError(`${refused}: ${text(fields, 0)}`);
    case TURN_ERROR.STATE_TABLE_FULL:
      return new StateTableFullError(grain, Number(fields[0]));
    case TURN_ERROR.STATE_LOAD: {
      const found = typeof fields[0] === 'number' ? loads.byId(fields[0]) : undefined;
      // Past the host's memory of failures (system.loadFailures keeps the latest): the text still says what failed.
      return found ?? new HandlerError(grain, method, text(fields, 1));
    }
    default:
      return new HandlerError(grain, method, `turn error code ${code}: ${JSON.stringify(fields)}`);
  }
}
