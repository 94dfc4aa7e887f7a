/**
 * One process opens a store directory at a time (lock.ts): a second process's open() is a typed error
 * naming the holder's pid; once the holder is gone (even killed, leaving its lock file) the directory opens
 * again. A dataDir under /proc fails open() instead of hanging (recursive mkdir never returns there).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { LOCK_FILE, LmdbStore, StateStoreLockedError } from '../src/index.ts';

const dir = mkdtempSync(path.join(os.tmpdir(), 'ringgrain-lmdb-lock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const script = fileURLToPath(new URL('./lock-child.ts', import.meta.url));
const cwd = fileURLToPath(new URL('..', import.meta.url));

function openInChild(dataDir: string): Record<string, unknown> {
  const r = spawnSync(process.execPath, ['--import', 'tsx', script, 'open', dataDir], {
    encoding: 'utf8',
    timeout: 30_000,
    cwd,
  });
  expect(r.signal, `child hung: ${r.stderr}`).toBeNull();
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Record<string, unknown>;
}

it("a second process is refused with StateStoreLockedError naming the holder; a killed holder's lock is " +
  'taken over', async () => {
  const data = path.join(dir, 'held');
  const holder = spawn(process.execPath, ['--import', 'tsx', script, 'hold', data], {
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd,
  });
  try {
    await new Promise<void>((resolve, reject) => {
      let out = '';
      holder.stdout.on('data', (b: Buffer) => {
        out += b.toString();
        if (out.includes('ready')) resolve();
      });
      holder.on('exit', (code) => reject(new Error(`holder exited ${code}`)));
    });
    const other = openInChild(data);
    expect(other).toMatchObject({
      ok: false,
      name: 'StateStoreLockedError',
      code: 'STATE_STORE_LOCKED',
      holderPid: holder.pid,
    });
    expect(other.message).toContain(`process ${holder.pid}`);
    // This process too (a store here shares nothing with the holder).
    const here = new LmdbStore({ dataDir: data });
    const e = await here.open().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(StateStoreLockedError);
    expect(e).toMatchObject({ holderPid: holder.pid });
    await here.close();
  } finally {
    const gone = new Promise((r) => holder.once('exit', r));
    holder.kill('SIGKILL');
    await gone;
  }
  // The holder died without closing: its lock file names a pid that is gone, and is taken over.
  expect(existsSync(path.join(data, LOCK_FILE))).toBe(true);
  const store = new LmdbStore({ dataDir: data });
  await store.open();
  const t = await store.table({ name: 'Counter', keyKind: 'int', stateSize: 8 });
  expect((await t.get(1))?.version).toBe(1);
  // Stores of one process share the lock; the file goes with the last close.
  const second = new LmdbStore({ dataDir: data });
  await second.open();
  await store.close();
  expect(existsSync(path.join(data, LOCK_FILE))).toBe(true);
  await second.close();
  expect(existsSync(path.join(data, LOCK_FILE))).toBe(false);
}, 60_000);

it('a dataDir under /proc fails open() with a typed error instead of hanging', () => {
  // Recursive mkdir never returns under /proc (Node 20), so this runs in a child with a deadline.
  const r = openInChild('/proc/ringgrain-no-such-dir/state');
  expect(r).toMatchObject({ ok: false, name: 'StateStoreUnavailableError', code: 'STATE_STORE_UNAVAILABLE' });
  expect(r.message).toContain('/proc/ringgrain-no-such-dir');
}, 60_000);

it.skipIf(process.platform !== 'linux')(
  'a lock naming a live pid that another process now holds (start time differs) is taken over',
  async () => {
    // The parent process is alive; a lock with its pid but another start time is a holder gone and its pid reused.
    const data = path.join(dir, 'reused');
    mkdirSync(data, { recursive: true });
    const stat = readFileSync(`/proc/${process.ppid}/stat`, 'utf8');
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
    const lock = (s: string) =>
      writeFileSync(path.join(data, LOCK_FILE), JSON.stringify({ pid: process.ppid, host: os.hostname(), start: s }));
    lock(start);
    const held = new LmdbStore({ dataDir: data });
    expect(await held.open().catch((e: unknown) => e)).toMatchObject({
      code: 'STATE_STORE_LOCKED',
      holderPid: process.ppid,
    });
    await held.close();
    lock(`${start}0`);
    const store = new LmdbStore({ dataDir: data });
    await store.open();
    expect(JSON.parse(readFileSync(path.join(data, LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid });
    await store.close();
  },
);
