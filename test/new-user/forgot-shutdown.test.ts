/**
 * A program that forgets `await system.shutdown()` does not exit (the CPU backend's worker threads keep it
 * alive); once nothing else has kept the process alive for 5 s, the system says so in a warning that names
 * the fix. The child is stopped by the test once the warning is seen.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

it('a program that forgets shutdown() is told so in a warning naming the fix', async () => {
  const program = fileURLToPath(new URL('./forgot-shutdown-program.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', program], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const warned = new Promise<boolean>((resolve) => {
    const look = (d: Buffer) => {
      out += d;
      if (out.includes('await system.shutdown()')) resolve(true);
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.on('exit', () => resolve(false));
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 50_000);
  try {
    expect(await warned, out).toBe(true);
    expect(out).toContain('{"count":1,"sum":2}');
    expect(out).toContain('nothing but this GrainSystem has kept the process alive for 5 s');
    expect(child.exitCode, 'still running when warned').toBe(null);
  } finally {
    clearTimeout(timer);
    child.kill('SIGKILL');
  }
}, 60_000);
