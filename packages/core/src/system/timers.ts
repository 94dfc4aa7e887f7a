import type { ActorKey } from '../backend.ts';
import { IdleTimeoutError } from '../errors.ts';
import type { AnyGrainClass, GrainDef, MethodDef, TypesOf } from '../grain.ts';
import type { ReminderInfo } from '../reminders/service.ts';
import { ReminderNotOwnedError, ReminderStorageError } from '../timers/errors.ts';
import type { TimerStart } from '../timers/spec.ts';
import { waitUntil } from '../wait.ts';
import { checkKey, type Sender } from './send.ts';
import type { Registration, SystemState } from './state.ts';

/** A grain class's reminders as `system.reminders(cls)` hands them out. */
export interface SystemReminders<C extends AnyGrainClass> {
  set(key: TypesOf<C>['key'], name: string, opts: TimerStart & { periodMs: number }): Promise<void>;
  clear(key: TypesOf<C>['key'], name: string): Promise<boolean>;
  list(key?: TypesOf<C>['key']): ReminderInfo[];
}

/** Timers and reminders on the host's side: the injected clock published to kernels, reminders fired as tells. */
export class SystemTimers {
  constructor(
    private readonly state: SystemState,
    private readonly sender: Sender,
  ) {}

  /** A reminder's fire: a host tell of its method (a failure is a tellError event, as for any tell). */
  readonly sendReminder = (reg: Registration, method: MethodDef, key: ActorKey): void => {
    try {
      const sent = this.sender.sendRoute({ reg, method }, key, {}, false);
      sent?.catch(() => undefined); // a cancelled wait is already a tellError event
    } catch (e) {
      this.state.events.emit('tellError', { grain: reg.def.name, method: method.name, error: e as Error });
    }
  };

  /**
   * Fires the reminders due by the clock and, with an injected clock, publishes its time to every active
   * kernel with timers (one word per kernel, never a message per tick).
   */
  runTimers(): number {
    const config = this.state.config;
    const now = config.clock();
    let fired = 0;
    for (const reg of this.state.regs) {
      fired += reg.reminders?.fireDue(now) ?? 0;
      const k = reg.kernel;
      if (config.timerClock === 'host' && reg.def.timers.length && k?.state === 'active')
        k.backendKernel?.publishTime?.(now);
    }
    return fired;
  }

  /** GrainSystem.advanceTimers: fires due reminders, publishes the clock and waits for the kernels' ticks. */
  async advanceTimers(opts: { timeoutMs?: number } = {}): Promise<number> {
    const fired = this.runTimers();
    const askTimeoutMs = this.state.config.askTimeoutMs;
    const kernels = this.state.regs.flatMap((r) =>
      r.def.timers.length && r.kernel?.state === 'active' && r.kernel.backendKernel?.timersCaughtUp
        ? [r.kernel.backendKernel]
        : [],
    );
    if (
      this.state.config.timerClock === 'host' &&
      !(await waitUntil(() => kernels.every((k) => k.timersCaughtUp!()), opts.timeoutMs ?? askTimeoutMs))
    ) {
      throw new IdleTimeoutError(opts.timeoutMs ?? askTimeoutMs, ['a kernel did not run its due timer ticks']);
    }
    return fired;
  }

  /** GrainSystem.reminders: set, clear and list a class's reminders from outside a handler. */
  reminders<C extends AnyGrainClass>(cls: C): SystemReminders<C> {
    const reg = this.state.registration(cls);
    const svc = () => {
      if (!reg.reminders)
        throw new ReminderStorageError(
          reg.def.name,
          reg.def.reminders.length
            ? 'its reminders are not loaded yet: call system.start() first'
            : 'it declares no reminders',
        );
      return reg.reminders;
    };
    // In a cluster only the silo serving the key keeps its reminders (reminders/service.ts).
    const owned = (key: ActorKey, op: 'set' | 'clear') => {
      const s = svc();
      if (!s.serves(key)) throw new ReminderNotOwnedError(reg.def.name, key, op);
      return s;
    };
    return {
      set: async (key, name, opts) => {
        checkKey(reg.def, key, reg.storage.storage !== undefined);
        await owned(key, 'set').setFrom(key, name, opts, this.state.config.clock());
      },
      clear: async (key, name) => owned(key, 'clear').clear(key, name),
      list: (key) => svc().list(key),
    };
  }

  /** A kernel's record of a reminder set or cleared by a handler (dispatcher: ctx.setReminder). */
  readonly onReminderRecord = (def: GrainDef | undefined, text: string): void => {
    const reg = def && this.state.byDef.get(def);
    const r = JSON.parse(text) as {
      op: 'set' | 'clear';
      key: ActorKey;
      name: string;
      periodMs?: number;
      dueAt?: number;
    };
    const svc = reg?.reminders;
    if (!svc) {
      this.state.events.emit('tellError', {
        grain: def?.name ?? '?',
        method: `${r.op}Reminder`,
        error: new ReminderStorageError(
          def?.name ?? '?',
          'a handler set a reminder, but the class has no reminder storage',
        ),
      });
      return;
    }
    const done = r.op === 'set' ? svc.set(r.key, r.name, r.periodMs!, r.dueAt!) : svc.clear(r.key, r.name);
    done.catch(() => undefined); // reported by the service as a storageError event
  };
}
