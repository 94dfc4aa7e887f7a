import { describe, expect, it } from 'vitest';
import { layoutOf, offsetOf } from '@ringgrain/core/backend';
import {
  EVICT_RING_BYTES,
  EVICT_RING_MAX_ROWS,
  EvictRow,
  INSTALL_BOARD_MAX_BYTES,
  INSTALL_ERROR_BYTES,
  INSTALL_ROWS,
  LOAD_RING_CAPACITY,
  LoadRequest,
  RES_ROW,
  ResidencyGlobals,
  ResidencyHostBlock,
  evictRing,
  installLayout,
  installRows,
  residencyHostBytes,
  residencyLayout,
} from '../src/cuda/residency.ts';
import { STATE_REGION_ALIGN, gatherLayout } from '../src/cuda/state-meta.ts';

describe('residency layouts (residency.ts: the one definition the C and the host share)', () => {
  it('host block: the host-written request line, then the kernel-written line', () => {
    expect(layoutOf(ResidencyHostBlock).size).toBe(256);
    expect(offsetOf(ResidencyHostBlock, 'seq')).toBe(0);
    expect(offsetOf(ResidencyHostBlock, 'before')).toBe(16);
    expect(offsetOf(ResidencyHostBlock, 'now')).toBe(24);
    expect(offsetOf(ResidencyHostBlock, 'loadTail')).toBe(36);
    expect(offsetOf(ResidencyHostBlock, 'evictTail')).toBe(40); // host-written, on the request line
    expect(offsetOf(ResidencyHostBlock, 'doneSeq')).toBe(128);
    expect(offsetOf(ResidencyHostBlock, 'rejected')).toBe(140);
    expect(layoutOf(LoadRequest).size).toBe(16);
    expect(residencyHostBytes()).toEqual({
      ringAt: 256,
      evictAt: 256 + 16 * LOAD_RING_CAPACITY,
      bytes: 256 + 16 * LOAD_RING_CAPACITY + EVICT_RING_BYTES,
    });
  });

  it(
    'evict ring: a 16-byte header then the state per row (16-aligned), a power of two of rows within ' +
      'EVICT_RING_BYTES',
    () => {
      expect(layoutOf(EvictRow).size).toBe(16);
      expect(evictRing(8)).toEqual({ stride: 32, capacity: EVICT_RING_MAX_ROWS });
      expect(evictRing(1000)).toEqual({ stride: 1024, capacity: 1024 });
      expect(evictRing(1008)).toEqual({ stride: 1024, capacity: 1024 });
      expect(evictRing(1009)).toEqual({ stride: 1040, capacity: 512 });
      // one row even past the budget
      expect(evictRing(4 * EVICT_RING_BYTES)).toEqual({ stride: 16 + 4 * EVICT_RING_BYTES, capacity: 1 });
      for (const n of [0, 1, 7, 40, 333]) {
        const e = evictRing(n);
        expect(e.stride % 16).toBe(0);
        expect(e.capacity & (e.capacity - 1)).toBe(0);
        expect(e.capacity * e.stride).toBeLessThanOrEqual(EVICT_RING_BYTES);
      }
    },
  );

  it('device globals: the copied request, the counters and the host-written addresses on separate lines', () => {
    expect(layoutOf(ResidencyGlobals).size).toBe(384);
    expect(offsetOf(ResidencyGlobals, 'before')).toBe(16);
    expect(offsetOf(ResidencyGlobals, 'loadReserve')).toBe(128);
    expect(offsetOf(ResidencyGlobals, 'hostLo')).toBe(256);
    expect(offsetOf(ResidencyGlobals, 'parksLo')).toBe(256 + 4 * 8);
    expect(offsetOf(ResidencyGlobals, 'loadCapacity')).toBe(256 + 4 * 14);
    // Making room: the request's number and clock are worker-written (line 1), idleMs host-written (line 2).
    expect(offsetOf(ResidencyGlobals, 'roomEpoch')).toBe(128 + 4 * 6);
    expect(offsetOf(ResidencyGlobals, 'roomNow')).toBe(128 + 4 * 8);
    expect(offsetOf(ResidencyGlobals, 'idleMs')).toBe(256 + 4 * 20);
  });

  it('install board: keys, kinds, states and the failure text, each aligned', () => {
    expect(installLayout(24, 4)).toEqual({
      keysAt: 0,
      kindsAt: 256,
      statesAt: 512,
      errorAt: 768,
      bytes: 768 + INSTALL_ERROR_BYTES,
    });
    const big = installLayout(32, INSTALL_ROWS);
    expect(big.kindsAt).toBe(8 * INSTALL_ROWS);
    expect(big.statesAt).toBe(8 * INSTALL_ROWS + INSTALL_ROWS);
    expect(big.errorAt).toBe(big.statesAt + 32 * INSTALL_ROWS);
    for (const v of [big.kindsAt, big.statesAt, big.errorAt]) expect(v % STATE_REGION_ALIGN).toBe(0);
    expect(RES_ROW).toEqual({ ABSENT: 0, FOUND: 1, FAILED: 2 });
  });

  it('install rows: a power of two, at most INSTALL_ROWS, fewer for small tables and large states', () => {
    expect(installRows(8, 1)).toBe(1);
    expect(installRows(8, 1000)).toBe(1024);
    expect(installRows(8, 1 << 20)).toBe(INSTALL_ROWS);
    expect(installRows(64 * 1024, 1 << 20)).toBe(INSTALL_BOARD_MAX_BYTES / (64 * 1024));
    expect(installRows(INSTALL_BOARD_MAX_BYTES * 2, 10)).toBe(1);
    expect(installRows(8, 1 << 20, 100)).toBe(128);
  });

  it('the device area: globals, acks, the staging batch (the gather layout) and the board', () => {
    const r = residencyLayout({ stateSize: 40, maxActors: 1000, partitions: 32 });
    expect(r.acksAt).toBe(512);
    expect(r.roomsAt).toBe(768);
    expect(r.parksAt).toBe(1024);
    expect(r.stagingAt).toBe(1024 + 8 * 1024); // 8000 bytes of head/tail pairs, rounded up to 256
    expect(r.staging).toEqual(gatherLayout(40, 1000));
    expect(r.boardAt % STATE_REGION_ALIGN).toBe(0);
    expect(r.boardAt).toBeGreaterThanOrEqual(r.stagingAt + r.staging.bytes);
    expect(r.installCapacity).toBe(1024);
    expect(r.board).toEqual(installLayout(40, 1024));
    expect(r.bytes).toBe(r.boardAt + r.board.bytes);
    // Many partitions push the staging batch down, not into the acks.
    const many = residencyLayout({ stateSize: 40, maxActors: 1000, partitions: 100 });
    expect(many.roomsAt).toBeGreaterThanOrEqual(many.acksAt + 400);
    expect(many.parksAt).toBeGreaterThanOrEqual(many.roomsAt + 400);
  });
});
