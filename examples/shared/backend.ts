import { readFileSync } from 'node:fs';
/**
 * Shared plumbing for the examples: `--backend cpu|cuda|auto|inline` parsing, building a GrainSystem with the
 * backends that exist here, a quiet logger, a seeded PRNG, progress bars and small print helpers.
 *
 * The CUDA backend is imported dynamically: when `@ringgrain/cuda-backend` does not (yet) export
 * `CudaBackend`, or cannot load (no driver library, no koffi), the examples still run on the CPU backend
 * and say why CUDA was not used.
 */
import { GrainSystem, type SystemOptions } from '@ringgrain/core';
import type { Backend, Placement } from '@ringgrain/core/types';
import { CpuBackend, type CpuBackendOptions } from '@ringgrain/cpu-backend';
import { InlineBackend } from '@ringgrain/inline-backend';
import cliProgress from 'cli-progress';
import { pino, type Logger } from 'pino';

/** A placement, or `inline`: handlers on the host's own thread (no worker threads; for tests and debugging). */
export type BackendChoice = Placement | 'inline';

export interface ExampleArgs {
  backend: BackendChoice;
  /** Other `--name value` / `--flag` options, by name. */
  flags: Map<string, string | true>;
  /** Positional words. */
  rest: string[];
}

/**
 * Parses argv. `pnpm example:x -- --backend cpu` hands tsx a literal `--` before the flags (pnpm 10
 * passes it through), and `pnpm example:x --backend cpu` does not: both work, and so does `--backend=cpu`.
 */
export function parseArgs(argv: readonly string[] = process.argv.slice(2)): ExampleArgs {
  if (argv.includes('--help') || argv.includes('-h')) {
    printUsage();
    process.exit(0);
  }
  const flags = new Map<string, string | true>();
  const rest: string[] = [];
  const args = argv.filter((a) => a !== '--');
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith('--')) {
      rest.push(a);
      continue;
    }
    const eq = a.indexOf('=');
    if (eq > 0) {
      flags.set(a.slice(2, eq), a.slice(eq + 1));
      continue;
    }
    const next = args[i + 1];
    if (next !== undefined && !next.startsWith('--')) {
      flags.set(a.slice(2), next);
      i++;
    } else flags.set(a.slice(2), true);
  }
  const b = flags.get('backend') ?? 'auto';
  if (b !== 'cpu' && b !== 'cuda' && b !== 'auto' && b !== 'inline') {
    fail(`--backend must be cpu, cuda, auto or inline (got ${JSON.stringify(b)})`);
  }
  flags.delete('backend');
  return { backend: b as BackendChoice, flags, rest };
}

/** --help: the running script's leading doc comment (each example documents its flags there). */
export function printUsage(script = process.argv[1] ?? ''): void {
  let doc = '';
  try {
    const m = /\/\*\*([\s\S]*?)\*\//.exec(readFileSync(script, 'utf8'));
    doc = (m?.[1] ?? '')
      .split('\n')
      .map((l) => l.replace(/^\s*\* ?/, ''))
      .join('\n')
      .trim();
  } catch {
    doc = '';
  }
  process.stdout.write(`${doc || `usage: ${script} --backend cpu|cuda|auto|inline`}\n`);
}

/** Integer flag with a default; exits with a message on a bad value (or one outside min..max, when given). */
export function intFlag(args: ExampleArgs, name: string, def: number, min?: number, max?: number): number {
  const v = args.flags.get(name);
  if (v === undefined) return def;
  const n = Number(v);
  if (v === true || !Number.isSafeInteger(n) || n < 0)
    fail(`--${name} must be a non-negative integer (got ${String(v)})`);
  if ((min !== undefined && n < min) || (max !== undefined && n > max))
    fail(`--${name} must be an integer in ${min ?? 0}..${max ?? Number.MAX_SAFE_INTEGER} (got ${n})`);
  return n;
}

/** A misspelt flag (--acounts 5) or a stray word must not run the defaults silently: exits 2 naming it. */
export function rejectUnknown(args: ExampleArgs, known: readonly string[]): void {
  const unknown = [...args.flags.keys()].filter((f) => !known.includes(f)).map((f) => `--${f}`);
  if (unknown.length || args.rest.length)
    fail(`unknown option ${unknown.concat(args.rest).join(', ')} (--help lists them)`);
}

export function fail(message: string): never {
  process.stderr.write(`error: ${message}\n`);
  process.exit(2);
}

export interface CudaLoad {
  backend: Backend | undefined;
  /** Why there is no CUDA backend object (package missing, no export, constructor threw). */
  reason: string | undefined;
}

/** Tries `import('@ringgrain/cuda-backend')` and `new CudaBackend()`; never throws. */
export async function loadCudaBackend(options: Record<string, unknown> = {}): Promise<CudaLoad> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import('@ringgrain/cuda-backend' as string)) as Record<string, unknown>;
  } catch (e) {
    return { backend: undefined, reason: `@ringgrain/cuda-backend could not be imported: ${firstLine(e)}` };
  }
  const Ctor = mod['CudaBackend'];
  if (typeof Ctor !== 'function') {
    return { backend: undefined, reason: '@ringgrain/cuda-backend does not export CudaBackend yet' };
  }
  try {
    return { backend: new (Ctor as new (o: Record<string, unknown>) => Backend)(options), reason: undefined };
  } catch (e) {
    return { backend: undefined, reason: `new CudaBackend() failed: ${firstLine(e)}` };
  }
}

