import { ReplyTargetError, RinggrainError } from '../errors.ts';
import type { Schema } from '../schema/types.ts';
import { decodeValue } from './codec.ts';
import type { RouterCounts } from './counts.ts';
import { SiloUnavailableError } from './errors.ts';
import { remoteError } from './wire.ts';

/** An ask this process sent to another silo, waiting for its reply by correlation id. */
export interface RemoteAsk {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  /** The silo it went to ('' while it is parked). */
  silo: string;
  grain: string;
  method: string;
  deadline: number;
  into: Readonly<Record<string, unknown>> | undefined;
  /** The reply's schema (replies travel as its bytes). */
  reply: Schema | undefined;
  /** A control question (control.ts): its answer is taken as it came. */
  raw?: boolean;
}

/** The asks waiting for replies from other silos: settled by a reply, a silo's death, their deadline, or close. */
export class PendingAsks {
  private readonly pending = new Map<number, RemoteAsk>();
  private corr = 0;

  constructor(private readonly counts: RouterCounts) {}

  get size(): number {
    return this.pending.size;
  }

  /** A new correlation id (never 0: 0 marks a tell). */
  next(): number {
    this.corr = this.corr >= 0x7fffffff ? 1 : this.corr + 1;
    return this.corr;
  }

  add(corr: number, ask: RemoteAsk): void {
    this.pending.set(corr, ask);
  }

  /** The ask `corr` went (on) to `silo` (a death of that silo fails it). */
  sentTo(corr: number, silo: string): void {
    const p = this.pending.get(corr);
    if (p) p.silo = silo;
  }

  /** A reply from `from`: the value decoded by the reply's schema (into the caller's arrays), or its error typed. */
  settle(from: string, corr: number, ok: 0 | 1, v: unknown): void {
    const p = this.pending.get(corr);
    if (!p) {
      this.counts.lateReplies++;
      return;
    }
    this.pending.delete(corr);
    if (ok && p.raw) p.resolve(v);
    else if (ok) {
      let value: unknown;
      try {
        value = p.reply ? decodeValue(p.reply, v, p.grain, `${p.method} reply`) : undefined;
        if (p.into) value = copyInto(value, p.into);
      } catch (e) {
        p.reject(e as Error);
        return;
      }
      p.resolve(value);
    } else if (v instanceof Error) p.reject(v);
    else p.reject(remoteError(from, v));
  }

  /** Silo `id` died: its asks fail with SiloUnavailableError. */
  siloDied(id: string): void {
    for (const [corr, p] of this.pending) {
      if (p.silo !== id) continue;
      this.pending.delete(corr);
      this.counts.asksFailedDead++;
      p.reject(new SiloUnavailableError(p.grain, p.method, id, 'died'));
    }
  }

  /** Asks past their deadline fail with ASK_TIMEOUT. */
  expire(now: number, timeoutMs: number): void {
    for (const [corr, p] of this.pending) {
      if (p.deadline > now) continue;
      this.pending.delete(corr);
      p.reject(
        new RinggrainError(
          'ASK_TIMEOUT',
          `${p.grain}.${p.method}: no reply from silo ${p.silo || '(none yet)'} within ${timeoutMs} ms`,
          { hint: 'the owner may be overloaded or partitioned; raise askTimeoutMs' },
        ),
      );
    }
  }

  failAll(error: Error): void {
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
  }
}

/**
 * An ask with `into`: the reply's numeric arrays land in the caller's own (or views of their first n
 * elements); one too short fails the reply with ReplyTargetError, as a local reply does (msgpack-decode.ts).
 */
function copyInto(v: unknown, into: Readonly<Record<string, unknown>>): unknown {
  if (v === null || typeof v !== 'object') return v;
  const out = v as Record<string, unknown>;
  for (const [f, arr] of Object.entries(into)) {
    const src = out[f] as ArrayLike<number> | undefined;
    const dst = arr as
      | { set(a: ArrayLike<number>): void; subarray(a: number, b: number): unknown; length: number }
      | undefined;
    if (!dst || !src) continue;
    if (src.length > dst.length)
      throw new ReplyTargetError(f, `the reply's ${f} has ${src.length} elements, into.${f} holds ${dst.length}`);
    dst.set(src);
    out[f] = src.length === dst.length ? dst : dst.subarray(0, src.length);
  }
  return out;
}
