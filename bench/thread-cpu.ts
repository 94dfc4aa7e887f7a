import { readFileSync, readdirSync } from 'node:fs';

/**
 * CPU time of each thread of this process, ns, from Linux's /proc/self/task/<tid>/schedstat (time on a
 * CPU): `main` is the main thread (tid = pid), `others` every other thread by tid (pool threads, V8's and
 * libuv's helpers). Undefined where /proc has no schedstat (not Linux). A busy many-core host runs each
 * thread of a pipeline on its own core, so the busiest thread's ns per message bounds the rate it can reach;
 * time on a CPU is swayed far less than wall time by the other processes of a loaded machine.
 */
export function threadCpuNs(): { main: number; others: Record<string, number> } | undefined {
  try {
    const others: Record<string, number> = {};
    let main = 0;
    for (const tid of readdirSync('/proc/self/task')) {
      let ns: number;
      try {
        ns = Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        continue; // the thread ended meanwhile
      }
      if (Number(tid) === process.pid) main = ns;
      else others[tid] = ns;
    }
    return { main, others };
  } catch {
    return undefined;
  }
}

export type ThreadCpu = NonNullable<ReturnType<typeof threadCpuNs>>;

/** Between two readings: the main thread's ns and the busiest other thread's ns. */
export function threadCpuDelta(a: ThreadCpu, b: ThreadCpu): { main: number; busiest: number } {
  let busiest = 0;
  for (const [tid, ns] of Object.entries(b.others)) busiest = Math.max(busiest, ns - (a.others[tid] ?? 0));
  return { main: b.main - a.main, busiest };
}
