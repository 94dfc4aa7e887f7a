import {
  Ring,
  SLOT,
  SLOT_HEADER_SIZE,
  SlotFlag,
  SlotWriter,
  describeSchema,
  laneOfKey,
  splitKeyHi,
  splitKeyLo,
  type AnyGrainClass,
  type GrainDef,
  type MethodDef,
  type RemoteSend,
} from '@ringgrain/core/backend';
import { ClusterK2KUnsupportedError } from '@ringgrain/core/errors';
import { OwnershipView } from '@ringgrain/core/cluster';
import { fixedWriter, type FixedWrite } from '@ringgrain/core/backend';
import { K2KTargetError } from './errors.ts';
import type { K2KOut } from './k2k-outbox.ts';

/**
 * A lane's K2K sends (ctx.send, ctx.forward) as a turn makes them: the target checked (class on this
 * backend, method, key kind, a forward's reply schema), the message encoded once into a scratch slot,
 * then handed to the outbox (k2k-outbox.ts) for the target lane (core laneOfKey). In a cluster, a key
 * whose partition another silo owns goes to the host instead.
 */
export class K2KSender {
  private readonly grainIds = new Map<string, number>();
  private readonly writer = new SlotWriter();
  private readonly scratch: Ring;
  private readonly scratchSlot: number;
  /** In a cluster: per K2K target class by id, which of its keys this silo owns (others are refused: owned). */
  private readonly ownership: ReadonlyArray<OwnershipView | undefined> | undefined;
  /** Per K2K target class id, per method id: its fixed-image writer (null: none; undefined: not looked up). */
  private readonly fixedWriters: Array<Array<FixedWrite | null | undefined> | undefined> = [];

  constructor(
    private readonly grainId: number,
    private readonly self: GrainDef,
    private readonly defsById: ReadonlyArray<GrainDef | undefined>,
    slotSize: number,
    private readonly out: K2KOut,
    private readonly counts: { k2kSent: number },
    ownership: ReadonlyArray<SharedArrayBuffer | undefined> | undefined,
    private readonly remoteSend: RemoteSend | undefined,
    /** Reads the lane owner's control messages now (a new peer list may be waiting). */
    private readonly pollControl: () => void,
    /** remoteSend takes the payload's bytes (a view of the scratch slot, valid during the call), not the object. */
    private readonly remoteBytes = false,
  ) {
    defsById.forEach((d, i) => d && this.grainIds.set(d.name, i));
    this.scratch = Ring.format(new SharedArrayBuffer(2 * slotSize + 512), 0, 2, slotSize);
    this.scratchSlot = this.scratch.slotAt(0);
    this.ownership = ownership?.map((b) => (b ? new OwnershipView(b) : undefined));
  }

