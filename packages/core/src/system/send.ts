import {
  InvalidKeyError,
  KernelNotRunningError,
  ReplyTargetError,
  UnknownGrainError,
  UnknownMethodError,
} from '../errors.ts';
import type { GrainDef, MethodDef } from '../grain.ts';
import type { RingKernel } from '../kernel.ts';
import { rejectAsk, resolveAsk } from '../pending.ts';
import { HOST_SENDER, SLOT, SlotFlag } from '../protocol.ts';
import { SlotWriter, splitKeyHi, splitKeyLo } from '../slot.ts';
import type { SlotTarget } from '../spill.ts';
import { fixedWriter, type FixedWrite } from '../tell-image.ts';
import { isNumericScalar, type Schema } from '../schema/types.ts';
import { KINDS } from '../schema/kinds.ts';
import { LOCAL } from '../cluster/router.ts';
import { remoteRegistration } from '../cluster/attach.ts';
import { ClusterK2KUnsupportedError } from '../cluster/errors.ts';
import type { SendClock } from './send-clock.ts';
import type { Route, SystemState } from './state.ts';

/** Tells and asks written before their seqs are published (ring.ts claimHeld): at most this many a lane. */
const HOLD_RUN = 32;
/**
 * Runs of a burst of encoded sends (a cluster frame's entries, written in one synchronous loop): longer,
 * so a parked consumer is woken a few times a frame, not every 32 slots (a futex wake each on a busy host).
 */
const FRAME_RUN = 256;

/**
 * Single sends: a ref's tell or ask resolved to a route, checked, routed (cluster), written into its
 * lane's ring (or the kernel's spill when the ring is full), and an ask's pending entry made.
 */
export class Sender {
  private readonly writer = new SlotWriter();
  private readonly stringKeys = new Map<GrainDef, Map<string, number>>();
  private corr = 0;
  /** Whether correlation ids ever wrapped around (then a new range is checked against pending asks). */
  private corrWrapped = false;

  constructor(
    private readonly state: SystemState,
    readonly clock: SendClock,
  ) {}

  /** Resolves a grain class and method once; refs keep the result so sends skip the lookups. */
  route(def: GrainDef, methodName: string): Route {
    const reg = this.state.byDef.get(def) ?? (this.state.config.cluster ? remoteRegistration(def) : undefined);
    if (!reg) throw new UnknownGrainError(def.name);
    const method = def.methodByName.get(methodName);
    if (!method) throw new UnknownMethodError(def.name, methodName);
    return { reg, method };
  }

  /**
   * The send path of refs: route resolved when the ref was made. A bad key fails the send (an ask rejects).
   * `encoded`: the payload is the request's schema bytes (a kernel's K2K send for another silo).
   */
  sendRoute(
    route: Route,
    key: number | string,
    payload: unknown,
    ask: boolean,
    into?: Readonly<Record<string, unknown>>,
    encoded = false,
  ): Promise<unknown> | undefined {
    checkKey(route.reg.def, key, route.reg.storage.storage !== undefined);
    if (into !== undefined) checkInto(route.method, into);
    const router = this.state.router;
    if (router !== undefined) {
      const r = router.intercept(route.reg.def, route.method, key, payload, ask, into, encoded);
      if (r !== LOCAL) return r;
    } else if (route.reg.kernel === undefined && this.state.config.cluster)
      throw new KernelNotRunningError(route.reg.def.name, 'not started (the cluster is joined by system.start())');
    return this.sendLocal(route, key, payload, ask, into, encoded);
  }

  /**
   * A kernel's K2K send to a key this silo does not own (KernelPlan.remoteSend), in the order the kernel
   * hands them over (FIFO per sender → actor). A tell is routed to the owner as an application tell is (a
   * failure: a tellError event). A forward (corr: this host's ask that the forwarding turn owed) is routed
   * as an ask, whose reply (or error) settles the original ask: the kernel never replies to it.
   */
  readonly remoteSend = (
    target: number,
    method: string,
    key: number | string,
    payload: unknown,
    corr: number,
    encoded = false,
  ): void => {
    const reg = this.state.regs[target];
    const grain = reg?.def.name ?? String(target);
    const pending = this.state.pending;
    const p = corr !== 0 ? pending.get(corr) : undefined;
    // The forwarded ask already settled (timed out, its lane failed): nothing waits for a reply.
    if (corr !== 0 && p === undefined) return;
    if (p) pending.delete(corr);
    try {
      if (reg === undefined || this.state.router === undefined)
        throw new ClusterK2KUnsupportedError(grain, key, method, corr !== 0);
      const r = this.sendRoute(this.route(reg.def, method), key, payload, p !== undefined, p?.into, encoded) as
        | Promise<unknown>
        | undefined;
      if (p)
        r!.then(
          (v) => resolveAsk(corr, p, v),
          (e: unknown) => rejectAsk(corr, p, e as Error),
        );
      // A tell's wait for ring space (the key moved here meanwhile): its failure is already a tellError.
      else r?.catch(() => {});
    } catch (e) {
      if (p) rejectAsk(corr, p, e as Error);
      else this.state.events.emit('tellError', { grain, method, error: e as Error });
    }
  };

