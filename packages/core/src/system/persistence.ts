import type { ActorKey, PersistencePlan } from '../backend.ts';
import { KernelNotRunningError, PlacementError } from '../errors.ts';
import type { AnyGrainClass, MethodDef, TypesOf } from '../grain.ts';
import type { RingKernel } from '../kernel.ts';
import { WriteBehind, type FlushResult, type StorageErrorEvent } from '../persist/write-behind.ts';
import { ReminderService } from '../reminders/service.ts';
import type { LoadFailures } from '../reply-error.ts';
import { StateLoadError } from '../store/errors.ts';
import { stateTableSpec } from '../store/scan.ts';
import { ReminderStorageError } from '../timers/errors.ts';
import type { Registration, SystemState } from './state.ts';
import { drained } from '../cluster/drain.ts';

/** Failed loads remembered for turning kernel replies back into StateLoadError (Persistence.loadFailures). */
const LOAD_FAILURES = 64;

/**
 * Persistent state (register(Grain, { storage, flushIntervalMs, idleMs })): each class's store and
 * write-behind, the plan its kernel gets, flush, preload, the cluster handoff, and storage errors.
 */
export class Persistence {
  /**
   * Recent failed loads by StateLoadError.failureId: the kernel rejects an actor's waiting messages with
   * the failure's id (turn-error.ts STATE_LOAD), and the host turns such a reply back into that typed error
   * (the asker gets StateLoadError with its cause, not a HandlerError). Bounded: the newest LOAD_FAILURES.
   */
  private readonly loadFailures = new Map<number, StateLoadError>();

  constructor(
    private readonly state: SystemState,
    /** A reminder's fire (SystemTimers.sendReminder). */
    private readonly sendReminder: (reg: Registration, method: MethodDef, key: ActorKey) => void,
  ) {}

  async openStorage(reg: Registration): Promise<void> {
    const store = reg.storage.storage;
    if (!store || reg.writeBehind) return;
    await store.open();
    const table = await store.table(stateTableSpec(reg.def, 'layout'));
    reg.writeBehind = new WriteBehind(
      reg.def,
      store,
      table,
      () => reg.kernel?.backendKernel,
      (e) => this.reportStorageError(e),
      this.state.config.logger,
    );
    if (reg.def.reminders.length === 0) return;
    if (!store.reminders)
      throw new ReminderStorageError(reg.def.name, `its ${store.kind} store does not keep reminders`);
    const reminders = await store.reminders(stateTableSpec(reg.def, 'layout'));
    // In a cluster a silo loads a partition's reminders when it claims it (system/start.ts), not all at start.
    const config = this.state.config;
    const clustered = config.cluster ? { fence: () => reg.writeBehind?.fence, now: () => config.clock() } : undefined;
    const send = (method: MethodDef, key: ActorKey) => this.sendReminder(reg, method, key);
    reg.reminders = new ReminderService(reg.def, store, reminders, send, (e) => this.reportStorageError(e), clustered);
    if (!clustered) await reg.reminders.load();
  }

  persistencePlan(reg: Registration): PersistencePlan | undefined {
    const wb = reg.writeBehind;
    const idleMs = reg.storage.idleMs;
    if (!wb && idleMs === undefined) return undefined;
    return {
      load: wb !== undefined,
      idleMs,
      host: {
        load: (keys) => wb?.load(keys),
        evicted: (batch) => {
          if (wb) wb.evicted(batch);
          else reg.dropped += batch.keys.length;
        },
        laneLoaded: (keys, versions) => wb?.laneLoaded(keys, versions),
      },
      ...(wb?.laneLoad ? { laneLoad: wb.laneLoad } : {}),
    };
  }

  /** Failed loads a failed turn's reply names by StateLoadError.failureId (every backend sends the id). */
  readonly loadLookups: LoadFailures = { byId: (id) => this.loadFailures.get(id) };

  private reportStorageError(e: StorageErrorEvent): void {
    if (e.error instanceof StateLoadError) {
      this.loadFailures.delete(e.error.failureId);
      this.loadFailures.set(e.error.failureId, e.error);
      if (this.loadFailures.size > LOAD_FAILURES) this.loadFailures.delete(this.loadFailures.keys().next().value!);
    }
    const { events, config } = this.state;
    const line = `${e.grain}: state store ${e.op} failed: ${e.error.message.split('\n')[0]}`;
    const fields = { grain: e.grain, op: e.op, code: (e.error as { code?: string }).code, keys: e.keys.length };
    if (events.listenerCount('storageError') > 0) config.logger.debug(fields, line);
    else config.logger.warn(fields, line);
    events.emit('storageError', e);
  }

