import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { USAGE, main } from '../src/cli.ts';

const ROOT = resolve(import.meta.dirname, '../../..');
const BANK = join(ROOT, 'examples/bank/grains.ts');

async function run(argv: string[]) {
  let out = '';
  let err = '';
  const code = await main(argv, { out: (t) => void (out += t), err: (t) => void (err += t) });
  return { code, out, err };
}

describe('ringgrain codegen CLI', () => {
  it('prints the unit of the chosen grain', async () => {
    const r = await run(['codegen', BANK, '--grain', 'Account']);
    expect(r.code).toBe(0);
    expect(r.err).toBe('');
    expect(r.out).toContain('extern "C" __global__ void rg_Account_main(');
  });

  it('writes .cu and .abi.json with --out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rg-cli-'));
    const r = await run([BANK, '--out', dir]);
    expect(r.code).toBe(0);
    expect(readdirSync(dir).sort()).toEqual(['Account.abi.json', 'Account.cu']);
    const abi = JSON.parse(readFileSync(join(dir, 'Account.abi.json'), 'utf8'));
    expect(abi.entry).toBe('rg_Account_main');
    expect(abi.params[0]).toEqual({ name: 'control', ctype: 'rg_ControlBlock*', kind: 'ptr', doc: expect.any(String) });
  });

  it.each([
    [[], 'missing <module>'],
    [['codegen'], 'missing <module>'],
    [[BANK, '--grain'], '--grain needs a value'],
    [[BANK, '--bogus'], 'unknown option --bogus'],
    [[BANK, 'extra'], 'unexpected argument extra'],
    [[BANK, '--grain', 'Nope'], 'has no grain class "Nope" (it has Account)'],
  ])('wrong arguments %j → usage, exit 2', async (argv, why) => {
    const r = await run(argv as string[]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(why);
    expect(r.err).toContain(USAGE);
    expect(r.out).toBe('');
  });

  it('a rejected construct exits 1 with the CodegenError message', async () => {
    const r = await run([join(import.meta.dirname, 'fixtures/rejected.ts'), '--grain', 'Spread']);
    expect(r.code).toBe(1);
    expect(r.err).toContain('Spread.go (rejected.ts:30:14): spread is not supported');
  });

  it('runs as a process through the root script entry (tsx)', () => {
    const p = spawnSync(process.execPath, [join(ROOT, 'node_modules/tsx/dist/cli.mjs'), join(ROOT, 'packages/codegen/src/cli.ts'), 'codegen'], { encoding: 'utf8' });
    expect(p.status).toBe(2);
    expect(p.stderr).toContain('usage: ringgrain codegen');
  });
});
