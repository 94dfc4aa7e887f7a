import { RinggrainError, type ErrorOptions } from '../errors.ts';

/** An ask went to a silo that died (or left) before it replied; the turn may or may not have run (at most once). */
export class SiloUnavailableError extends RinggrainError {
  readonly silo: string;
  constructor(grain: string, method: string, silo: string, reason: string, opts: ErrorOptions = {}) {
    super('SILO_UNAVAILABLE', `${grain}.${method}: silo ${silo} ${reason} before it replied`, {
      hint:
        'delivery is at most once: the ask may have run on that silo; retry it if the method is idempotent ' +
        '(the key now lives on a live silo)',
      ...opts,
    });
    this.silo = silo;
  }
}

/** No live silo hosts the class (nobody registered it, or every host is gone) within the wait. */
export class NoSiloError extends RinggrainError {
  constructor(grain: string, waitedMs: number) {
    super('NO_SILO', `grain "${grain}": no live silo hosts it (waited ${waitedMs} ms)`, {
      hint:
        'start a silo that registers this class (with a backend it can run on), or check the cluster name ' +
        'and server',
    });
  }
}

/** The remote silo's reply was an error: its name, code and message, as the owner raised it. */
export class RemoteGrainError extends RinggrainError {
  readonly remoteName: string;
  readonly silo: string;
  constructor(silo: string, name: string, code: string, message: string) {
    super(code, `${message} (raised by ${name} on silo ${silo})`);
    this.remoteName = name;
    this.silo = silo;
  }
}

/** An entry in a frame that is not one of the entry shapes (types.ts): refused and counted. */
export class MalformedEntryError extends RinggrainError {
  constructor(from: string, detail: string) {
    super('MALFORMED_ENTRY', `a frame from ${from} carried a malformed entry: ${detail}`, {
      hint:
        'only Ringgrain silos and clients of this cluster should publish to its subjects; check who holds ' +
        'its credentials',
    });
  }
}

/** This silo was removed from the membership table by the others; it no longer serves. */
export class SiloEvictedError extends RinggrainError {
  constructor(reason: string) {
    super('SILO_EVICTED', `this silo was declared dead by the cluster: ${reason}`, {
      hint:
        'its heartbeats were later than the dead timeout (a paused process or a partitioned network); ' +
        'restart it, or raise deadMs',
    });
  }
}

/** A cluster option or name is invalid. */
export class ClusterConfigError extends RinggrainError {
  constructor(message: string, opts: ErrorOptions = {}) {
    super('CLUSTER_CONFIG', message, opts);
  }
}

/**
 * A handler's K2K send (ctx.send / ctx.forward) to a key whose partition this silo does not own (another
 * silo owns it, none does now, or this silo waits to be handed it), from a kernel that cannot hand it to
 * the host for routing (a backend without KernelPlan.remoteSend, or a system not joined yet). Run here,
 * the key would be active on two silos, so the send is refused and the turn fails (an ask's caller gets
 * it as the reply; a tell's failure is a tellError event). The message names the code: a handler's error
 * reaches the caller as HandlerError text.
 */
export class ClusterK2KUnsupportedError extends RinggrainError {
  readonly grain: string;
  readonly key: number | string;
  constructor(grain: string, key: number | string, method: string, forward = false, opts: ErrorOptions = {}) {
    super(
      'CLUSTER_K2K_REMOTE',
      `K2K ${forward ? 'forward' : 'send'} to ${grain}.${method} key ${JSON.stringify(key)} refused ` +
        '(CLUSTER_K2K_REMOTE): its partition is not owned by this silo, and the send cannot leave for its ' +
        'owner from here',
      {
        hint:
          'run the class on a backend whose kernels hand cross-silo K2K to the host (cpu, inline), and send ' +
          'after system.start() resolved; or send from application code with refs (docs/cluster.md)',
        ...opts,
      },
    );
    this.grain = grain;
    this.key = key;
  }
}
