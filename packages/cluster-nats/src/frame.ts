import { Packr } from 'msgpackr';
import { MalformedFrameError } from './errors.ts';

/**
 * A frame: msgpack of [FRAME_VERSION, sender silo id, entries[]] (entries: core's cluster/types.ts).
 * Plain msgpack (no records), so any msgpack library reads it; typed arrays travel as msgpackr's
 * typed-array extension and come back as the same kind.
 */
export const FRAME_VERSION = 1;

const packr = new Packr({ useRecords: false, moreTypes: true, mapsAsObjects: true, variableMapSize: true });

export function encodeFrame(from: string, entries: readonly unknown[]): Uint8Array {
  return packr.pack([FRAME_VERSION, from, entries]);
}

export function decodeFrame(data: Uint8Array): { from: string; entries: unknown[] } {
  let v: unknown;
  try {
    v = packr.unpack(data);
  } catch (e) {
    throw new MalformedFrameError(`${data.length} bytes that are not msgpack`, { cause: e });
  }
  if (!Array.isArray(v) || v.length !== 3) throw new MalformedFrameError('not a [version, from, entries] array');
  if (v[0] !== FRAME_VERSION) throw new MalformedFrameError(`frame version ${JSON.stringify(v[0])}, this silo reads ${FRAME_VERSION}`);
  if (typeof v[1] !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(v[1])) throw new MalformedFrameError('the sender id is not a silo id');
  if (!Array.isArray(v[2])) throw new MalformedFrameError('entries is not an array');
  return { from: v[1], entries: v[2] };
}
