import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { assignPartitions, keyHash, partitionOf } from '../src/cluster/partition.ts';

describe('cluster partitions', () => {
  it('hashes keys the same way every time and spreads them', () => {
    expect(keyHash(42)).toBe(keyHash(42));
    expect(keyHash('alice')).toBe(keyHash('alice'));
    expect(keyHash(2 ** 40)).not.toBe(keyHash(0));
    const counts = new Array(16).fill(0);
    for (let k = 0; k < 16_000; k++) counts[partitionOf(k, 16)]++;
    for (const c of counts) expect(c).toBeGreaterThan(800);
  });

  it('gives every partition to an eligible silo, shares within one', () => {
    const a = assignPartitions(256, ['s2', 's1', 's3']);
    const per = new Map<string, number>();
    for (const o of a.owners) per.set(o, (per.get(o) ?? 0) + 1);
    expect([...per.keys()].sort()).toEqual(['s1', 's2', 's3']);
    expect(Math.max(...per.values()) - Math.min(...per.values())).toBeLessThanOrEqual(1);
    expect(a.moved).toBe(256);
    expect(a.epochs.every((e) => e === 1)).toBe(true);
  });

  it('moves as few partitions as possible on join and leave (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 0, max: 5 }),
        (parts, n, removeAt) => {
          const ids = Array.from({ length: n }, (_, i) => `s${i}`);
          const a = assignPartitions(parts, ids);
          // join: only partitions the newcomer takes move, and it takes its share
          const j = assignPartitions(parts, [...ids, 'new'], a);
          const taken = j.owners.filter((o) => o === 'new').length;
          expect(j.moved).toBe(taken);
          expect([Math.floor(parts / (n + 1)), Math.ceil(parts / (n + 1))]).toContain(taken);
          // leave: only the leaver's partitions move
          if (n > 1) {
            const gone = ids[removeAt % n]!;
            const l = assignPartitions(
              parts,
              ids.filter((x) => x !== gone),
              a,
            );
            expect(l.moved).toBe(a.owners.filter((o) => o === gone).length);
            expect(l.owners.includes(gone)).toBe(false);
            for (let p = 0; p < parts; p++) if (a.owners[p] !== gone) expect(l.owners[p]).toBe(a.owners[p]);
            for (let p = 0; p < parts; p++) expect(l.epochs[p]).toBe(a.owners[p] === gone ? 2 : 1);
          }
        },
      ),
    );
  });

  it('owns nothing with no eligible silo', () => {
    expect(assignPartitions(4, []).owners).toEqual(['', '', '', '']);
  });
});
