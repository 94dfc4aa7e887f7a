import { EventEmitter } from 'eventemitter3';
import type { KV, KvWatchEntry } from '@nats-io/kv';
import type { Logger } from 'pino';
import type { SiloInfo } from '@ringgrain/core/cluster';

interface Record_ extends SiloInfo {
  readonly beat: number;
  readonly left?: boolean;
}

export interface MembershipEvents {
  join: (s: SiloInfo) => void;
  leave: (s: SiloInfo, reason: 'left' | 'dead') => void;
  evicted: (reason: string) => void;
  /** A heartbeat landed after this member's view had gone stale (current() was false): it may lead again. */
  current: () => void;
}

/**
 * Members in a KV bucket: each writes its record (a compare-and-set on its own revision) every
 * heartbeatMs; every member watches the bucket and, for each other member, when it last saw a heartbeat
 * (by its own clock: no clock skew between hosts matters). A member not seen for deadMs is deleted by
 * the survivors (the delete is conditional on the revision they last saw, so a heartbeat that lands
 * first wins). A delete after a record marked `left` is a leave; any other delete is a death. A member
 * whose own record was deleted, or whose heartbeat CAS fails, was evicted.
 */
export class Membership extends EventEmitter<MembershipEvents> {
  private readonly members = new Map<string, { info: Record_; seen: number; rev: number }>();
  private rev = 0;
  private beat = 0;
  private timer: ReturnType<typeof setInterval> | undefined;
  private stopping = false;
  private evicted = false;
  private watching: Promise<void> | undefined;
  private watcher: { stop(): void } | undefined;
  private synced!: () => void;
  private readonly sync = new Promise<void>((r) => (this.synced = r));

  constructor(
    private readonly kv: KV,
    private readonly self: SiloInfo,
    private readonly heartbeatMs: number,
    private readonly deadMs: number,
    private readonly logger: Logger,
  ) {
    super();
  }

  /** When the last heartbeat of this member landed (performance.now()). */
  private lastOk = Number.NEGATIVE_INFINITY;

  /**
   * Whether this member's own record is known alive: its last heartbeat landed within deadMs and it was not
   * evicted. A process paused longer than that (a GC pause, a stopped VM) may have been declared dead by
   * the others while it slept: until a heartbeat lands again, it must not write placement.
   */
  current(): boolean {
    return !this.evicted && !this.stopping && performance.now() - this.lastOk < this.deadMs;
  }

  live(): SiloInfo[] {
    return [...this.members.values()].map((m) => m.info);
  }

  async start(): Promise<void> {
    const w = await this.kv.watch();
    this.watcher = w;
    this.watching = (async () => {
      for await (const e of w) this.onEntry(e);
    })().catch((e: unknown) => {
      if (!this.stopping) this.logger.error({ err: e }, 'cluster: membership watch ended');
    });
    this.rev = await this.kv.create(this.self.id, this.encode());
    this.lastOk = performance.now();
    // The watch is ordered: once our own record arrived, every record written before it has too.
    await this.sync;
    this.timer = setInterval(() => void this.tick(), Math.min(this.heartbeatMs, this.deadMs / 4));
    this.timer.unref();
  }

  private encode(left = false): string {
    return JSON.stringify({ ...this.self, beat: ++this.beat, ...(left ? { left: true } : {}) });
  }

  private lastBeat = 0;
  private beating = false;
  private async tick(): Promise<void> {
    const now = performance.now();
    if (!this.stopping && !this.evicted && !this.beating && now - this.lastBeat >= this.heartbeatMs - 5) {
      this.lastBeat = now;
      this.beating = true;
      try {
        this.rev = await this.kv.update(this.self.id, this.encode(), this.rev);
        const stale = !this.current();
        this.lastOk = performance.now();
        if (stale && this.current()) this.emit('current');
      } catch (e) {
        // A CAS that failed: evicted only if our record is gone (a delete by the survivors).
        const cur = await this.kv.get(this.self.id).catch(() => null);
        if (cur && cur.operation === 'PUT') this.rev = cur.revision;
        else if (!this.stopping && !this.evicted) this.evict(`its record was removed (${(e as Error).message})`);
      } finally {
        this.beating = false;
      }
    }
    if (this.stopping || this.evicted) return;
    for (const [id, m] of this.members) {
      if (id === this.self.id || performance.now() - m.seen <= this.deadMs) continue;
      m.seen = performance.now(); // one delete per deadMs at most
      this.logger.warn(
        { silo: id, deadMs: this.deadMs },
        `cluster: silo ${id} missed its heartbeats for ${this.deadMs} ms; declaring it dead`,
      );
      this.kv.delete(id, { previousSeq: m.rev }).catch(() => {
        // Another survivor deleted it first, or it heartbeat meanwhile: the watch tells which.
      });
    }
  }

  private onEntry(e: KvWatchEntry): void {
    const id = e.key;
    if (e.operation === 'PUT') {
      let info: Record_;
      try {
        info = JSON.parse(e.string()) as Record_;
      } catch {
        this.logger.warn({ key: id }, 'cluster: a membership record that is not JSON was ignored');
        return;
      }
      const had = this.members.get(id);
      this.members.set(id, { info, seen: performance.now(), rev: e.revision });
      if (!had && id !== this.self.id) this.emit('join', info);
      if (id === this.self.id) this.synced();
      return;
    }
    const had = this.members.get(id);
    this.members.delete(id);
    if (id === this.self.id) {
      if (!this.stopping && !this.evicted)
        this.evict('the other members removed its record (its heartbeats were late)');
      return;
    }
    if (had) this.emit('leave', had.info, had.info.left ? 'left' : 'dead');
  }

  private evict(reason: string): void {
    this.evicted = true;
    this.logger.error({ silo: this.self.id }, `cluster: this silo was evicted: ${reason}`);
    this.emit('evicted', reason);
  }

  /** Marks the record left, then deletes it (the others see a leave, not a death). */
  async leave(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    if (!this.evicted) {
      try {
        // A heartbeat may be in flight: wait for it, and retry the CAS from the record's revision.
        while (this.beating) await new Promise((r) => setTimeout(r, 5));
        for (let i = 0; ; i++) {
          try {
            this.rev = await this.kv.update(this.self.id, this.encode(true), this.rev);
            break;
          } catch (e) {
            const cur = await this.kv.get(this.self.id);
            if (i === 2 || !cur || cur.operation !== 'PUT') throw e;
            this.rev = cur.revision;
          }
        }
        await this.kv.delete(this.self.id);
      } catch (e) {
        this.logger.warn(
          { err: e },
          'cluster: could not remove this silo from the membership table (the others will time it out)',
        );
      }
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.watcher?.stop();
    await this.watching;
  }
}
