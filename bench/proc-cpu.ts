/**
 * Where the CPU went during a timed section, from Linux /proc (null elsewhere): this process's threads
 * (the main thread, the threads that appeared after a baseline — the pool — and the rest: V8 helpers)
 * and the machine's busy time that was not this process's (other work on a shared machine). A
 * throughput figure from a 2-core machine means little without the second: a thread count that needs
 * both cores loses most when something else holds one.
 */
import { readFileSync, readdirSync } from 'node:fs';

const HZ = 100; // USER_HZ: /proc reports clock ticks of 10 ms on Linux

interface Snapshot {
  readonly at: number;
  readonly tasks: Map<number, number>;
  /** /proc/stat's first line: busy and total ticks of all CPUs. */
  readonly busy: number;
  readonly total: number;
}

function taskTicks(): Map<number, number> {
  const out = new Map<number, number>();
  for (const t of readdirSync('/proc/self/task')) {
    try {
      const s = readFileSync(`/proc/self/task/${t}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      out.set(Number(t), Number(f[11]) + Number(f[12]));
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}

function machineTicks(): { busy: number; total: number } {
  const v = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const total = v.reduce((a, b) => a + b, 0);
  return { busy: total - v[3]! - v[4]!, total };
}

function snap(): Snapshot | null {
  try {
    return { at: performance.now(), tasks: taskTicks(), ...machineTicks() };
  } catch {
    return null;
  }
}

export interface CpuShare {
  /** CPU seconds over the section, per second of wall time (1 = one core busy). */
  readonly main: number;
  readonly pool: number;
  readonly other: number;
  /** Busy cores the machine had beyond this process, averaged over the section. */
  readonly foreign: number;
}

/** Threads that exist now are not pool threads: call before the pool starts. */
export function baseline(): Set<number> {
  try {
    return new Set(readdirSync('/proc/self/task').map(Number));
  } catch {
    return new Set();
  }
}

/** Starts a section; the returned function ends it. */
export function section(before: Set<number>): () => CpuShare | null {
  const a = snap();
  return () => {
    const b = snap();
    if (!a || !b) return null;
    const wall = (b.at - a.at) / 1000;
    let main = 0;
    let pool = 0;
    let other = 0;
    for (const [tid, t] of b.tasks) {
      const d = (t - (a.tasks.get(tid) ?? 0)) / HZ;
      if (tid === process.pid) main += d;
      else if (before.has(tid)) other += d;
      else pool += d;
    }
    const cores = (b.total - a.total) / Math.max(1e-9, wall) / HZ;
    const busy = (b.busy - a.busy) / HZ / wall;
    const round = (x: number) => Number(x.toFixed(2));
    return {
      main: round(main / wall),
      pool: round(pool / wall),
      other: round(other / wall),
      foreign: round(Math.max(0, Math.min(cores, busy - (main + pool + other) / wall))),
    };
  };
}
