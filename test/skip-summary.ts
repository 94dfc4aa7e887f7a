/**
 * A vitest reporter that ends the run with one line: how many tests were skipped, by reason. The reason is
 * the skip's note (`ctx.skip(note)`), else what a title says after "skipped:" (the CUDA lanes name
 * "no CUDA driver/device" so; the nvcc and g++ builds name the missing tool), else the file and describe
 * block, so that a skip nobody explained still shows where it is.
 */
import type { Reporter, TestCase, TestModule } from 'vitest/node';

/** The reason a title gives: "x (skipped: why)" or "skipped: why". */
export function reasonOf(titles: readonly string[]): string | undefined {
  for (const t of titles) {
    const m = /\(skipped:\s*(.*)\)|\bskipped:\s*(.+)$/i.exec(t);
    const why = (m?.[1] ?? m?.[2])?.trim();
    if (why) return why.replace(/^(no CUDA driver\/device)\s*(?:—|:|-)\s*/, '$1: ');
  }
  return undefined;
}

function titles(t: TestCase): string[] {
  const out = [t.name];
  for (let p = t.parent; p.type === 'suite'; p = p.parent) out.push(p.name);
  return out;
}

export function summarize(
  tests: Iterable<{ titles: string[]; note?: string | undefined; file: string }>,
): string | undefined {
  const by = new Map<string, number>();
  let n = 0;
  for (const t of tests) {
    n++;
    const suites = t.titles.slice(1).reverse().join(' > ');
    const why = t.note ?? reasonOf(t.titles) ?? `no reason given (${t.file}${suites ? `: ${suites}` : ''})`;
    by.set(why, (by.get(why) ?? 0) + 1);
  }
  if (n === 0) return undefined;
  const parts = [...by].sort((a, b) => b[1] - a[1]).map(([why, k]) => `${k} ${why}`);
  return `Skipped ${n} test${n === 1 ? '' : 's'}, by reason: ${parts.join('; ')}`;
}

export default class SkipSummary implements Reporter {
  private root = '';

  onInit(ctx: { config: { root: string } }): void {
    this.root = ctx.config.root;
  }

  onTestRunEnd(modules: readonly TestModule[]): void {
    const skipped: { titles: string[]; note?: string | undefined; file: string }[] = [];
    for (const m of modules) {
      const file = m.moduleId.startsWith(this.root) ? m.moduleId.slice(this.root.length + 1) : m.moduleId;
      for (const t of m.children.allTests()) {
        const r = t.result();
        if (r.state === 'skipped') skipped.push({ titles: titles(t), note: r.note, file });
      }
    }
    const line = summarize(skipped);
    if (line) process.stdout.write(`\n${line}\n`);
  }
}
