/**
 * The names of core's application entries, pinned: the root entry (`@ringgrain/core`) is what an
 * application writes, and a name added to it is a decision (docs/api.md says where a name goes). Its types
 * are read from the source (index.ts re-exports by name, nothing with `export *`), its values from the
 * loaded module. `/errors` holds every error class core defines; `/types` holds types only.
 */
import { readFileSync } from 'node:fs';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import * as internal from '../src/entries/internal.ts';
import * as errors from '../src/entries/errors.ts';
import * as root from '../src/index.ts';
import * as types from '../src/entries/types.ts';

const ROOT_VALUES = [
  // the system, grain classes, schemas, slot sizing
  'GrainSystem',
  'Grain',
  'defineGrain',
  't',
  'SLOT_HEADER_SIZE',
  'encodedSize',
  // the errors a send or an ask fails with
  'RinggrainError',
  'HandlerError',
  'AskTimeoutError',
  'AskManyError',
  'SchemaValidationError',
  'InvalidKeyError',
  'PayloadTooLargeError',
  'QueueFullError',
  'KernelTerminatedError',
];

const ROOT_TYPES = [
  'SystemOptions',
  'RegisterOptions',
  'SystemEvents',
  'ClassMetrics',
  'TransitionEvent',
  'StorageErrorEvent',
  'TypesOf',
  'GrainContext',
  'GrainRef',
  'AskOptions',
  'Infer',
];

/** Every name a module's source exports (`export { a, type B } from`, `export type { C } from`). */
function exportedNames(file: URL): { names: string[]; typeOnly: string[]; star: boolean } {
  const src = ts.createSourceFile(
    file.pathname,
    readFileSync(file, 'utf8'),
    ts.ScriptTarget.ES2022,
    false,
    ts.ScriptKind.TS,
  );
  const names: string[] = [];
  const typeOnly: string[] = [];
  let star = false;
  for (const s of src.statements) {
    if (!ts.isExportDeclaration(s)) continue;
    if (!s.exportClause) star = true;
    else if (ts.isNamedExports(s.exportClause)) {
      for (const e of s.exportClause.elements) {
        names.push(e.name.text);
        if (s.isTypeOnly || e.isTypeOnly) typeOnly.push(e.name.text);
      }
    }
  }
  return { names, typeOnly, star };
}

describe("core's application entries", () => {
  it('the root entry exports exactly the pinned names (26): values at run time, types in the source', () => {
    const declared = exportedNames(new URL('../src/index.ts', import.meta.url));
    expect(declared.star, 'index.ts re-exports by name only').toBe(false);
    expect([...declared.names].sort()).toEqual([...ROOT_VALUES, ...ROOT_TYPES].sort());
    expect([...declared.typeOnly].sort()).toEqual([...ROOT_TYPES].sort());
    expect(Object.keys(root).sort()).toEqual([...ROOT_VALUES].sort());
  });

  it('every error class core defines is in /errors, and /errors holds nothing else', () => {
    const isErrorClass = (v: unknown) => typeof v === 'function' && v.prototype instanceof internal.RinggrainError;
    const defined = Object.entries(internal)
      .filter(([, v]) => isErrorClass(v) || v === internal.RinggrainError)
      .map(([k]) => k);
    expect(defined.length).toBeGreaterThan(30);
    expect(Object.keys(errors).sort()).toEqual(defined.sort());
    // The root's errors are the same classes (one identity for instanceof).
    for (const [k, v] of Object.entries(root))
      if (k.endsWith('Error')) expect(v, k).toBe((errors as Record<string, unknown>)[k]);
  });

  it('/types holds types only, none of them also in the root', () => {
    expect(Object.keys(types)).toEqual([]);
    const declared = exportedNames(new URL('../src/entries/types.ts', import.meta.url));
    expect(declared.names.length).toBeGreaterThan(0);
    expect(declared.names.filter((n) => ROOT_TYPES.includes(n))).toEqual([]);
  });
});