  /**
   * K2K: encode once into scratch, then into the target's ring (or its overflow queue, in order). `corr`:
   * a forward's ask (0: a tell); `current`: the method of the turn sending it; `time`: the turn's clock.
   */
  send(
    grain: AnyGrainClass,
    key: number | string,
    methodName: string,
    payload: unknown,
    corr: number,
    current: MethodDef | undefined,
    time: number,
  ): void {
    const targetName = grain?.grain?.name;
    const targetId = targetName === undefined ? undefined : this.grainIds.get(targetName);
    if (targetId === undefined) throw new K2KTargetError(String(targetName), 'it is not on this backend');
    const target = this.defsById[targetId]!;
    const method = target.methodByName.get(methodName);
    if (!method) throw new K2KTargetError(target.name, `it has no method "${methodName}"`);
    if (corr !== 0) {
      const mine = current?.reply;
      if (!mine || !method.reply || describeSchema(mine) !== describeSchema(method.reply)) {
        throw new K2KTargetError(
          target.name,
          `forward needs ${target.name}.${methodName} to reply with the same schema ` +
            `as ${this.self.name}.${current?.name}`,
        );
      }
    }
    let peer = this.out.peers.get(targetId);
    if (!peer) {
      // A relaunch posts the new peer list before it resolves, but the loop reads its port at most once
      // a millisecond: read it now, before failing a send that the host already made valid.
      this.pollControl();
      peer = this.out.peers.get(targetId);
    }
    if (!peer) throw new K2KTargetError(target.name, 'its kernel is not running');
    const lane = peer.lanes[laneOfKey(key, peer.lanes.length)]!;
    const s = this.scratch;
    const slot = this.scratchSlot;
    if (typeof key === 'string') {
      if (target.keyKind !== 'string') throw new K2KTargetError(target.name, 'it has integer keys');
      // A lone surrogate would arrive as U+FFFD: another key's actor, in the lane of this one (system.ts checkKey).
      if (!key.isWellFormed())
        throw new K2KTargetError(target.name, `invalid key ${JSON.stringify(key)} (a lone surrogate)`);
      const h = {
        method: method.id,
        flags: corr ? SlotFlag.ASK : 0,
        corr,
        keyLo: 0,
        keyHi: 0,
        sender: this.grainId,
        grain: targetId,
      };
      this.writer.write(s, slot, h, method.request, payload, target.name, methodName, key);
    } else {
      if (target.keyKind === 'string' || !Number.isSafeInteger(key))
        throw new K2KTargetError(target.name, `invalid key ${key}`);
      // An all-scalar request as the host's fixed image (core tell-image.ts; the target reads it at fixed
      // offsets); anything else, or a payload the fixed writer refuses, through the general encoder.
      const fixed = this.fixedWriterOf(targetId, method, s.payloadCapacity);
      if (fixed?.(s.i32, s.dv, s.u8, slot, payload, key, corr, time)) {
        s.dv.setUint32(slot + SLOT.sender, this.grainId, true);
      } else {
        const h = {
          method: method.id,
          flags: corr ? SlotFlag.ASK : 0,
          corr,
          keyLo: splitKeyLo(key),
          keyHi: splitKeyHi(key),
          sender: this.grainId,
          grain: targetId,
        };
        this.writer.write(s, slot, h, method.request, payload, target.name, methodName);
      }
    }
    s.dv.setFloat64(slot + SLOT.time, time, true);
    // Checked once encoded: a payload that does not fit its schema fails the turn here, wherever the key lives.
    if (!this.owned(targetId, target.name, key, methodName, payload, corr)) return;
    const len =
      SLOT_HEADER_SIZE +
      s.dv.getUint32(slot + SLOT.length, true) +
      (typeof key === 'string' ? s.dv.getUint32(slot + SLOT.keyHi, true) : 0);
    this.counts.k2kSent++;
    this.out.send(lane, s.i32, slot >> 2, (len + 3) >> 2);
  }

  /**
   * In a cluster, a K2K send runs here only when this silo owns the key's partition: anywhere else the key
   * would be active on two silos. A send to a key not owned here goes to the host, which routes it to the
   * owner (false: nothing more to do here): a tell, or a forward with the host ask's corr (the reply
   * obligation moves with it). Refused (the turn fails) where the host takes none.
   */
  private owned(
    targetId: number,
    target: string,
    key: number | string,
    method: string,
    payload: unknown,
    corr: number,
  ): boolean {
    const own = this.ownership?.[targetId];
    if (own === undefined || own.owns(key)) return true;
    if (this.remoteSend === undefined) throw new ClusterK2KUnsupportedError(target, key, method, corr !== 0);
    if (this.remoteBytes) {
      // The bytes just encoded into scratch (send() wrote them before asking): the payload, less the header.
      const at = this.scratchSlot + SLOT_HEADER_SIZE;
      const n = this.scratch.dv.getUint32(this.scratchSlot + SLOT.length, true);
      this.remoteSend(targetId, method, key, this.scratch.u8.subarray(at, at + n), corr, true);
    } else this.remoteSend(targetId, method, key, payload, corr);
    return false;
  }

  private fixedWriterOf(targetId: number, method: MethodDef, payloadCapacity: number): FixedWrite | null {
    const byMethod = (this.fixedWriters[targetId] ??= []);
    let w = byMethod[method.id];
    if (w === undefined) byMethod[method.id] = w = fixedWriter(method, targetId, payloadCapacity);
    return w;
  }
}
