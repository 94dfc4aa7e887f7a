/**
 * The commands README.md documents ("Scripts": `pnpm codegen …`, `pnpm exec ringgrain codegen …`,
 * `pnpm example:<bank|vector-add|sir|fleet> -- --backend …`, `--help`), run as a user runs them — child
 * processes, each with a timeout as a hang guard — with the bad input a user produces. Every failure must
 * exit non-zero, say what was wrong and what to do, and never dump an untyped stack trace.
 *
 * pnpm itself is not on this machine's PATH, so a package.json script runs as `pnpm run` runs it: its
 * command line through a shell, with node_modules/.bin on PATH and the user's words appended.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const FIX = join(import.meta.dirname, 'fixtures');
const SCRIPTS = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
  .scripts;
const tmp = mkdtempSync(join(tmpdir(), 'rg-cli-audit-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface Ran {
  code: number | null;
  out: string;
  err: string;
  all: string;
}

function done(p: ReturnType<typeof spawnSync>): Ran {
  const out = String(p.stdout ?? '');
  const err = String(p.stderr ?? '');
  return { code: p.status, out, err, all: `${out}\n${err}${p.error ? `\n(spawn: ${p.error.message})` : ''}` };
}

/** `pnpm <script> <words…>`: the script's command line with the words appended, node_modules/.bin on PATH. */
function pnpm(script: string, words: string[], timeout = 60_000): Ran {
  const cmd = SCRIPTS[script];
  if (cmd === undefined) throw new Error(`package.json has no script ${script}`);
  const p = spawnSync('bash', ['-c', `${cmd} "$@"`, script, ...words], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout,
    env: {
      ...process.env,
      PATH: `${join(ROOT, 'node_modules/.bin')}${delimiter}${process.env['PATH'] ?? ''}`,
      RINGGRAIN_LOG: 'warn',
    },
  });
  return done(p);
}

/** `pnpm exec ringgrain <words…>`: the bin pnpm links into the root's node_modules/.bin. */
function ringgrain(words: string[], timeout = 60_000): Ran {
  return done(spawnSync(join(ROOT, 'node_modules/.bin/ringgrain'), words, { cwd: ROOT, encoding: 'utf8', timeout }));
}

/** No V8 stack frames ("    at fn (file:line:col)") and no Node's "Node.js v20…" crash footer. */
function expectNoStack(r: Ran): void {
  expect(r.all, r.all).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m);
  expect(r.all, r.all).not.toMatch(/^Node\.js v\d+/m);
}

/** A failure: the exit code, a message on stderr naming the problem, nothing on stdout, no stack. */
function expectRefused(r: Ran, code: number, ...says: Array<string | RegExp>): void {
  expect(r.code, r.all).toBe(code);
  for (const s of says) {
    if (typeof s === 'string') expect(r.err, r.all).toContain(s);
    else expect(r.err, r.all).toMatch(s);
  }
  expectNoStack(r);
}

const BANK = 'examples/bank/grains.ts';

