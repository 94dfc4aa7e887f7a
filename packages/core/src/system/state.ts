import type { EventEmitter } from 'eventemitter3';
import type { KernelOptions } from '../backend.ts';
import { UnknownGrainError } from '../errors.ts';
import type { AnyGrainClass, GrainDef, MethodDef } from '../grain.ts';
import type { RingKernel } from '../kernel.ts';
import { PendingAsks } from '../pending.ts';
import type { WriteBehind } from '../persist/write-behind.ts';
import type { ResolvedStorageOptions } from '../persist/options.ts';
import type { ReminderService } from '../reminders/service.ts';
import { Spill } from '../spill.ts';
import type { FixedWrite } from '../tell-image.ts';
import type { ClusterRouter } from '../cluster/router.ts';
import type { SystemEvents } from './events.ts';
import type { Placement, SystemConfig } from './options.ts';

/** One registered grain class: its kernel once started, its storage, its idle collection and reminders. */
export interface Registration {
  cls: AnyGrainClass;
  def: GrainDef;
  placement: Placement;
  options: KernelOptions;
  kernel?: RingKernel;
  storage: ResolvedStorageOptions;
  writeBehind?: WriteBehind;
  flushTimer?: ReturnType<typeof setInterval> | undefined;
  /** The host clock at the last idle collection, and the one under way (the sweep's or collectIdle's). */
  lastCollect: number;
  collecting: Promise<number> | undefined;
  /** Deactivations on a class with idleMs and no storage (nothing to write). */
  dropped: number;
  /** The class's reminders (it declares some, and has storage). */
  reminders?: ReminderService;
}

/** A grain class + method resolved once (refs hold these). */
export interface Route {
  readonly reg: { readonly def: GrainDef; kernel?: RingKernel; readonly storage: { readonly storage?: unknown } };
  readonly method: MethodDef;
  /**
   * The fixed-image writer of single sends (tell-image.ts) for the kernel it was made for; null where it does not
   * apply.
   */
  fixed?: { readonly kernel: RingKernel; readonly write: FixedWrite | null };
}

/**
 * What the parts of a GrainSystem share: the registrations, the asks waiting for replies, the sends
 * waiting for ring space, the cluster router once joined, and the events the system emits.
 */
export class SystemState {
  readonly regs: Registration[] = [];
  readonly byDef = new Map<GrainDef, Registration>();
  readonly pending = new PendingAsks();
  /** Per kernel, the sends that wait for room in its inbound ring (FIFO per kernel). */
  readonly spills = new Map<RingKernel, Spill>();
  /** Kernels whose spill is not empty. */
  readonly waiting = new Set<RingKernel>();
  router: ClusterRouter<Route> | undefined;
  /** Schedules the reply pump after the current synchronous burst (the facade wires it to ReplyPump). */
  schedulePump: () => void = () => {};

  constructor(
    readonly config: SystemConfig,
    readonly events: EventEmitter<SystemEvents>,
  ) {}

  kernels(): RingKernel[] {
    return this.regs.flatMap((r) => (r.kernel ? [r.kernel] : []));
  }

  registration(cls: AnyGrainClass): Registration {
    const reg = this.byDef.get(cls.grain as GrainDef);
    if (!reg) throw new UnknownGrainError(cls.grain?.name ?? String(cls));
    return reg;
  }

  spillOf(kernel: RingKernel): Spill {
    let s = this.spills.get(kernel);
    if (!s)
      this.spills.set(
        kernel,
        (s = new Spill(kernel.lanes[0]!.inbound.slotSize, kernel.def.name, this.config.maxQueuedBytes)),
      );
    return s;
  }
}