function firstLine(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  return m.split('\n')[0] ?? m;
}

export interface BuiltSystem {
  system: GrainSystem;
  /** The placement to register grains with ('cpu', 'cuda' or 'inline'; 'auto' already resolved here). */
  placement: 'cpu' | 'cuda' | 'inline';
  /** One human line: which backend and why. */
  describe: string;
}

/** A pino logger at `level` (default: warn, or RINGGRAIN_LOG) writing JSON to stderr. */
export function quietLogger(level = process.env['RINGGRAIN_LOG'] ?? 'warn'): Logger {
  return pino({ name: 'ringgrain', level }, pino.destination(2));
}

/**
 * Builds the system for `choice` (`cudaOptions` go to `new CudaBackend(...)`: partitions, queueCapacity…). `cuda` fails
 * with a clear message when the backend is missing or its
 * probe fails; `auto` picks cuda when it probes ok and says why when it falls back to cpu.
 */
export async function buildSystem(
  choice: BackendChoice,
  opts: Omit<SystemOptions, 'backends'> = {},
  cudaOptions: Record<string, unknown> = {},
  cpuOptions: CpuBackendOptions = {},
): Promise<BuiltSystem> {
  if (choice === 'inline') {
    const inline = new InlineBackend();
    return {
      system: new GrainSystem({ logger: quietLogger(), ...opts, backends: { inline } }),
      placement: 'inline',
      describe: 'inline (handlers on the host thread)',
    };
  }
  const cpu = new CpuBackend(cpuOptions);
  const backends: Record<string, Backend> = { cpu };
  if (choice === 'cpu') {
    return {
      system: new GrainSystem({ logger: quietLogger(), ...opts, backends }),
      placement: 'cpu',
      describe: `cpu (${(await cpu.probe()).device ?? 'worker threads'})`,
    };
  }
  const cuda = await loadCudaBackend(cudaOptions);
  let why = cuda.reason;
  let device: string | undefined;
  if (cuda.backend) {
    try {
      const p = await cuda.backend.probe();
      if (p.ok) device = p.device ?? 'cuda device';
      else why = `cuda probe failed: ${p.reason ?? 'no reason given'}`;
    } catch (e) {
      why = `cuda probe threw: ${firstLine(e)}`;
    }
  }
  if (device !== undefined) {
    backends.cuda = cuda.backend!;
    return {
      system: new GrainSystem({ logger: quietLogger(), ...opts, backends }),
      placement: 'cuda',
      describe: `cuda (${device})`,
    };
  }
  if (choice === 'cuda')
    fail(`--backend cuda is not available: ${why}\n  hint: run with --backend cpu or --backend auto`);
  return {
    system: new GrainSystem({ logger: quietLogger(), ...opts, backends }),
    placement: 'cpu',
    describe: `cpu (auto: ${why})`,
  };
}

/** A seeded PRNG (mulberry32): same seed, same sequence, on every machine. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A progress bar on stderr when it is a TTY (and a plain line every 10% otherwise), for runs longer than a moment. */
export function progress(label: string, total: number): { update(n: number): void; stop(): void } {
  if (process.stderr.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        format: `${label.padEnd(14)} [{bar}] {percentage}% | {value}/{total} | {duration_formatted}`,
        stream: process.stderr,
        hideCursor: true,
        clearOnComplete: false,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(total, 0);
    return { update: (n) => bar.update(n), stop: () => bar.stop() };
  }
  let lastTenth = -1;
  const t0 = performance.now();
  return {
    update(n) {
      const tenth = Math.floor((n / Math.max(1, total)) * 10);
      if (tenth !== lastTenth && tenth < 10) {
        lastTenth = tenth;
        process.stderr.write(`${label}: ${n}/${total} (${((performance.now() - t0) / 1000).toFixed(1)} s)\n`);
      }
    },
    stop() {
      process.stderr.write(`${label}: done in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
    },
  };
}

export function ms(t: number): string {
  return t < 1 ? `${(t * 1000).toFixed(0)} µs` : t < 1000 ? `${t.toFixed(1)} ms` : `${(t / 1000).toFixed(2)} s`;
}

/** Where each kernel stands: what a person needs to tell a lost message from a slow one. */
export function whereItStands(system: GrainSystem): string {
  return Object.entries(system.metrics())
    .map(
      ([g, c]) =>
        `${g}: sent ${c.sent}, k2k sent ${c.k2kSent}/received ${c.k2kReceived}, processed ${c.processed}, ` +
        `rejected ${c.rejected}, handler errors ${c.handlerErrors}, inbound ` +
        `depth ${c.inboundDepth}` +
        (c.overflow
          ? `, overflow in use ${c.overflow.inUse} (high ${c.overflow.highWater}, ` +
            `overflowed ${c.overflow.overflowed}, refused ${c.overflow.exhausted})`
          : ''),
    )
    .join('\n  ');
}