  /**
   * sendRoute without cluster routing: the key is served by this process. `encoded`: `payload` is the
   * request's schema bytes (a message from another silo), copied into the slot as they are.
   */
  sendLocal(
    route: Route,
    key: number | string,
    payload: unknown,
    ask: boolean,
    into?: Readonly<Record<string, unknown>>,
    encoded = false,
  ): Promise<unknown> | undefined {
    const kernel = route.reg.kernel;
    if (!kernel) throw new KernelNotRunningError(route.reg.def.name, 'not started');
    if (!kernel.accepting) kernel.assertAccepting();
    const method = route.method;
    const corr = ask ? this.nextCorr() : 0;
    const lane = kernel.laneOf(key);
    // FIFO per sender → kernel: once anything waits for space in this kernel's rings, later sends wait behind it.
    const spill = this.state.spills.get(kernel);
    let fixed: FixedWrite | null = null;
    if (typeof key === 'number' && !encoded) {
      let f = route.fixed;
      if (f === undefined || f.kernel !== kernel)
        route.fixed = f = {
          kernel,
          write: fixedWriter(method, kernel.grainId, kernel.lanes[0]!.inbound.payloadCapacity),
        };
      fixed = f.write;
    }
    if (
      (spill === undefined || spill.size === 0) &&
      this.tryWrite(kernel, lane, method, key, payload, corr, fixed, encoded)
    ) {
      kernel.sent++;
      return ask ? this.awaitReply(corr, kernel, lane, method, into) : undefined;
    }
    // The ring is full: encode now (a bad payload still throws here) into the kernel's spill.
    const s = spill ?? this.state.spillOf(kernel);
    const { chunk, at } = s.target();
    if (
      fixed === null ||
      !fixed(chunk.i32, chunk.dv, chunk.u8, at, payload, key as number, corr, this.clock.sendTime())
    )
      this.encode(chunk, at, kernel, method, key, payload, corr, encoded);
    const written = s.commit(chunk, at, lane);
    this.state.waiting.add(kernel);
    this.state.schedulePump();
    return ask ? this.awaitReply(corr, kernel, lane, method, into) : written;
  }

  /** Encodes into the lane's next free slot and publishes it; false when the ring is full. Throws on bad input. */
  tryWrite(
    kernel: RingKernel,
    lane: number,
    method: MethodDef,
    key: number | string,
    payload: unknown,
    corr: number,
    fixed: FixedWrite | null = null,
    encoded = false,
  ): boolean {
    const producer = kernel.lanes[lane]!.producer;
    const first = !this.clock.burst;
    const slot = producer.claimHeld();
    if (slot < 0) {
      // Full with slots still held: publish them, so the consumer can make the room we wait for.
      if (producer.held !== 0) {
        producer.releaseHeld();
        kernel.wake(lane);
      }
      return false;
    }
    const r = producer.ring;
    try {
      // The fixed image where it applies; anything it refuses goes through the general encoder (typed errors).
      if (fixed === null || !fixed(r.i32, r.dv, r.u8, slot, payload, key as number, corr, this.clock.sendTime()))
        this.encode(r, slot, kernel, method, key, payload, corr, encoded);
    } catch (e) {
      producer.dropHeld(); // a bad payload: the slot is not ours to publish
      throw e;
    }
    // Published in runs (ring.ts claimHeld): the first send of a synchronous burst at once (a lone ask
    // waits for nothing), then every HOLD_RUN slots and at the burst's end (a microtask), with one wake
    // of the consumer each; head (for observers) at the burst's end.
    if (producer.held >= (encoded ? Math.min(FRAME_RUN, r.capacity >> 2) : HOLD_RUN) || first) {
      producer.releaseHeld();
      kernel.wake(lane);
    }
    if (!this.clock.burst) this.clock.startBurst();
    return true;
  }

