/**
 * vitest globalSetup: where nvcc is on PATH and the run includes the codegen tests, starts prebuild.ts at
 * low priority (nice 10) beside the run, so the compile test's ~45 nvcc builds use the CPU the test files
 * leave idle instead of running after them. Stopped at the end of the run if still going; what it finished
 * stays in the build cache.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

let child: ChildProcess | undefined;

/** A run filtered to files outside packages/codegen (or to some of them, not the compile test) needs no prebuild. */
function runCompiles(argv: readonly string[]): boolean {
  const filters = argv.filter(
    (a) => !a.startsWith('-') && a !== 'run' && !/vitest(\.m?js)?$/.test(a) && !a.endsWith('node'),
  );
  const path = 'packages/codegen/test/compile.test.ts';
  return filters.length === 0 || filters.some((f) => path.includes(f.replace(/^\.\//, '')));
}

export function setup(): void {
  if (process.env.RINGGRAIN_NO_PREBUILD || !runCompiles(process.argv.slice(2))) return;
  if (spawnSync('nvcc', ['--version'], { stdio: 'ignore' }).status !== 0) return;
  const script = fileURLToPath(new URL('./prebuild.ts', import.meta.url));
  const nice = spawnSync('nice', ['--version'], { stdio: 'ignore' }).status === 0;
  const cmd = [process.execPath, '--import', 'tsx', script];
  child = spawn(nice ? 'nice' : cmd[0]!, nice ? ['-n', '10', ...cmd] : cmd.slice(1), {
    stdio: 'ignore',
    detached: true,
  });
  child.on('error', () => {});
  child.unref();
}

export function teardown(): void {
  if (child && child.exitCode === null && child.pid) {
    try {
      process.kill(-child.pid, 'SIGTERM'); // its group: the nvcc processes too
    } catch {
      // gone already
    }
  }
}