  /**
   * KernelHost.beforeStop: before STOP, where the backend asks (BackendKernel.deactivateBeforeStop): every actor not
   * waiting for a load deactivated (onDeactivate) and the states written while the kernel still runs. A kernel
   * whose deactivation failed here is not asked again once stopped (its requests are not answered): the flush
   * after STOP writes what its actors left dirty.
   */
  async beforeStop(kernel: RingKernel): Promise<void> {
    const reg = this.state.regs.find((r) => r.kernel === kernel);
    const impl = kernel.backendKernel;
    if (!reg || !impl?.deactivateIdle || (!reg.writeBehind && reg.storage.idleMs === undefined)) return;
    while (reg.collecting) await reg.collecting;
    try {
      await impl.deactivateIdle(Number.MAX_VALUE, this.state.config.clock());
    } catch (e) {
      this.unanswered.add(kernel);
      const line = `${reg.def.name}: deactivating the actors before stopping failed: ${(e as Error).message}`;
      this.state.config.logger.warn({ err: e, grain: reg.def.name }, `${line}; their dirty states are flushed instead`);
    }
    if (reg.writeBehind) await reg.writeBehind.flush();
  }

  /** Kernels whose deactivation before STOP failed (beforeStop): not asked again once stopped. */
  private readonly unanswered = new WeakSet<RingKernel>();

  /**
   * KernelHost.stopped: a kernel acknowledged STOP at terminate: deactivate every actor (onDeactivate), write states.
   */
  async stopped(kernel: RingKernel): Promise<void> {
    const reg = this.state.regs.find((r) => r.kernel === kernel);
    const impl = kernel.backendKernel;
    if (!reg || !impl?.deactivateIdle || (!reg.writeBehind && reg.storage.idleMs === undefined)) return;
    if (!this.unanswered.has(kernel)) {
      try {
        await impl.deactivateIdle(Number.POSITIVE_INFINITY, this.state.config.clock());
      } catch (e) {
        const line = `${reg.def.name}: deactivating the actors at terminate failed: ${(e as Error).message}`;
        const grain = reg.def.name;
        this.state.config.logger.warn({ err: e, grain }, `${line}; their dirty states are flushed instead`);
      }
    }
    if (reg.writeBehind) await reg.writeBehind.flush();
  }

  /** GrainSystem.flush: every dirty actor's state written, one bulk write per class. */
  async flush(cls?: AnyGrainClass): Promise<FlushResult> {
    const regs = cls ? [this.state.registration(cls)] : this.state.regs;
    let written = 0;
    let kept = 0;
    for (const reg of regs) {
      if (!reg.writeBehind) continue;
      // Actors an idle collection under way deactivates are written by this flush, not the next one.
      while (reg.collecting) await reg.collecting;
      const r = await reg.writeBehind.flush();
      written += r.written;
      kept += r.kept;
      await reg.reminders?.settled();
    }
    return { written, kept };
  }

  /** GrainSystem.preload: stored states uploaded before messages ask for them. */
  async preload<C extends AnyGrainClass>(cls: C, keys?: ReadonlyArray<TypesOf<C>['key']>): Promise<number> {
    const reg = this.state.registration(cls);
    if (!reg.writeBehind)
      throw new PlacementError(`grain "${reg.def.name}" has no storage to preload from`, {
        hint: 'register it with { storage }',
      });
    if (!reg.kernel?.backendKernel) throw new KernelNotRunningError(reg.def.name, 'not launched');
    return reg.writeBehind.preload(keys as readonly ActorKey[] | undefined);
  }

  /**
   * Cluster handoff of a class this silo lost partitions of: every actor not in a turn is deactivated (its
   * state to the write-behind), then written, so the new owners load the newest state. Actors of the
   * partitions kept here reload on their next message.
   */
  async handOff(grain: string): Promise<void> {
    const reg = this.state.regs.find((r) => r.def.name === grain);
    const impl = reg?.kernel?.backendKernel;
    if (!reg?.writeBehind || !impl?.deactivateIdle || reg.kernel!.state !== 'active') return;
    while (reg.collecting) await reg.collecting;
    // Messages already in its rings run first (cluster/drain.ts says why), bounded.
    await drained(reg.kernel!, 5_000);
    await impl.deactivateIdle(Number.MAX_VALUE, this.state.config.clock());
    await this.flush(reg.cls);
  }
}
