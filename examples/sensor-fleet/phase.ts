/**
 * One phase of the fleet: a GrainSystem on a store and an injected clock, optionally preloading the stored
 * devices (the restart), then rounds of (clock to the round's time, timer ticks due by it, the round's
 * readings through tellMany, a quiet barrier). Phase 1 ends with a timed flush; phase 2 ends by reading
 * every device's and every region's state back (askMany) for the check.
 */
import { RinggrainError, type GrainSystem } from '@ringgrain/core';
import type { StateStore } from '@ringgrain/core/types';
import type { CpuBackendOptions } from '@ringgrain/cpu-backend';
import { buildSystem, progress, whereItStands, type BackendChoice } from '../shared/backend.ts';
import { Alerts, Device, RULES } from './grains.ts';
import { roundReadings, roundTime } from './model.ts';
import { readFleet, type FleetState } from './read.ts';

export interface PhaseConfig {
  backend: BackendChoice;
  devices: number;
  /** Rounds to run, by number (1-based over both phases). */
  first: number;
  last: number;
  /** Restart: preload every stored device before the first round, at the clock's time `roundTime(first - 1)`. */
  preload: boolean;
  /** Read every device and region back at the end (phase 2). */
  read: boolean;
  /** Flush explicitly at the end and time it (phase 1). */
  flush: boolean;
  store: StateStore;
  cpuOptions: CpuBackendOptions;
  /** Write-behind interval (ms of real time) while the rounds run. */
  flushIntervalMs: number;
}

export interface PhaseResult {
  describe: string;
  /** GrainSystem construction and start (kernels launched, tables opened). */
  startMs: number;
  /** Devices preloaded, and how long it took. */
  preloaded: number;
  preloadMs: number;
  readings: number;
  /** Time in the rounds' readings (tellMany until processed, K2K included). */
  readingMs: number;
  /** Time in the rounds' timer ticks (advanceTimers until every due check ran). */
  tickMs: number;
  /** Checks (timer ticks) the kernels ran in this phase. */
  ticks: number;
  /** The explicit flush at the end (phase 1): rows written, time. */
  flushed: number;
  flushMs: number;
  /** Shutdown (deactivation of every actor, the final write-behind flush, kernels stopped). */
  shutdownMs: number;
  readMs: number;
  state: FleetState | undefined;
  /** Handler errors, rejected messages, failed tells, storage errors: each is a problem for the check. */
  problems: string[];
}

/** The backend refused this workload (e.g. no timers or no persistent state there yet): a typed error to print. */
export class PhaseRefused extends Error {
  constructor(readonly error: RinggrainError) {
    super(error.message);
  }
}

export async function runPhase(c: PhaseConfig): Promise<PhaseResult> {
  const clock = { now: roundTime(c.first - 1) };
  const t0 = performance.now();
  // On CUDA the fleet's state lives on the device (actor residency, the CUDA backend's default: load on first message,
  // deactivation).
  const { system, placement, describe } = await buildSystem(c.backend, { clock: () => clock.now }, {}, c.cpuOptions);
  const regions = Math.ceil(c.devices / RULES.regionSize);
  system.register(Device, {
    placement,
    maxActors: Math.max(c.devices, 1024),
    storage: c.store,
    flushIntervalMs: c.flushIntervalMs,
  });
  // A check round sends up to one K2K message per device to the regions: room for bursts.
  system.register(Alerts, {
    placement,
    maxActors: Math.max(regions, 1024),
    storage: c.store,
    flushIntervalMs: c.flushIntervalMs,
    ringCapacity: 1 << 16,
  });
  const problems: string[] = [];
  let tellErrors = 0;
  system.on('tellError', (e) => {
    if (tellErrors++ < 5) problems.push(`tell failed: ${e.grain}.${e.method}: ${e.error.message.split('\n')[0]}`);
  });
  system.on('storageError', (e) =>
    problems.push(`storage ${e.op} failed for ${e.keys.length} ${e.grain} rows: ${e.error.message.split('\n')[0]}`),
  );
  try {
    await system.start();
  } catch (e) {
    if (e instanceof RinggrainError) throw new PhaseRefused(e);
    throw e;
  }
  const r: PhaseResult = {
    describe,
    startMs: performance.now() - t0,
    preloaded: 0,
    preloadMs: 0,
    readings: 0,
    readingMs: 0,
    tickMs: 0,
    ticks: 0,
    flushed: 0,
    flushMs: 0,
    shutdownMs: 0,
    readMs: 0,
    state: undefined,
    problems,
  };
  try {
    if (c.preload) {
      const t = performance.now();
      r.preloaded = await system.preload(Device);
      r.preloadMs = performance.now() - t;
    }
    const bar = progress(`rounds ${c.first}-${c.last}`, c.last - c.first + 1);
    for (let round = c.first; round <= c.last; round++) {
      clock.now = roundTime(round);
      let t = performance.now();
      await system.advanceTimers({ timeoutMs: 600_000 });
      r.tickMs += performance.now() - t;
      const cols = roundReadings(round, c.devices);
      t = performance.now();
      system.tellMany(Device, 'reading', cols);
      await quiet(system, `round ${round}`);
      r.readingMs += performance.now() - t;
      r.readings += cols.key.length;
      bar.update(round - c.first + 1);
    }
    bar.stop();
    const m = system.metrics();
    r.ticks = m['Device']?.timers?.ticks ?? 0;
    for (const [name, k] of Object.entries(m)) {
      if (k.handlerErrors || k.rejected)
        problems.push(`${name}: ${k.handlerErrors} handler errors, ${k.rejected} rejected messages`);
    }
    if (c.flush) {
      const t = performance.now();
      const f = await system.flush();
      r.flushMs = performance.now() - t;
      r.flushed = f.written;
      if (f.kept) problems.push(`the flush kept ${f.kept} rows unwritten`);
    }
    if (c.read) {
      const t = performance.now();
      r.state = await readFleet(system, c.devices, regions);
      r.readMs = performance.now() - t;
    }
  } finally {
    const t = performance.now();
    await system.shutdown();
    r.shutdownMs = performance.now() - t;
  }
  if (tellErrors > 5) problems.push(`… ${tellErrors - 5} more failed tells`);
  return r;
}

/** Barrier: every message sent by the host or a kernel (the regions' K2K alerts too) has been processed. */
async function quiet(system: GrainSystem, what: string): Promise<void> {
  try {
    await system.idle({ timeoutMs: 600_000 });
  } catch (e) {
    throw new Error(`${what}: ${(e as Error).message}\n  ${whereItStands(system)}`, { cause: e });
  }
}
