/**
 * `ringgrain build` (src/build.ts): the command's refusals need nothing; compiling needs NVRTC only (no GPU).
 * Where NVRTC is missing the command says so and exits 1; where it is present (the GPU host) the bank's class
 * is compiled into a fresh cache, and a second build finds it there under the same key the backend uses.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import { buildKernels, buildMain, loadNvrtc } from '../src/index.ts';

const BANK = fileURLToPath(new URL('../../../examples/bank/grains.ts', import.meta.url));
const cacheDir = mkdtempSync(join(tmpdir(), 'rg-build-test-'));
afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

let nvrtc: string | undefined;
try {
  nvrtc = loadNvrtc().versionString;
} catch {
  nvrtc = undefined;
}

async function run(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await buildMain(argv, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err };
}

describe('ringgrain build: refusals', () => {
  it('a missing module, an unknown class and a bad architecture exit with what to do', async () => {
    expect(await run([])).toMatchObject({ code: 2, err: expect.stringContaining('missing <module>') });
    const nofile = await run(['no/such/grains.ts']);
    expect(nofile.code).toBe(1);
    expect(nofile.err).toContain('no such file');
    const unknown = await run([BANK, '--grains', 'Acount']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('has no grain class Acount (it has Account)');
    const arch = await run([BANK, '--arch', 'compute_90']);
    expect(arch.code).toBe(2);
    expect(arch.err).toContain('--arch compute_90 is not a GPU architecture like sm_90');
    const threads = await run([BANK, '--threads', 'many']);
    expect(threads.code).toBe(2);
    expect(threads.err).toContain('--threads many is not a whole number ≥ 0');
  });
});

describe(`ringgrain build: compiling (${nvrtc ? `NVRTC ${nvrtc}` : 'no NVRTC here'})`, () => {
  const noNvrtc = nvrtc ? ' (skipped: NVRTC is here)' : '';
  it.skipIf(nvrtc !== undefined)(`without NVRTC it says CUDA is not available and exits 1${noNvrtc}`, async () => {
    const r = await run([BANK, '--cache', cacheDir]);
    expect(r.code).toBe(1);
    expect(r.err).toContain('NVRTC');
  });

  const needs = nvrtc ? '' : ' (skipped: no NVRTC found; RINGGRAIN_NVRTC names one)';
  it.skipIf(nvrtc === undefined)(
    `compiles the class into the cache; the next build finds it there${needs}`,
    async () => {
      const first = await buildKernels({ grains: [Account.grain], archs: ['sm_90'], cacheDir });
      expect(first.map((b) => [b.grain, b.arch, b.cached])).toEqual([['Account', 'sm_90', false]]);
      const again = await run([BANK, '--cache', cacheDir]);
      expect(again.code).toBe(0);
      expect(again.out).toContain('Account sm_90: already in the cache');
    },
    120_000,
  );
});