describe('pnpm codegen / pnpm exec ringgrain codegen', () => {
  it('--help and -h print the usage on stdout and exit 0 (both entries)', () => {
    for (const r of [
      pnpm('codegen', ['--help']),
      pnpm('codegen', ['-h']),
      ringgrain(['--help']),
      ringgrain(['codegen', '--help']),
    ]) {
      expect(r.code, r.all).toBe(0);
      expect(r.out).toContain('usage: ringgrain codegen <module.ts> [--grain Name] [--out dir] [--explain]');
      expect(r.err).toBe('');
    }
  });

  it('a module path that does not exist: exit 1, says which path and what to give instead', () => {
    for (const r of [pnpm('codegen', ['examples/bank/grain.ts']), ringgrain(['codegen', 'nope/missing.ts'])]) {
      expectRefused(
        r,
        1,
        /cannot import (examples\/bank\/grain|nope\/missing)\.ts: no such file \(\/.+\)/,
        'hint: name the .ts module that exports the grain classes',
      );
      expect(r.out).toBe('');
    }
  });

  it('a module with no grain classes: exit 1, says so and how to export one', () => {
    const r = pnpm('codegen', [join(FIX, 'no-grains.ts')]);
    expectRefused(r, 1, 'no-grains.ts', 'it exports no grain class', 'hint: export the grain class from the module');
  });

  it('a handler outside the subset: the CodegenError with grain.method, file:line:col and hint; exit 1', () => {
    for (const r of [
      pnpm('codegen', [join(FIX, 'outside-subset.ts')]),
      ringgrain(['codegen', join(FIX, 'outside-subset.ts'), '--out', join(tmp, 'never')]),
    ]) {
      expectRefused(
        r,
        1,
        /^Dice\.roll \(outside-subset\.ts:11:\d+\): arrow function is not supported in code translated to CUDA$/m,
        /^ {2}hint: /m,
      );
      expect(r.out).toBe('');
    }
    // Nothing half-written for the class that failed.
    expect(() => readdirSync(join(tmp, 'never'))).toThrow();
  });

  it('--explain on a rejected grain also fails with the CodegenError (never a verdict for untranslatable code)', () => {
    expectRefused(
      pnpm('codegen', [join(FIX, 'outside-subset.ts'), '--explain']),
      1,
      'Dice.roll (outside-subset.ts:11:',
    );
  });

  it('--grain naming a class that is not there: exit 2, lists the classes it has, and the usage', () => {
    const r = pnpm('codegen', [BANK, '--grain', 'Acount']);
    expectRefused(r, 2, 'has no grain class "Acount" (it has Account)', 'usage: ringgrain codegen');
  });

  it('--out under a regular file (cannot be created): exit 1, names the path and the reason, no stack', () => {
    const file = join(tmp, 'a-file');
    writeFileSync(file, 'x');
    const r = pnpm('codegen', [BANK, '--out', join(file, 'sub')]);
    expectRefused(r, 1, `cannot write to --out ${join(file, 'sub')}: ENOTDIR`, 'hint: --out names a directory');
  });

  it('--out under /proc: refused at once (mkdirSync recursive never returns there)', () => {
    const r = ringgrain(['codegen', BANK, '--out', '/proc/rg-cli-audit/x'], 20_000);
    expectRefused(r, 1, 'cannot write to --out /proc/rg-cli-audit/x');
  });

  it('--out into a new nested directory works and says what it wrote', () => {
    const dir = join(tmp, 'a/b/c');
    const r = pnpm('codegen', [BANK, '--out', dir]);
    expect(r.code, r.all).toBe(0);
    expect(r.out).toBe(`wrote ${join(dir, 'Account.cu')}\n`);
    expect(readdirSync(dir).sort()).toEqual(['Account.abi.json', 'Account.cu']);
  });

  it.each([
    [[], 'missing <module>'],
    [[BANK, '--grain'], '--grain needs a value'],
    [[BANK, '--out'], '--out needs a value'],
    [[BANK, '--out', '--explain'], '--out needs a value'],
    [[BANK, '--grain=Account'], 'unknown option --grain=Account'],
    [[BANK, '--verbose'], 'unknown option --verbose'],
    [[BANK, BANK], `unexpected argument ${BANK}`],
  ])('wrong words %j: exit 2, the problem and the usage on stderr', (words, why) => {
    const r = pnpm('codegen', words as string[]);
    expectRefused(r, 2, why as string, 'usage: ringgrain codegen');
    expect(r.out).toBe('');
  });
});

const EXAMPLES = [
  ['example:bank', 'Bank example'],
  ['example:vector-add', 'Vector add'],
  ['example:sir', 'SIR epidemic'],
  ['example:fleet', 'Sensor-fleet digital twin'],
] as const;

describe('pnpm example:<name> -- …: flags every example shares', () => {
  // Every example parses its words with examples/shared/backend.ts parseArgs: each spelling is run once
  // (on one example, in turn) and each example once per behaviour, not every spelling on every example
  // (12 child processes each way before, ~1.5 s of CPU apiece on the 2-core machine).
  const HELP = [['--', '--help'], ['--help'], ['--', '-h'], ['--', '--help']];
  const BAD_BACKEND = [
    ['--', '--backend', 'gpu'],
    ['--', '--backend=GPU'],
    ['--', '--backend'],
    ['--backend', 'gpu'],
  ];

  it.each(EXAMPLES.map(([script, title], i) => [script, title, HELP[i]!] as const))(
    '%s %s: %j prints its flags and exits 0',
    (script, title, words) => {
      const r = pnpm(script, [...words]);
      expect(r.code, r.all).toBe(0);
      expect(r.out.startsWith(title), r.out).toBe(true);
      expect(r.out).toContain('--backend');
    },
  );

  it.each(EXAMPLES.map(([script], i) => [script, BAD_BACKEND[i]!] as const))(
    '%s %j: exit 2 naming the allowed backends',
    (script, words) => {
      expectRefused(pnpm(script, [...words]), 2, 'error: --backend must be cpu, cuda, auto or inline');
    },
  );

  it.each([
    ['example:bank', ['--accounts', '10', '--transfers', '10']],
    ['example:vector-add', ['--sizes', '10']],
    ['example:sir', ['--people', '200', '--days', '1']],
    ['example:fleet', ['--devices', '10', '--rounds', '1']],
  ] as const)(
    '%s -- --backend cuda without a driver: the typed refusal, exit 2, a hint to use cpu or auto',
    (script, small) => {
      const r = pnpm(script, ['--', '--backend', 'cuda', ...small]);
      expectRefused(
        r,
        2,
        /^error: --backend cuda is not available: /m,
        'hint: run with --backend cpu or --backend auto',
      );
    },
  );
});

