import { describe, expect, it } from 'vitest';
import { PendingAsks, type AskBatch, type PendingAsk } from '../src/pending.ts';
import { laneOfKey } from '../src/lanes.ts';
import type { RingKernel } from '../src/kernel.ts';
import type { MethodDef } from '../src/grain.ts';

const kernelA = { name: 'A' } as unknown as RingKernel;
const kernelB = { name: 'B' } as unknown as RingKernel;
const method = { name: 'm' } as unknown as MethodDef;
const single = (kernel: RingKernel, lane: number, deadline = 100): PendingAsk => ({
  resolve: () => {},
  reject: () => {},
  kernel,
  lane,
  method,
  deadline,
});

function batchOf(corrBase: number, key: number[], lanes: number, deadline = 100): PendingAsk & { batch: AskBatch } {
  const batch: AskBatch = { corrBase, n: key.length, key, lanes, ok: () => {}, fail: () => {} };
  return { ...single(kernelA, 0, deadline), batch };
}

describe('PendingAsks (single asks as map entries, askMany rows as one id range)', () => {
  it('sees every waiting row of a batch as its own entry, and each settles once', () => {
    const p = new PendingAsks();
    p.set(5, single(kernelB, 1));
    const e = batchOf(10, [0, 1, 2, 3], 2);
    p.addBatch(e);
    expect(p.size).toBe(5);
    expect(p.get(12)).toBe(e);
    expect(p.has(14)).toBe(false);
    expect(p.delete(12)).toBe(true);
    expect(p.get(12)).toBeUndefined();
    expect(p.delete(12)).toBe(false); // a duplicate reply finds nothing
    expect(p.size).toBe(4);
    expect([...p].map(([c]) => c).sort((a, b) => a - b)).toEqual([5, 10, 11, 13]);
    for (const c of [10, 11, 13]) p.delete(c);
    expect(p.size).toBe(1);
    expect(p.get(10)).toBeUndefined();
    expect(p.delete(5)).toBe(true);
    expect(p.size).toBe(0);
  });

  it('counts waiting rows per kernel and per lane, as the rows settle', () => {
    const p = new PendingAsks();
    const keys = Array.from({ length: 100 }, (_, i) => i * 7);
    p.addBatch(batchOf(1000, keys, 4));
    p.set(1, single(kernelA, 3));
    p.set(2, single(kernelB, 0));
    const want = [0, 0, 0, 0];
    for (const k of keys) want[laneOfKey(k, 4)]!++;
    want[3]!++;
    expect(p.perLaneOf(kernelA, 4)).toEqual(want);
    expect(p.countOf(kernelA)).toBe(101);
    expect(p.countOf(kernelB)).toBe(1);
    p.delete(1000);
    want[laneOfKey(keys[0]!, 4)]!--;
    expect(p.perLaneOf(kernelA, 4)).toEqual(want);
  });

  it('expires a batch as its waiting rows, and nothing before the deadline', () => {
    const p = new PendingAsks();
    p.addBatch(batchOf(50, [1, 2, 3], 1, 10));
    p.set(7, single(kernelA, 0, 20));
    p.delete(51);
    expect(p.expired(5)).toEqual([]);
    expect(p.expired(15).map(([c]) => c)).toEqual([50, 52]);
    expect(
      p
        .expired(25)
        .map(([c]) => c)
        .sort((a, b) => a - b),
    ).toEqual([7, 50, 52]);
  });

  it('iteration is a snapshot: deleting while iterating visits each waiting ask once', () => {
    const p = new PendingAsks();
    p.addBatch(batchOf(1, [1, 2, 3, 4, 5], 2));
    p.set(100, single(kernelA, 0));
    const seen: number[] = [];
    for (const [c] of p) {
      seen.push(c);
      p.delete(c);
    }
    expect(seen.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 100]);
    expect(p.size).toBe(0);
  });
});
