import type { EventEmitter } from 'eventemitter3';
import type { Logger } from 'pino';

/**
 * The engine-neutral cluster contract. Core routes messages by it and names no engine: an engine
 * (`@ringgrain/cluster-nats`) implements `Cluster`, keeps the membership view and the placement tables,
 * and moves frames of entries between silos. Core decides what is local, sends the rest, and answers
 * what arrives.
 */

/** One member of the cluster as the membership table holds it. */
export interface SiloInfo {
  readonly id: string;
  /** Grain classes this silo hosts, by name → the backend it runs them on ('cpu', 'cuda', ...). Empty for a client. */
  readonly grains: Readonly<Record<string, string>>;
  /** A client (a system hosting no classes): it sends into the cluster and is never an owner. */
  readonly client?: boolean;
}

/**
 * A class's partition → silo table: a key hashes to one of `owners.length` partitions (partition.ts);
 * `owners[p]` is the silo id that owns partition p ('' while none can), `epochs[p]` counts its ownership
 * changes (fences a stale owner). `version` grows with every write of the table.
 */
export interface PartitionTable {
  readonly grain: string;
  readonly version: number;
  readonly owners: readonly string[];
  readonly epochs: readonly number[];
}

/** Entries travel in frames (many per frame, FIFO per destination); the engine encodes them. */
export const EntryKind = {
  /** [0, grain, method, key, payload, corr (0: a tell), origin silo, hops] */
  Message: 0,
  /** [1, corr, ok (1/0), value | { name, code, message }] */
  Reply: 1,
  /** [2, tells accepted from the receiver of this ack, cumulative] */
  Ack: 2,
  /** [3, grain, table version]: the sender lost partitions of `grain` to the receiver and wrote their states. */
  HandOff: 3,
  /** [4, corr, op, arg]: a question about the receiver's system (control.ts: metrics, idle), answered by a Reply. */
  Control: 4,
} as const;
export type MessageEntry = [0, string, string, number | string, unknown, number, string, number];
export type ReplyEntry = [1, number, 0 | 1, unknown];
export type AckEntry = [2, number];
export type HandOffEntry = [3, string, number];
export type ControlEntry = [4, number, string, unknown];
export type Entry = MessageEntry | ReplyEntry | AckEntry | HandOffEntry | ControlEntry;

export interface ClusterConnectionEvents {
  /** A silo (or client) appeared in the membership table. */
  join: (s: SiloInfo) => void;
  /** A silo left: 'left' when it said so, 'dead' when its heartbeats stopped and a survivor removed it. */
  leave: (s: SiloInfo, reason: 'left' | 'dead') => void;
  /** A placement table was written (any class); `table()` returns it from now on. */
  table: (t: PartitionTable) => void;
  /** A frame from `from` arrived: its entries, in the order sent. */
  entries: (from: string, entries: unknown[]) => void;
  /** A frame did not decode (or had no entries array): refused, counted, the silo keeps serving. */
  frameError: (e: { from: string | undefined; error: Error }) => void;
  /** This silo was declared dead by the others (its heartbeats were late): it must stop serving. */
  evicted: (e: { reason: string }) => void;
}

/** A live connection of one silo (or client) to the cluster. */
export interface ClusterConnection extends EventEmitter<ClusterConnectionEvents> {
  readonly self: string;
  /**
   * Joins: announces this member and starts following membership and placement. Called once the router
   * listens, so no event or entry is missed (the member is unknown to the others until then).
   */
  start(): Promise<void>;
  /** Members alive now (self included). */
  live(): readonly SiloInfo[];
  /** The newest table of a class, or undefined while none was written. */
  table(grain: string): PartitionTable | undefined;
  /** Queues an entry for silo `to`; entries for one destination leave in order, batched into frames. */
  send(to: string, entry: Entry): void;
  /** Engine figures (frames and bytes in and out, refused frames) for `system.cluster.metrics()`. */
  metrics(): Record<string, number>;
  /** Leaves the membership table (others see 'left'), waits until no table names this silo (bounded), closes. */
  close(opts?: { drainMs?: number }): Promise<void>;
}

/** What a silo announces when it joins. */
export interface JoinRequest {
  readonly grains: Readonly<Record<string, string>>;
  readonly client: boolean;
  readonly logger: Logger;
}

/** A cluster engine (e.g. `natsCluster({ servers, name })`): `SystemOptions.cluster`. */
export interface Cluster {
  readonly engine: string;
  /** Connects (not yet a member: `start()` joins). */
  join(req: JoinRequest): Promise<ClusterConnection>;
}
