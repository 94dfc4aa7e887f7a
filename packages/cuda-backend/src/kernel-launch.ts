/**
 * A ring kernel's launch arguments: the value of each ABI parameter (device addresses inside its allocation and host
 * region, sizes), in the ABI's one parameter list's order.
 */
import type { Abi } from '@ringgrain/codegen';
import type { KernelPlan } from '@ringgrain/core/backend';
import { arg, type KernelArg } from './driver/index.ts';
import type { DeviceAt } from './kernel-layout.ts';

export interface LaunchPlace {
  readonly abi: Abi;
  readonly plan: KernelPlan;
  /** Device addresses of the host region and of the device allocation. */
  readonly hostPtr: bigint;
  readonly devicePtr: bigint;
  /** Byte offsets inside the host region: lane 0's inbound ring, the reply ring, the timers' host block. */
  readonly inboundAt: number;
  readonly replyAt: number;
  readonly timerHostAt: number;
  readonly at: DeviceAt;
  readonly overflowNodes: number;
  readonly partitions: number;
  readonly queueCapacity: number;
  readonly dirCapacity: number;
  readonly sendBudget: number;
  readonly lanes: number;
  readonly laneBytes: number;
  readonly hasTimers: boolean;
}

export function launchArgs(p: LaunchPlace): KernelArg[] {
  const o = p.plan.options;
  const h = p.hostPtr;
  const d = p.devicePtr;
  const values: Record<string, bigint | number> = {
    control: h,
    inbound: h + BigInt(p.inboundAt),
    replies: h + BigInt(p.replyAt),
    queues: d + BigInt(p.at.queues),
    states: d + BigInt(p.at.states),
    directory: d + BigInt(p.at.directory),
    globals: d + BigInt(p.at.globals),
    routes: d + BigInt(p.at.routes),
    scratch: d + BigInt(p.at.scratch),
    overflow: d + BigInt(p.at.overflow),
    overflowNodes: p.overflowNodes,
    routeCount: p.plan.grains.length,
    partitions: p.partitions,
    queueCapacity: p.queueCapacity,
    ringCapacity: o.ringCapacity,
    replyCapacity: o.replyCapacity,
    slotSize: o.slotSize,
    maxActors: o.maxActors,
    dirCapacity: p.dirCapacity,
    turnBudget: Math.min(o.turnBudget, 0xffffffff),
    sendBudget: p.sendBudget,
    lanes: p.lanes,
    laneBytes: p.laneBytes,
    timers: p.hasTimers ? d + BigInt(p.at.timers) : 0n,
    timerHost: p.hasTimers ? h + BigInt(p.timerHostAt) : 0n,
  };
  return p.abi.params.map((param) => {
    const v = values[param.name];
    if (v === undefined)
      throw new Error(`cuda-backend: no value for kernel parameter ${param.name} (codegen ABI changed?)`);
    return param.kind === 'ptr' ? arg.ptr(BigInt(v)) : param.kind === 'u64' ? arg.u64(v) : arg.u32(Number(v));
  });
}
