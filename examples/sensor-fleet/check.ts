/**
 * The check: every device's state and every region's counters as read from the actors against the
 * JavaScript model, field by field and bit for bit (Object.is: f64 sums must be equal, not close).
 */
import type { FleetModel } from './model.ts';
import type { FleetState } from './read.ts';

const DEVICE_FIELDS = ['last', 'lastAt', 'min', 'max', 'sum', 'count', 'alert', 'raised', 'checks'] as const;
const REGION_FIELDS = ['regionRaised', 'regionStale', 'regionRange', 'regionCleared'] as const;

export interface CheckResult {
  /** Values compared. */
  compared: number;
  /** Values that differ, in all. */
  differing: number;
  /** The first few differences, one line each. */
  lines: string[];
}

export function checkFleet(model: FleetModel, got: FleetState, maxLines = 10): CheckResult {
  const r: CheckResult = { compared: 0, differing: 0, lines: [] };
  const note = (line: string) => {
    r.differing++;
    if (r.lines.length < maxLines) r.lines.push(line);
  };
  for (const f of DEVICE_FIELDS) {
    const want = model[f];
    const have = got[f];
    if (have.length !== want.length)
      note(`${f}: the actors answered ${have.length} devices, the model has ${want.length}`);
    for (let d = 0; d < Math.min(want.length, have.length); d++) {
      r.compared++;
      if (!Object.is(have[d], want[d])) note(`device ${d} ${f}: actors ${have[d]}, model ${want[d]}`);
    }
  }
  for (const f of REGION_FIELDS) {
    const want = model[f];
    const have = got[f];
    if (have.length !== want.length)
      note(`${f}: the actors answered ${have.length} regions, the model has ${want.length}`);
    for (let g = 0; g < Math.min(want.length, have.length); g++) {
      r.compared++;
      if (have[g] !== want[g]) note(`region ${g} ${f}: actors ${have[g]}, model ${want[g]}`);
    }
  }
  return r;
}
