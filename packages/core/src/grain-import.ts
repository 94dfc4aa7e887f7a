/**
 * Importing a grain module for its classes (a CPU worker thread, the code generator) when that module may
 * also be a whole program: the README's grain and its `new GrainSystem(...)` / `await system.start()` in
 * one file. Such a module's top-level code would start another system in every worker, forever. While a
 * grain import is under way, a system in this thread records the classes it is given (`register`) and its
 * `start()` never settles, so the program pauses at its first await with no side effect, and the importer
 * takes the classes from the record instead of waiting for the module to finish.
 */
import { RinggrainError } from './errors.ts';
import type { AnyGrainClass } from './grain.ts';

const ACTIVE = Symbol.for('ringgrain.grainImport.active');
const SEEN = Symbol.for('ringgrain.grainImport.classes');
type Global = { [ACTIVE]?: boolean; [SEEN]?: Map<string, AnyGrainClass> };
const g = globalThis as Global;

/** True in a thread that imports grain modules for their classes (no system may start here). */
export function inGrainImport(): boolean {
  return g[ACTIVE] === true;
}

/** Called by GrainSystem.register during a grain import: remember the class. */
export function noteGrainClass(cls: AnyGrainClass): void {
  (g[SEEN] ??= new Map()).set(`${cls.grain.module}#${cls.grain.name}`, cls);
}

export class GrainModuleError extends RinggrainError {
  constructor(module: string, why: string, cause?: unknown) {
    super('GRAIN_MODULE', `cannot load grain classes from ${module}: ${why}`, {
      hint:
        'export the grain class from the module; if the module is also a program, register the class with ' +
        'system.register(...) before its first await, or move the program into a file of its own',
      ...(cause === undefined ? {} : { cause }),
    });
  }
}

const isGrainClass = (v: unknown): v is AnyGrainClass =>
  typeof v === 'function' && typeof (v as { grain?: { name?: unknown } }).grain?.name === 'string';

/**
 * The grain classes of `moduleUrl` (all of them, or the `names` asked for): the module's exports once it
 * finishes, or — when it is a program paused at its first await — the classes it registered.
 */
export async function loadGrainClasses(
  moduleUrl: string,
  opts: { names?: readonly string[]; timeoutMs?: number; settleMs?: number } = {},
): Promise<AnyGrainClass[]> {
  g[ACTIVE] = true;
  const fromRecord = (): AnyGrainClass[] => [...(g[SEEN]?.values() ?? [])].filter((c) => c.grain.module === moduleUrl);
  const wanted = (cs: AnyGrainClass[]): AnyGrainClass[] | undefined => {
    if (!opts.names) return cs.length ? cs : undefined;
    const got = opts.names.map((n) => cs.find((c) => c.grain.name === n));
    return got.every((c) => c !== undefined) ? (got as AnyGrainClass[]) : undefined;
  };
  let settled: { ok: AnyGrainClass[] } | { err: unknown } | undefined;
  import(moduleUrl).then(
    (ns: Record<string, unknown>) => (settled = { ok: Object.values(ns).filter(isGrainClass) }),
    (err: unknown) => (settled = { err }),
  );
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const settleMs = opts.settleMs ?? 200;
  const t0 = Date.now();
  let lastCount = -1;
  let stableSince = Date.now();
  for (;;) {
    if (settled && 'ok' in settled) {
      const w = wanted([...settled.ok, ...fromRecord()]);
      if (w) return w;
      throw new GrainModuleError(
        moduleUrl,
        opts.names ? `it exports no grain class named ${opts.names.join(', ')}` : 'it exports no grain class',
      );
    }
    const rec = fromRecord();
    if (settled && 'err' in settled) {
      const w = wanted(rec);
      if (w) return w;
      throw new GrainModuleError(
        moduleUrl,
        `importing it failed: ${(settled.err as Error)?.message ?? String(settled.err)}`,
        settled.err,
      );
    }
    // A program paused at an await: what it registered, once asked-for names are there (or, for all
    // classes, once the record stopped growing).
    if (rec.length !== lastCount) {
      lastCount = rec.length;
      stableSince = Date.now();
    }
    if (opts.names ? wanted(rec) : rec.length && Date.now() - stableSince >= settleMs) return wanted(rec)!;
    if (Date.now() - t0 > timeoutMs)
      throw new GrainModuleError(
        moduleUrl,
        `its top-level code did not finish within ${timeoutMs} ms and registered ` +
          `no${opts.names ? ` class named ${opts.names.join(', ')}` : ' grain class'}`,
      );
    await new Promise((r) => setTimeout(r, 10));
  }
}
