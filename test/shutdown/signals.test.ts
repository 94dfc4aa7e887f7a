/**
 * SIGINT/SIGTERM end the process within a bounded time with the documented exit code, even when a kernel
 * cannot be stopped (its turn never ends, so it never acknowledges STOP); a second signal exits at once.
 * Run on the CPU backend, and on the CUDA backend where a GPU is present.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SIGNAL_EXIT_CODE } from '@ringgrain/core/backend';
import { probeCuda } from '@ringgrain/cuda-backend';

const program = fileURLToPath(new URL('../fixtures/stuck-program.ts', import.meta.url));

interface Run {
  code: number | null;
  ms: number;
  stderr: string;
}

async function signalled(backend: string, signals: NodeJS.Signals[], args: string[] = [], gapMs = 0): Promise<Run> {
  const child = spawn(process.execPath, ['--import', 'tsx', program, '--backend', backend, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`the program never said READY; stderr:\n${stderr}`)), 60_000);
    child.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('READY')) {
        clearTimeout(t);
        resolve();
      }
    });
  });
  const t0 = performance.now();
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  for (const [i, s] of signals.entries()) {
    if (i > 0) await new Promise((r) => setTimeout(r, gapMs));
    child.kill(s);
  }
  const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const code = await exited;
  clearTimeout(guard);
  return { code, ms: performance.now() - t0, stderr };
}

const probe = probeCuda();
const lanes = [
  { backend: 'cpu', title: 'cpu', run: describe },
  {
    backend: 'cuda',
    title: probe.ok ? `cuda (${probe.device.name})` : `cuda (skipped: no CUDA driver/device — ${probe.reason})`,
    run: probe.ok ? describe : describe.skip,
  },
] as const;

for (const lane of lanes) {
  lane.run(`shutdown on signals always ends: ${lane.title}`, () => {
    it('SIGTERM with a turn that never ends: exit 143 within the deadline', async () => {
      const r = await signalled(lane.backend, ['SIGTERM']);
      expect(r.code, r.stderr).toBe(SIGNAL_EXIT_CODE.SIGTERM);
      expect(r.ms).toBeLessThan(3000 + 2000);
    });

    it('a kernel whose memory cannot be freed: the deadline exits anyway and logs what was left', async () => {
      const r = await signalled(lane.backend, ['SIGINT'], ['--hang-dispose']);
      expect(r.code, r.stderr).toBe(SIGNAL_EXIT_CODE.SIGINT);
      expect(r.ms).toBeGreaterThanOrEqual(2900);
      expect(r.ms).toBeLessThan(3000 + 2000);
      expect(r.stderr).toContain('shutdown did not finish within 3000 ms');
      expect(r.stderr).toContain('kernel Stuck');
    });

    it('a second signal exits at once', async () => {
      const r = await signalled(lane.backend, ['SIGINT', 'SIGINT'], ['--hang-dispose'], 300);
      expect(r.code, r.stderr).toBe(SIGNAL_EXIT_CODE.SIGINT);
      expect(r.ms).toBeLessThan(2500);
      expect(r.stderr).toContain('SIGINT again: exiting now');
    });
  });
}
