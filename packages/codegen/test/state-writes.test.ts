import { describe, expect, it } from 'vitest';
import { generateKernel } from '../src/index.ts';
import { loadModule, parseHandler } from '../src/front/source.ts';
import { mayWriteState } from '../src/front/state-writes.ts';
import { Ledger } from './fixtures/state-writes.ts';
import { HAVE_NVCC, nvccCompile } from './toolchain.ts';

const mod = loadModule(Ledger.grain.module);
const writes = (name: string) => mayWriteState(parseHandler(mod, 'Ledger', name), Ledger.grain.state);

describe('mayWriteState: which handlers set the dirty mark', () => {
  it('handlers that only read the state (directly, through a view local, into a number local) do not', () => {
    for (const m of ['read', 'readVia', 'copyOut']) expect([m, writes(m)]).toEqual([m, false]);
  });

  it(
    'every store into the state does: compound, ++, through an alias of a struct, in a loop, a vec length, a ' +
      'nested struct',
    () => {
      for (const m of ['add', 'bump', 'viaAlias', 'inLoop', 'vecLength', 'nested'])
        expect([m, writes(m)]).toEqual([m, true]);
    },
  );

  it('the unit marks only the writers: rg_Ledger_writes_state lists their method ids', () => {
    const src = generateKernel(Ledger.grain).source;
    const ids = Ledger.grain.methods.map((m, i) => [m.name, i] as const);
    const fn = src.slice(
      src.indexOf('rg_Ledger_writes_state(unsigned int method) {'),
      src.indexOf('default: return false;', src.indexOf('rg_Ledger_writes_state(unsigned int method) {')),
    );
    for (const [name, i] of ids)
      expect([name, fn.includes(`case ${i}u:`)]).toEqual([name, !['read', 'readVia', 'copyOut'].includes(name)]);
  });

  it.skipIf(!HAVE_NVCC)('compiles with nvcc', () => {
    const r = nvccCompile(generateKernel(Ledger.grain).source, 'sm_90');
    expect(r.log).toBe('');
    expect(r.ok).toBe(true);
  }, 240_000);
});
