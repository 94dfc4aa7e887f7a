/**
 * Crash (issue 15 §6, CPU): a child process writes, flushes, goes on updating without flushing, and is
 * killed with SIGKILL; a new process on the same store sees every flushed actor's state — exactly the
 * flushed one: what a crash loses is the updates since the last completed flush.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, inject, it } from 'vitest';

const CHILD = fileURLToPath(new URL('./crash-child.ts', import.meta.url));
const N = 2000;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'rg-crash-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function child(args: string[]): {
  proc: ReturnType<typeof spawn>;
  lines: AsyncIterable<string>;
  exited: Promise<number | null>;
} {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
  async function* lines() {
    let buf = '';
    for await (const chunk of proc.stdout!) {
      buf += String(chunk);
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        yield buf.slice(0, i);
        buf = buf.slice(i + 1);
      }
    }
  }
  return { proc, lines: lines(), exited };
}

async function first(lines: AsyncIterable<string>): Promise<string> {
  for await (const l of lines) return l;
  throw new Error('the child ended before it printed a line');
}

async function crashAndRead(kind: string, where: string, schema = ''): Promise<number[]> {
  const w = child(['write', kind, where, String(N), schema]);
  expect(await first(w.lines)).toBe('FLUSHED');
  // Let unflushed updates run for a while, then kill it mid-flight.
  await new Promise((r) => setTimeout(r, 300));
  w.proc.kill('SIGKILL');
  await w.exited;
  const r = child(['read', kind, where, String(N), schema]);
  const counts = JSON.parse(await first(r.lines)) as number[];
  expect(await r.exited).toBe(0);
  return counts;
}

describe('crash: SIGKILL after a flush loses only the updates since that flush', () => {
  it('LMDB: a new process on the same directory sees every flushed actor', async () => {
    const counts = await crashAndRead('lmdb', path.join(tmp, 'lmdb'));
    expect(counts).toHaveLength(N);
    expect(counts.every((c) => c === 1)).toBe(true);
  }, 120_000);

  // The global setup starts PostgreSQL for an unfiltered run, or one whose filter matches packages/postgres-store.
  const pgUrl = inject('pgUrl') as string | undefined;
  it.skipIf(pgUrl === undefined)(
    'PostgreSQL: a new process on the same schema sees every flushed ' +
      `actor${
        pgUrl === undefined
          ? ' (skipped: no PostgreSQL server in this filtered run; run it with a filter that includes postgres-store)'
          : ''
      }`,
    async () => {
      const counts = await crashAndRead('postgres', pgUrl!, `crash_${process.pid}`);
      expect(counts).toHaveLength(N);
      expect(counts.every((c) => c === 1)).toBe(true);
    },
    120_000,
  );
});
