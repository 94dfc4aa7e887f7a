import { DecodeError } from '../errors.ts';
import { HOOK_METHOD, KERNEL_RECORD, type GrainDef, type MethodDef } from '../grain.ts';
import { rejectAsk, resolveAsk } from '../pending.ts';
import { SLOT, SlotFlag } from '../protocol.ts';
import { errorOfReply, type LoadFailures } from '../reply-error.ts';
import type { Ring } from '../ring.ts';
import { SlotReader } from '../slot.ts';
import type { SpillDrain } from './spill-drain.ts';
import type { SystemState } from './state.ts';

/** Activation hooks as methods for error reports (their failures arrive as tell errors). */
const HOOK_DEF = {
  onActivate: { id: HOOK_METHOD.onActivate, name: 'onActivate', request: undefined as never, reply: undefined },
  onDeactivate: { id: HOOK_METHOD.onDeactivate, name: 'onDeactivate', request: undefined as never, reply: undefined },
} satisfies Record<string, MethodDef>;

/**
 * The reply pump: drains every kernel's reply rings (settling asks, turning failed tells into tellError
 * events) and the sends that wait for ring space; spins briefly while asks wait, then sleeps until the
 * backend's reply signal (or the next event-loop turn).
 */
export class ReplyPump {
  private scheduled = false;
  private sleeping = false;
  private readonly reader = new SlotReader();
  /** Late replies (their ask had timed out or was rejected); counted, not lost silently. */
  lateReplies = 0;

  constructor(
    private readonly state: SystemState,
    private readonly spills: SpillDrain,
    /** Failed loads a failed turn's reply names (Persistence.loadLookups). */
    private readonly loadLookups: LoadFailures,
    /** A kernel's record of a reminder set or cleared by a handler (SystemTimers.onReminderRecord). */
    private readonly onReminderRecord: (def: GrainDef | undefined, text: string) => void,
  ) {}

  schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // After the current synchronous burst of sends: a loop of asks is written before anyone waits.
    queueMicrotask(() => this.pump());
  }

  /** Drains reply rings and the backlog; spins briefly while asks wait, then sleeps. */
  private pump(): void {
    this.scheduled = false;
    const { pending, waiting } = this.state;
    const spinUntil = performance.now() + this.state.config.replySpinMicros / 1000;
    for (;;) {
      const got = this.drainReplies();
      if (waiting.size) this.spills.drain();
      if (pending.size === 0 && waiting.size === 0) return;
      if (got === 0 && performance.now() > spinUntil) break;
    }
    this.sleepUntilReplies();
  }

  private sleepUntilReplies(): void {
    if (this.sleeping) return;
    this.sleeping = true;
    const { pending, waiting } = this.state;
    const wakeup = () => {
      this.sleeping = false;
      if (pending.size || waiting.size) this.schedule();
    };
    // CPU backends notify a shared word after publishing replies; otherwise poll on the next turn.
    const signals = new Set(this.state.kernels().map((k) => k.backend.replySignal));
    if (signals.size === 1 && !signals.has(undefined) && waiting.size === 0) {
      const s = [...signals][0]!;
      const seen = Atomics.load(s.words, s.index);
      if (this.drainReplies() > 0 || pending.size === 0) {
        this.sleeping = false;
        if (pending.size) this.schedule();
        return;
      }
      const w = Atomics.waitAsync(s.words, s.index, seen, 20);
      if (w.async) w.value.then(wakeup);
      else wakeup();
    } else {
      setImmediate(wakeup);
    }
  }

  drainReplies(): number {
    let n = 0;
    for (const reg of this.state.regs) {
      const k = reg.kernel;
      if (!k) continue;
      for (const { ring, consumer } of k.replies) {
        // The tail is published every 64 replies and at the end, not per reply: each store is a write
        // the producer (a GPU across PCIe) reads, and a long drain still frees room as it goes.
        let since = 0;
        for (let slot = consumer.peek(); slot >= 0; slot = consumer.peek()) {
          try {
            this.onReply(ring, slot);
          } finally {
            consumer.skip();
          }
          n++;
          if (++since === 64) {
            consumer.publishTail();
            since = 0;
          }
        }
        if (since) consumer.publishTail();
      }
    }
    return n;
  }

  private onReply(ring: Ring, slot: number): void {
    const { events, pending } = this.state;
    const logger = this.state.config.logger;
    const dv = ring.dv;
    const corr = dv.getUint32(slot + SLOT.corr, true);
    const flags = dv.getUint32(slot + SLOT.flags, true);
    const grainId = dv.getUint32(slot + SLOT.grain, true);
    const methodId = dv.getUint32(slot + SLOT.method, true);
    const replier = this.state.regs[grainId]?.def;
    const method =
      replier?.methods[methodId] ??
      (methodId === HOOK_METHOD.onActivate
        ? HOOK_DEF.onActivate
        : methodId === HOOK_METHOD.onDeactivate
          ? HOOK_DEF.onDeactivate
          : undefined);
    if (corr === 0 && methodId === KERNEL_RECORD.reminder && !(flags & (SlotFlag.ERROR | SlotFlag.REJECTED))) {
      this.onReminderRecord(replier, this.reader.text(ring, slot));
      return;
    }
    if (corr === 0) {
      // A tell failed: nobody awaits it, so it becomes an event and a log line, never silence.
      const error = errorOfReply(ring, slot, flags, replier?.name ?? '?', method?.name ?? '?', this.loadLookups);
      // The application that listens for tellError handles it: a debug line then. Otherwise one warn line
      // with the message (a stack from the reply pump says nothing about the sender).
      if (events.listenerCount('tellError') > 0)
        logger.debug({ grain: replier?.name, method: method?.name, code: error.code }, `tell failed: ${error.message}`);
      else
        logger.warn({ grain: replier?.name, method: method?.name, code: error.code }, `tell failed: ${error.message}`);
      events.emit('tellError', { grain: replier?.name ?? '?', method: method?.name ?? '?', error });
      return;
    }
    const p = pending.get(corr);
    if (!p) {
      this.lateReplies++;
      return;
    }
    pending.delete(corr);
    if (flags & (SlotFlag.ERROR | SlotFlag.REJECTED)) {
      rejectAsk(corr, p, errorOfReply(ring, slot, flags, replier?.name ?? '?', method?.name ?? '?', this.loadLookups));
      return;
    }
    if (!method) {
      rejectAsk(corr, p, new DecodeError(`reply names unknown grain ${grainId} / method ${methodId}`));
      return;
    }
    if (!method.reply) {
      resolveAsk(corr, p, undefined);
      return;
    }
    try {
      const b = p.batch;
      if (b?.columns && b.okInPlace && method.reply.kind === 'struct') {
        this.reader.payloadInto(ring, slot, method.reply, corr - b.corrBase, b.columns);
        b.okInPlace(corr - b.corrBase);
      } else resolveAsk(corr, p, this.reader.payload(ring, slot, method.reply, p.into));
    } catch (e) {
      rejectAsk(corr, p, e as Error);
    }
  }
}
