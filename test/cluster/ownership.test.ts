import { describe, expect, it } from 'vitest';
import {
  allocateOwnership,
  ClusterConfigError,
  MAX_PARTITIONS,
  OwnershipView,
  partitionOf,
  writeOwnership,
} from '@ringgrain/core/cluster';

/** The ownership memory the router writes and the kernels read on K2K sends (core cluster/ownership.ts). */
describe('cluster ownership memory', () => {
  it('owns nothing before a table; then exactly the partitions written, for int and string keys', () => {
    const sab = allocateOwnership();
    const view = new OwnershipView(sab);
    for (let k = 0; k < 100; k++) expect(view.owns(k)).toBe(false);
    const owned = (p: number) => p % 3 === 1;
    writeOwnership(sab, 256, owned);
    for (let k = -500; k < 5000; k++) expect(view.owns(k)).toBe(owned(partitionOf(k, 256)));
    for (const k of ['a', 'bank-17', 'ü', '']) expect(view.owns(k)).toBe(owned(partitionOf(k, 256)));
    expect(view.owns(2 ** 40 + 3)).toBe(owned(partitionOf(2 ** 40 + 3, 256)));
  });

  it('a rewrite with another partition count replaces the old bits (every partition at the maximum too)', () => {
    const sab = allocateOwnership();
    const view = new OwnershipView(sab);
    writeOwnership(sab, 64, () => true);
    writeOwnership(sab, 7, (p) => p === 5);
    for (let k = 0; k < 2000; k++) expect(view.owns(k)).toBe(partitionOf(k, 7) === 5);
    writeOwnership(sab, MAX_PARTITIONS, (p) => p === MAX_PARTITIONS - 1);
    let hits = 0;
    for (let k = 0; k < 200_000; k++) {
      if (!view.owns(k)) continue;
      hits++;
      expect(partitionOf(k, MAX_PARTITIONS)).toBe(MAX_PARTITIONS - 1);
    }
    expect(hits).toBeGreaterThan(0);
    writeOwnership(sab, 0, () => true);
    expect(view.owns(1)).toBe(false);
  });

  it('refuses a partition count outside 1..65536, typed, and keeps what was written', () => {
    const sab = allocateOwnership();
    writeOwnership(sab, 4, (p) => p === 2);
    expect(() => writeOwnership(sab, MAX_PARTITIONS + 1, () => true)).toThrow(ClusterConfigError);
    expect(() => writeOwnership(sab, 2.5, () => true)).toThrow(ClusterConfigError);
    const view = new OwnershipView(sab);
    for (let k = 0; k < 100; k++) expect(view.owns(k)).toBe(partitionOf(k, 4) === 2);
  });
});
