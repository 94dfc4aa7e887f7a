/**
 * Reads the whole fleet back through the actors: every device's `get` and every region's `get`, as
 * askMany columns (row i answers key i).
 */
import type { GrainSystem } from '@ringgrain/core';
import { Alerts, Device } from './grains.ts';

export interface FleetState {
  last: Float64Array;
  lastAt: Float64Array;
  min: Float64Array;
  max: Float64Array;
  sum: Float64Array;
  count: Uint32Array;
  alert: Uint32Array;
  raised: Uint32Array;
  checks: Uint32Array;
  regionRaised: Uint32Array;
  regionStale: Uint32Array;
  regionRange: Uint32Array;
  regionCleared: Uint32Array;
}

export async function readFleet(system: GrainSystem, devices: number, regions: number): Promise<FleetState> {
  const d = await system.askMany(Device, 'get', { key: Int32Array.from({ length: devices }, (_, i) => i) });
  const a = await system.askMany(Alerts, 'get', { key: Int32Array.from({ length: regions }, (_, i) => i) });
  return {
    last: Float64Array.from(d.last),
    lastAt: Float64Array.from(d.lastAt),
    min: Float64Array.from(d.min),
    max: Float64Array.from(d.max),
    sum: Float64Array.from(d.sum),
    count: Uint32Array.from(d.count),
    alert: Uint32Array.from(d.alert),
    raised: Uint32Array.from(d.raised),
    checks: Uint32Array.from(d.checks),
    regionRaised: Uint32Array.from(a.raised),
    regionStale: Uint32Array.from(a.stale),
    regionRange: Uint32Array.from(a.range),
    regionCleared: Uint32Array.from(a.cleared),
  };
}