  /**
   * Header and payload of one message at `slot` of `ring` (a ring, or a spill chunk); all but seq.
   * `encoded`: the payload is its schema bytes.
   */
  private encode(
    ring: SlotTarget,
    slot: number,
    kernel: RingKernel,
    method: MethodDef,
    key: number | string,
    payload: unknown,
    corr: number,
    encoded = false,
  ): void {
    if (encoded) {
      const str = typeof key === 'string';
      this.writer.writeBytes(
        ring,
        slot,
        {
          method: method.id,
          flags: corr ? SlotFlag.ASK : 0,
          corr,
          keyLo: str ? this.internKey(kernel.def, key) : splitKeyLo(key),
          keyHi: str ? 0 : splitKeyHi(key),
          sender: HOST_SENDER,
          grain: kernel.grainId,
        },
        payload as Uint8Array,
        kernel.def.name,
        method.name,
        str ? key : undefined,
      );
    } else if (typeof key === 'number') {
      this.writer.write(
        ring,
        slot,
        {
          method: method.id,
          flags: corr ? SlotFlag.ASK : 0,
          corr,
          keyLo: splitKeyLo(key),
          keyHi: splitKeyHi(key),
          sender: HOST_SENDER,
          grain: kernel.grainId,
        },
        method.request,
        payload,
        kernel.def.name,
        method.name,
      );
    } else {
      this.writer.write(
        ring,
        slot,
        {
          method: method.id,
          flags: corr ? SlotFlag.ASK : 0,
          corr,
          keyLo: this.internKey(kernel.def, key),
          keyHi: 0,
          sender: HOST_SENDER,
          grain: kernel.grainId,
        },
        method.request,
        payload,
        kernel.def.name,
        method.name,
        key,
      );
    }
    ring.dv.setFloat64(slot + SLOT.time, this.clock.sendTime(), true);
  }

  private internKey(def: GrainDef, key: string): number {
    let table = this.stringKeys.get(def);
    if (!table) this.stringKeys.set(def, (table = new Map()));
    let id = table.get(key);
    if (id === undefined) table.set(key, (id = table.size));
    return id;
  }

  private nextCorr(): number {
    do {
      this.corr = (this.corr + 1) >>> 0;
      if (this.corr === 0) this.corrWrapped = true;
    } while (this.corr === 0 || this.state.pending.has(this.corr));
    return this.corr;
  }

  /** n consecutive correlation ids none of which a pending ask holds (undefined: none free right now). */
  reserveCorrs(n: number): number | undefined {
    for (let tries = 0; tries < 4; tries++) {
      let base = (this.corr + 1) >>> 0;
      if (base === 0 || base + n > 0xffffffff) base = 1;
      let clash = false;
      // Ids are handed out in increasing order, so a clash needs a wrap-around of 2^32 asks; checked anyway.
      if (this.corrWrapped) for (let c = base; c < base + n && !clash; c++) clash = this.state.pending.has(c);
      if (base === 1 && this.corr !== 0) this.corrWrapped = true;
      this.corr = base + n - 1;
      if (!clash) return base;
    }
    return undefined;
  }

  private awaitReply(
    corr: number,
    kernel: RingKernel,
    lane: number,
    method: MethodDef,
    into?: Readonly<Record<string, unknown>>,
  ): Promise<unknown> {
    const deadline = performance.now() + this.state.config.askTimeoutMs;
    return new Promise((resolve, reject) => {
      this.state.pending.set(
        corr,
        into === undefined
          ? { resolve, reject, kernel, lane, method, deadline }
          : { resolve, reject, kernel, lane, method, deadline, into },
      );
      this.state.schedulePump();
    });
  }
}

/** An ask's `into`: each entry names a numeric array field of the reply and is that kind's typed array. */
function checkInto(method: MethodDef, into: Readonly<Record<string, unknown>>): void {
  const reply = method.reply;
  for (const [field, arr] of Object.entries(into)) {
    if (arr === undefined) continue;
    const f = reply?.kind === 'struct' ? (reply.fields[field] as Schema | undefined) : undefined;
    const kind =
      f && (f.kind === 'vec' || f.kind === 'array') && isNumericScalar(f.element) ? f.element.scalar : undefined;
    if (kind === undefined)
      throw new ReplyTargetError(field, `${method.name}'s reply has no numeric array field "${field}"`);
    const Ctor = KINDS[kind].array;
    if (!(arr instanceof Ctor))
      throw new ReplyTargetError(field, `into.${field} must be a ${Ctor.name} (the field is ${kind})`);
  }
}

export function checkKey(def: GrainDef, key: unknown, stored: boolean): void {
  if (def.keyKind === 'string') {
    if (typeof key !== 'string') throw new InvalidKeyError(def.name, key, 'a string');
    // A state store holds no empty key (an LMDB key cannot be empty): with storage, '' used to reach the
    // kernel and then fail every load (StateLoadError) and flush of that actor. Refused at the call.
    if (stored && key.length === 0)
      throw new InvalidKeyError(
        def.name,
        key,
        'a non-empty string (the class has storage, and a state store holds no empty key)',
      );
    // A lone surrogate travels as UTF-8's U+FFFD: the turn would run as another key's actor, in a lane
    // the host picked for this key (two activations of that key on two threads).
    if (!key.isWellFormed()) throw new InvalidKeyError(def.name, key, 'a well-formed string (no lone surrogate)');
  } else if (typeof key !== 'number' || !Number.isSafeInteger(key)) {
    throw new InvalidKeyError(def.name, key, 'a safe integer');
  }
}
