/**
 * Where a ring kernel keeps what: the byte layout of its host region (pinned, mapped: control blocks,
 * inbound rings, reply ring, timer and residency host blocks) and of its one device allocation (queues,
 * states, directory, globals, routes, scratch, overflow pool, timers, residency area). Pure arithmetic
 * over the ABI's sizes, so it is checked without a GPU (test/kernel-layout.test.ts).
 */
import type { Abi } from '@ringgrain/codegen';
import {
  TIMER_HOST_BYTES,
  overflowLayout,
  residencyHostBytes,
  residencyLayout,
  timerLayout,
} from '@ringgrain/core/backend';

const ALIGN_DEVICE = 256;
const ALIGN_HOST = 128;
const up = (n: number, a: number) => Math.ceil(n / a) * a;

export interface KernelShape {
  readonly maxActors: number;
  readonly ringCapacity: number;
  readonly replyCapacity: number;
  readonly slotSize: number;
  readonly partitions: number;
  readonly queueCapacity: number;
  readonly lanes: number;
  /** Entries of the route table: grain ids × lane groups (routes.ts). */
  readonly routeEntries: number;
  /** Timers the class declares (0: none, no timer blocks). */
  readonly timers: number;
  /** Whether the kernel has a residency area and host block. */
  readonly residency: boolean;
  /** The residency area's target (residency.ts), where `residency`. */
  readonly stateSize: number;
  /** Bytes the K2K overflow pool may take (its header and lists first). */
  readonly overflowBytes: number;
}

export interface HostLayout {
  readonly controlStride: number;
  readonly inboundAt: number;
  readonly inboundStride: number;
  readonly replyAt: number;
  /** The timers' host block (timer-host.ts), where the class declares timers. */
  readonly timerHostAt: number;
  /** The residency host block and load-request ring (residency.ts), where the kernel has residency. */
  readonly residencyHostAt: number;
  readonly bytes: number;
}

export interface DeviceAt {
  readonly queues: number;
  readonly states: number;
  readonly directory: number;
  readonly globals: number;
  readonly routes: number;
  readonly scratch: number;
  readonly overflow: number;
  readonly timers: number;
  readonly residency: number;
}

export interface DeviceLayout {
  readonly at: DeviceAt;
  readonly bytes: number;
  /** Nodes of the K2K overflow pool (0: none; the first `partitions` are the lists' stubs). */
  readonly overflowNodes: number;
  readonly routeStride: number;
  readonly routeBytes: number;
}

export interface KernelLayout {
  readonly host: HostLayout;
  readonly device: DeviceLayout;
  readonly dirCapacity: number;
}

/** The host region and device allocation of one kernel of this shape. */
export function kernelLayout(abi: Abi, s: KernelShape): KernelLayout {
  const sizes = abi.sizes({
    maxActors: s.maxActors,
    ringCapacity: s.ringCapacity,
    replyCapacity: s.replyCapacity,
    slotSize: s.slotSize,
    partitions: s.partitions,
    queueCapacity: s.queueCapacity,
    lanes: s.lanes,
  });
  // Pinned, mapped host memory: a control block per host lane, an inbound ring per host lane, the reply
  // ring (each 128-byte aligned; the strides are the ABI's, which the kernel uses too).
  const inboundAt = up(sizes.controlStride * s.lanes, ALIGN_HOST);
  const replyAt = inboundAt + sizes.inboundStride * s.lanes;
  const timerHostAt = replyAt + up(sizes.replies, ALIGN_HOST);
  const residencyHostAt = up(timerHostAt + (s.timers ? TIMER_HOST_BYTES : 0), ALIGN_HOST);
  const host: HostLayout = {
    controlStride: sizes.controlStride,
    inboundAt,
    inboundStride: sizes.inboundStride,
    replyAt,
    timerHostAt,
    residencyHostAt,
    bytes: residencyHostAt + (s.residency ? residencyHostBytes().bytes : 0),
  };
  // Device memory, one allocation (see device-memory.ts for why not stream-ordered):
  // queues | states | directory | globals + counters | routes | worker scratch | overflow | timers | residency.
  let off = 0;
  const take = (n: number) => {
    const at = off;
    off = up(off + n, ALIGN_DEVICE);
    return at;
  };
  // The pool's nodes: what overflowBytes holds after its header, if that is more than the lists' stubs.
  const nodeBytes = overflowLayout({ partitions: s.partitions, slotSize: s.slotSize, nodes: 0 });
  const fit = Math.floor((s.overflowBytes - nodeBytes.nodesAt) / nodeBytes.nodeBytes);
  const overflowNodes = fit > s.partitions ? Math.min(fit, 0xffffffff - 1) : 0;
  const pool = overflowLayout({ partitions: s.partitions, slotSize: s.slotSize, nodes: Math.max(overflowNodes, 1) });
  const routeBytes = sizes.routesPerGrain * s.routeEntries;
  const residencyBytes = s.residency
    ? residencyLayout({ stateSize: s.stateSize, maxActors: s.maxActors, partitions: s.partitions }).bytes
    : 0;
  const at: DeviceAt = {
    queues: take(sizes.queues),
    states: take(sizes.states),
    directory: take(sizes.directory),
    globals: take(sizes.globals),
    routes: take(routeBytes),
    scratch: take(sizes.scratch),
    overflow: take(pool.bytes),
    timers: take(timerLayout({ partitions: s.partitions, maxActors: s.maxActors, timers: s.timers }).bytes),
    residency: take(residencyBytes),
  };
  return {
    host,
    device: { at, bytes: off, overflowNodes, routeStride: sizes.routesPerGrain, routeBytes },
    dirCapacity: abi.dirCapacity({ maxActors: s.maxActors }),
  };
}
