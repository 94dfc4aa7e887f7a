/**
 * Routing tables (device memory, one per kernel): entry g = where grain id g's partition queues and
 * overflow pool are. Rewritten on the setup stream whenever a kernel comes or goes; a kernel's entry is
 * cleared before its queues are freed.
 */
import { viewAt } from '@ringgrain/core/backend';
import type { CudaKernel } from './kernel.ts';

/** What a route names of its target kernel. */
export interface RouteTarget {
  readonly grainId: number;
  /** The target's lane group, and how many its class has (1: one GPU). */
  readonly group: number;
  readonly groups: number;
  /** Host lanes per group (runtime/lanes.cuh picks a key's group with them). */
  readonly groupLanes: number;
  readonly queues: bigint;
  readonly partitions: number;
  readonly queueCapacity: number;
  readonly slotSize: number;
  readonly pool: bigint;
  readonly poolNodes: number;
}

/**
 * Fills `table` (a kernel's route table image: `routeCount` entries per lane group) with one entry per target,
 * at its group's block and its grain id (abi.ts RouteEntry).
 */
export function fillRouteTable(
  table: Uint8Array,
  schema: CudaKernel['abi']['schemas']['RouteEntry'],
  stride: number,
  routeCount: number,
  targets: Iterable<RouteTarget>,
): void {
  table.fill(0);
  for (const p of targets) {
    const at = (p.group * routeCount + p.grainId) * stride;
    if (at + stride > table.byteLength)
      throw new Error(
        `cuda-backend: route of grain ${p.grainId}, group ${p.group} lies outside the table (${table.byteLength} ` +
          `bytes)`,
      );
    const v = viewAt(schema, table.buffer, table.byteOffset + at) as Record<string, number>;
    v['queuesLo'] = Number(p.queues & 0xffffffffn);
    v['queuesHi'] = Number(p.queues >> 32n);
    v['partitions'] = p.partitions;
    v['queueCapacity'] = p.queueCapacity;
    v['slotSize'] = p.slotSize;
    v['poolLo'] = Number(p.pool & 0xffffffffn);
    v['poolHi'] = Number(p.pool >> 32n);
    v['poolNodes'] = p.poolNodes;
    v['groups'] = p.groups;
    v['groupLanes'] = p.groupLanes;
  }
}

/**
 * The kernels `k` may send to: live peers placed with the same grain list (ids are per system), every group of each.
 */
export function routeTargets(k: CudaKernel, live: Iterable<CudaKernel>): RouteTarget[] {
  const out: RouteTarget[] = [];
  for (const peer of live) {
    if (peer.freed) continue;
    const id = peer.plan.grainId;
    if (k.plan.grains[id] !== peer.plan.grain) continue;
    out.push({
      grainId: id,
      group: peer.group,
      groups: peer.groupCount,
      groupLanes: peer.hostLanes,
      queues: peer.queues.devPtr,
      partitions: peer.partitions,
      queueCapacity: peer.queueCapacity,
      slotSize: peer.plan.options.slotSize,
      pool: peer.overflowPool,
      poolNodes: peer.overflowNodes,
    });
  }
  return out;
}
