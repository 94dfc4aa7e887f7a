import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/** The front end (parse, syntax tree, checks) is target-independent: a second target reuses it as is. */
describe('codegen is split by concern', () => {
  const dir = new URL('../src/front/', import.meta.url);
  const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));

  it('has the front-end modules', () => {
    expect(files.sort()).toEqual(['ast.ts', 'errors.ts', 'parallel.ts', 'parse.ts', 'source.ts', 'state-writes.ts']);
  });

  it('imports nothing from a target (src/cuda) in src/front', () => {
    const offending = files.flatMap((f) =>
      [...readFileSync(new URL(f, dir), 'utf8').matchAll(/from '([^']+)'/g)]
        .map((m) => m[1] as string)
        .filter((s) => s.startsWith('../'))
        .map((s) => `${f} → ${s}`),
    );
    expect(offending).toEqual([]);
  });
});
