/**
 * The CUDA runtime's device-side layouts (cuda-layouts.ts): defined once in core, emitted into every unit with
 * static_asserts by the code generator (packages/codegen/test/__snapshots__/Account.cu pins the C), read and
 * written by @ringgrain/cuda-backend. Checked here: the alignments the C relies on, the sizes the kernels'
 * address arithmetic assumes, and that protocol.ts's importers see them.
 */
import { describe, expect, it } from 'vitest';
import {
  BulkBoard,
  COUNTERS,
  COUNTER_ROW_BYTES,
  DIR_STATE,
  DeviceGlobals,
  DirEntry,
  OverflowHeader,
  OverflowNode,
  OVERFLOW_NODE_HEADER,
  RouteEntry,
  SlotFlag,
  TICK_FLAG,
  TIMER_HOST_BYTES,
  TimerHostBlock,
  isReadyDirState,
  offsetOf,
  overflowLayout,
  timerLayout,
} from '../src/protocol.ts';
import { layoutOf } from '../src/schema/layout.ts';

describe('CUDA device layouts (core cuda-layouts.ts)', () => {
  it('route entries: 4-byte words, a lane group count and its lanes after the pool', () => {
    expect(layoutOf(RouteEntry)).toMatchObject({ size: 40, align: 4 });
    expect([
      offsetOf(RouteEntry, 'poolNodes'),
      offsetOf(RouteEntry, 'groups'),
      offsetOf(RouteEntry, 'groupLanes'),
    ]).toEqual([28, 32, 36]);
  });

  it('globals: the bulk boards 16-aligned with 8-aligned 64-bit words; a counter row holds every counter', () => {
    expect(offsetOf(DeviceGlobals, 'boards') % 16).toBe(0);
    expect(offsetOf(BulkBoard, 'nextLo') % 8).toBe(0);
    expect(offsetOf(BulkBoard, 'job') % 16).toBe(0);
    expect(layoutOf(DeviceGlobals).size % 16).toBe(0);
    expect(COUNTER_ROW_BYTES).toBe(COUNTERS.length * 4);
  });

  it('overflow pool: header line, tails and counts per partition, 16-aligned nodes of header + slot', () => {
    expect(layoutOf(OverflowHeader).size).toBe(128);
    expect(OVERFLOW_NODE_HEADER).toBe(layoutOf(OverflowNode).size);
    const o = overflowLayout({ partitions: 3, slotSize: 100, nodes: 10 });
    expect(o).toEqual({
      tails: 128,
      counts: 140,
      nodesAt: 160,
      nodeBytes: OVERFLOW_NODE_HEADER + 100,
      bytes: 160 + 10 * (OVERFLOW_NODE_HEADER + 100),
    });
  });

  it('directory states, tick flag above core slot flags, timer areas on 128-byte lines', () => {
    expect(layoutOf(DirEntry).size).toBe(16);
    expect(isReadyDirState(DIR_STATE.READY | (5 << DIR_STATE.OWNER_SHIFT))).toBe(true);
    expect(isReadyDirState(DIR_STATE.READY | DIR_STATE.LOADING)).toBe(false);
    expect(Math.max(...Object.values(SlotFlag))).toBeLessThan(TICK_FLAG);
    expect(TIMER_HOST_BYTES).toBe(layoutOf(TimerHostBlock).size);
    expect(offsetOf(TimerHostBlock, 'caughtEpoch')).toBe(128);
    const t = timerLayout({ partitions: 5, maxActors: 7, timers: 2 });
    expect(t.rowsAt % 128).toBe(0);
    expect(t.bytes).toBe(t.rowsAt + 7 * t.rowBytes);
    expect(timerLayout({ partitions: 5, maxActors: 7, timers: 0 }).bytes).toBe(0);
  });
});
