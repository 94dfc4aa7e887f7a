/**
 * Source lines longer than 120 characters: counted over the repository's code (packages, examples, test,
 * bench, scripts; TypeScript, JavaScript and C/CUDA), reported by area and worst file, and checked against
 * the count in line-length.json, which may only go down. A whole-tree reformat would touch most lines of
 * code several people edit at once; so the count is held where it is and brought down file by file.
 *
 *   tsx scripts/lint/line-length.ts            report; exit 1 if the count is above the recorded one
 *   tsx scripts/lint/line-length.ts --update   record a lower count (refuses a higher one)
 *
 * Files are those git tracks or would track (untracked, not ignored), less generated ones (the snapshot
 * test's pinned unit, dist/, bench/results/). Length is in code points, as an editor shows it.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '../..');
const LIMIT = 120;
const BASELINE = join(import.meta.dirname, 'line-length.json');
const CODE = /\.(ts|mts|cts|js|mjs|cjs|cu|cuh|cpp|h)$/;
const GENERATED = [/__snapshots__\//, /(^|\/)dist\//, /^bench\/results\//];

interface Baseline {
  limit: number;
  /** Lines over `limit` when last recorded. */
  over: number;
  recorded: string;
}

function files(): string[] {
  const out = execFileSync(
    'git',
    [
      'ls-files',
      '--cached',
      '--others',
      '--exclude-standard',
      '--',
      'packages',
      'examples',
      'test',
      'bench',
      'scripts',
    ],
    { cwd: ROOT, encoding: 'utf8' },
  );
  return out.split('\n').filter((f) => CODE.test(f) && !GENERATED.some((re) => re.test(f)));
}

function countFile(path: string): number {
  let text: string;
  try {
    text = readFileSync(join(ROOT, path), 'utf8');
  } catch {
    return 0; // listed by git but deleted in the work tree
  }
  let n = 0;
  for (const line of text.split('\n')) if (line.length > LIMIT && [...line].length > LIMIT) n++;
  return n;
}

const area = (f: string) => (f.startsWith('packages/') ? f.split('/').slice(0, 3).join('/') : f.split('/')[0]!);

const perFile = files()
  .map((f) => [f, countFile(f)] as const)
  .filter(([, n]) => n > 0);
const total = perFile.reduce((a, [, n]) => a + n, 0);
const byArea = new Map<string, number>();
for (const [f, n] of perFile) byArea.set(area(f), (byArea.get(area(f)) ?? 0) + n);

const base = JSON.parse(readFileSync(BASELINE, 'utf8')) as Baseline;
console.log(`lines over ${LIMIT} characters: ${total} (recorded: ${base.over}, ${base.recorded})`);
for (const [a, n] of [...byArea].sort((x, y) => y[1] - x[1])) console.log(`  ${String(n).padStart(5)}  ${a}`);
console.log('worst files:');
for (const [f, n] of [...perFile].sort((x, y) => y[1] - x[1]).slice(0, 10))
  console.log(`  ${String(n).padStart(5)}  ${f}`);

if (process.argv.includes('--update')) {
  if (total > base.over) {
    console.error(`not recorded: ${total} is above the recorded ${base.over}; the count may only go down`);
    process.exit(1);
  }
  writeFileSync(
    BASELINE,
    `${JSON.stringify({ limit: LIMIT, over: total, recorded: new Date().toISOString().slice(0, 10) }, null, 2)}\n`,
  );
  console.log(`recorded ${total}`);
} else if (total > base.over) {
  console.error(
    `${total - base.over} more lines over ${LIMIT} characters than recorded: shorten the new ones (the ` +
      'count may only go down)',
  );
  process.exit(1);
}
