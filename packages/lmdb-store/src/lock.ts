import { closeSync, existsSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StateStoreError } from '@ringgrain/core/store';
import { KIND } from './errors.ts';

/**
 * One process opens a store directory at a time: LMDB itself takes several processes, but each
 * process's write-behind holds versions of the rows it last read, so a second process loses every write
 * to version conflicts. The holder writes `ringgrain.lock` (pid, host, and on Linux the process's start
 * time) in the directory, created exclusively; a lock whose process is gone (same host: no such pid, or
 * that pid now another process) is taken over.
 */
export const LOCK_FILE = 'ringgrain.lock';

/** Another process holds the store directory. */
export class StateStoreLockedError extends StateStoreError {
  readonly holderPid: number | undefined;
  readonly holderHost: string | undefined;
  constructor(location: string, holderPid: number | undefined, holderHost: string | undefined, detail: string) {
    super('STATE_STORE_LOCKED', KIND, `${location} is held by ${detail}`, {
      hint:
        'one process opens an LMDB store at a time (a second one would lose its writes to version ' +
        `conflicts): stop the holder, or give this process its own dataDir; a stale ${LOCK_FILE} from a ` +
        'process that is gone is taken over by itself',
    });
    this.holderPid = holderPid;
    this.holderHost = holderHost;
  }
}

interface Holder {
  pid: number;
  host: string;
  /** The process's start time (Linux /proc/<pid>/stat), so a reused pid is not taken for the holder. */
  start?: string;
}

/**
 * Directories this process holds, with how many open stores use each: stores of one process share the
 * lock (the StateTable contract's version checks order their writes: store-contract "two writers race").
 */
const heldHere = new Map<string, number>();

/** A process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat); undefined off Linux. */
function startOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** Is the holder running: its pid alive and, where both are known, started when the lock says. */
function alive(h: Holder): boolean {
  try {
    process.kill(h.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const now = h.start === undefined ? undefined : startOf(h.pid);
  return now === undefined || now === h.start;
}

function readHolder(file: string): Holder | undefined {
  try {
    const h = JSON.parse(readFileSync(file, 'utf8')) as Partial<Holder>;
    if (typeof h.pid !== 'number' || typeof h.host !== 'string') return undefined;
    return typeof h.start === 'string' ? { pid: h.pid, host: h.host, start: h.start } : { pid: h.pid, host: h.host };
  } catch {
    return undefined;
  }
}

/** Takes the directory's lock or throws StateStoreLockedError; returns the release function. */
export function lockStore(location: string): () => void {
  const file = path.join(location, LOCK_FILE);
  const users = heldHere.get(location);
  if (users !== undefined) {
    heldHere.set(location, users + 1);
    return once(() => release(location, file));
  }
  const start = startOf(process.pid);
  const me = JSON.stringify({ pid: process.pid, host: os.hostname(), ...(start === undefined ? {} : { start }) });
  for (let attempt = 0; ; attempt++) {
    let fd: number;
    try {
      fd = openSync(file, 'wx', 0o644);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw e;
      let h = readHolder(file);
      if (!h) {
        // A holder may be between creating the file and writing it: look again a moment later.
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
        h = readHolder(file);
      }
      if (h && h.host !== os.hostname())
        throw new StateStoreLockedError(
          location,
          h.pid,
          h.host,
          `process ${h.pid} on host ${h.host} (${file}; remove it if that process is gone)`,
        );
      if (h && h.pid !== process.pid && alive(h))
        throw new StateStoreLockedError(location, h.pid, h.host, `process ${h.pid} (${file})`);
      // Gone (or unreadable: a holder that died while writing it): take it over.
      unlinkSync(file);
      continue;
    }
    try {
      writeSync(fd, me);
    } finally {
      closeSync(fd);
    }
    heldHere.set(location, 1);
    return once(() => release(location, file));
  }
}

function release(location: string, file: string): void {
  const users = (heldHere.get(location) ?? 1) - 1;
  if (users > 0) {
    heldHere.set(location, users);
    return;
  }
  heldHere.delete(location);
  try {
    if (readHolder(file)?.pid === process.pid) unlinkSync(file);
  } catch {
    // Already gone (the directory was removed): nothing to release.
  }
}

function once(f: () => void): () => void {
  let done = false;
  return () => {
    if (!done) {
      done = true;
      f();
    }
  };
}

/**
 * `mkdir -p`, one level at a time: `mkdirSync(dir, { recursive: true })` never returns for a path under /proc (Node
 * 20).
 */
export function makeDir(dir: string): void {
  const abs = path.resolve(dir);
  if (existsSync(abs)) return;
  const parent = path.dirname(abs);
  if (parent !== abs) makeDir(parent);
  try {
    mkdirSync(abs);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
}