describe('pnpm example:<name>: misspelt flags and stray words are refused, never run on defaults', () => {
  it.each([
    ['example:bank', ['--acounts', '10'], 'unknown option --acounts'],
    ['example:bank', ['--accounts', '10', 'extra'], 'unknown option extra'],
    ['example:vector-add', ['--size', '10'], 'unknown option --size'],
    ['example:sir', ['--peeple', '200', '--days', '1'], 'unknown option --peeple'],
    ['example:sir', ['--people', '200', '--ring-log', '4'], 'unknown option --ring-log'],
    ['example:fleet', ['--devices', '10', '--round', '1'], 'unknown option --round'],
  ] as const)('%s %j', (script, words, why) => {
    expectRefused(
      pnpm(script, ['--', '--backend', 'inline', ...words], 30_000),
      2,
      `error: ${why}`,
      '(--help lists them)',
    );
  });
});

describe('pnpm example:<name>: numeric options out of range or not numbers', () => {
  it.each([
    ['example:bank', ['--accounts', 'abc'], '--accounts must be a non-negative integer (got abc)'],
    ['example:bank', ['--accounts', '-5'], '--accounts must be a non-negative integer (got -5)'],
    ['example:bank', ['--accounts'], '--accounts must be a non-negative integer (got true)'],
    ['example:bank', ['--accounts', '1'], '--accounts must be at least 2'],
    [
      'example:bank',
      ['--accounts', '10', '--transfers', '1.5'],
      '--transfers must be a non-negative integer (got 1.5)',
    ],
    ['example:bank', ['--accounts', '10', '--seed', '1e99'], '--seed must be a non-negative integer'],
    ['example:vector-add', ['--sizes', '10,abc'], '--sizes: each size must be an integer in 1..'],
    ['example:vector-add', ['--sizes', '0'], '--sizes: each size must be an integer in 1..'],
    ['example:vector-add', ['--sizes', '99999999'], '--sizes: each size must be an integer in 1..'],
    ['example:vector-add', ['--sizes'], '--sizes needs a value'],
    ['example:sir', ['--people', '5'], '--people must be in 100..10000000'],
    ['example:sir', ['--people', '10000001'], '--people must be in 100..10000000'],
    ['example:sir', ['--beta', '2000'], '--beta is per mille (0..1000)'],
    [
      'example:sir',
      ['--people', '200', '--days', '1', '--threads', '0'],
      '--threads must be an integer in 1..1024 (got 0)',
    ],
    [
      'example:sir',
      ['--people', '200', '--days', '1', '--ring-log2', '0'],
      '--ring-log2 must be an integer in 1..20 (got 0)',
    ],
    [
      'example:sir',
      ['--people', '200', '--days', '1', '--ring-log2', '40'],
      '--ring-log2 must be an integer in 1..20 (got 40)',
    ],
    [
      'example:sir',
      ['--people', '200', '--days', '1', '--queue-log2', '40'],
      '--queue-log2 must be an integer in 1..30 (got 40)',
    ],
    ['example:fleet', ['--devices', '0'], '--devices must be in 1..2147483647'],
    ['example:fleet', ['--devices', '10', '--rounds', '0'], '--rounds must be at least 1'],
    [
      'example:fleet',
      ['--devices', '10', '--rounds', '1', '--threads', '5000'],
      '--threads must be an integer in 0..1024 (got 5000)',
    ],
    [
      'example:fleet',
      ['--devices', '10', '--rounds', '1', '--store', 'redis'],
      '--store must be lmdb or postgres (got "redis")',
    ],
    ['example:fleet', ['--devices', '10', '--rounds', '1', '--data-dir'], '--data-dir needs a value'],
  ] as const)('%s %j: exit 2 with the rule', (script, words, why) => {
    expectRefused(pnpm(script, ['--', '--backend', 'cpu', ...words], 30_000), 2, `error: ${why}`);
  });
});
