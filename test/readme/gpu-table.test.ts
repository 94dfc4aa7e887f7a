/**
 * The README's GPU table is generated from bench/results/gpu-latest.json: it must match what the
 * generator renders now, so a new record cannot land with a stale table (or a table edited by hand).
 */
import { describe, expect, it } from 'vitest';
import { currentTable, renderTable } from '../../bench/readme-gpu-table.ts';

describe('README GPU table', () => {
  it('matches bench/results/gpu-latest.json (run bench/readme-gpu-table.ts after a GPU run)', () => {
    const { readme, next } = currentTable();
    expect(readme).toBe(next);
  });
  it('computes each verdict from the figures, with the margin', () => {
    const t = renderTable(
      {
        commit: 'abc',
        device: 'd',
        askP50Us: 4,
        askP99Us: 6,
        pingPongFloorP50Us: 2,
        hostTellsPerS: 6e6,
        cpuHostTellsPerS: 7e6,
      },
      undefined,
    );
    expect(t).toContain('p50 ≤ 1.3 × floor — not met (2.00× floor, 1.54× short)');
    expect(t).toContain('p99 ≤ 2 × p50 — met');
    expect(t).toContain('≥ 3 M/s — met; ≥ cpu — not met (6.00 M/s, 1.17× short)');
  });
});
