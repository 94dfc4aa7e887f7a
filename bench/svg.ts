/** A small hand-written SVG writer for the benchmark charts: line charts (CDFs) and bar charts. */

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd'];
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
/** Width of a label at font-size 12 (sans-serif runs about 7 px a character): margins grow to fit, never clip. */
const textWidth = (s: string) => Math.ceil(s.length * 7);
const fmt = (v: number) =>
  v >= 1000 ? v.toLocaleString('en-US', { maximumFractionDigits: 0 }) : Number(v.toPrecision(3)).toString();

export interface Series {
  name: string;
  points: ReadonlyArray<readonly [number, number]>;
}

interface Frame {
  w: number;
  h: number;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

function frame(title: string, f: Frame): string[] {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${f.w}" height="${f.h}" viewBox="0 0 ${f.w} ${f.h}" ` +
      'font-family="sans-serif" font-size="12">',
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${f.w / 2}" y="20" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`,
  ];
}

/** Lines over a log10 x axis (latency in µs) and a linear y axis (0..1 for a CDF). */
export function lineChart(opts: {
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  logX?: boolean;
  marks?: Array<{ x: number; label: string }>;
}): string {
  const right = Math.max(180, 34 + Math.max(0, ...opts.series.map((s) => textWidth(s.name))) + 12);
  const f: Frame = { w: 580 + right, h: 440, left: 70, right, top: 40, bottom: 60 };
  const pw = f.w - f.left - f.right;
  const ph = f.h - f.top - f.bottom;
  const xs = opts.series.flatMap((s) => s.points.map((p) => p[0])).filter((x) => x > 0);
  const logX = opts.logX ?? true;
  const tx = (x: number) => (logX ? Math.log10(Math.max(x, 1e-9)) : x);
  let x0 = Math.floor(tx(Math.min(...xs)));
  let x1 = Math.ceil(tx(Math.max(...xs)));
  if (x1 === x0) x1 = x0 + 1;
  if (!logX) x0 = 0;
  const px = (x: number) => f.left + ((tx(x) - x0) / (x1 - x0)) * pw;
  const py = (y: number) => f.top + ph - y * ph;
  const out = frame(opts.title, f);
  out.push(`<rect x="${f.left}" y="${f.top}" width="${pw}" height="${ph}" fill="none" stroke="#333"/>`);
  for (let e = x0; e <= x1; e++) {
    const v = logX ? Math.pow(10, e) : e;
    const x = px(v);
    out.push(`<line x1="${x}" y1="${f.top}" x2="${x}" y2="${f.top + ph}" stroke="#ddd"/>`);
    out.push(`<text x="${x}" y="${f.top + ph + 16}" text-anchor="middle">${fmt(v)}</text>`);
  }
  for (let k = 0; k <= 4; k++) {
    const y = py(k / 4);
    out.push(`<line x1="${f.left}" y1="${y}" x2="${f.left + pw}" y2="${y}" stroke="#ddd"/>`);
    out.push(`<text x="${f.left - 6}" y="${y + 4}" text-anchor="end">${(k / 4).toFixed(2)}</text>`);
  }
  for (const m of opts.marks ?? []) {
    const x = px(m.x);
    out.push(`<line x1="${x}" y1="${f.top}" x2="${x}" y2="${f.top + ph}" stroke="#555" stroke-dasharray="4 3"/>`);
    out.push(`<text x="${x + 3}" y="${f.top + 12}" fill="#555">${esc(m.label)}</text>`);
  }
  opts.series.forEach((s, i) => {
    const d = s.points.map((p, k) => `${k ? 'L' : 'M'}${px(p[0]).toFixed(1)},${py(p[1]).toFixed(1)}`).join('');
    out.push(`<path d="${d}" fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="2"/>`);
    const ly = f.top + 10 + i * 20;
    out.push(`<rect x="${f.left + pw + 14}" y="${ly - 9}" width="14" height="4" fill="${COLORS[i % COLORS.length]}"/>`);
    out.push(`<text x="${f.left + pw + 34}" y="${ly - 3}">${esc(s.name)}</text>`);
  });
  out.push(
    `<text x="${f.left + pw / 2}" y="${f.h - 18}" ` +
      `text-anchor="middle">${esc(opts.xLabel)}${logX ? ' (log scale)' : ''}</text>`,
  );
  out.push(
    `<text transform="translate(18 ${f.top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(opts.yLabel)}</text>`,
  );
  out.push('</svg>');
  return out.join('\n') + '\n';
}

/** Horizontal bars with their values; an optional dashed target line. */
export function barChart(opts: {
  title: string;
  unit: string;
  bars: Array<{ name: string; value: number }>;
  target?: { value: number; label: string };
}): string {
  const rowH = 34;
  const left = Math.max(230, Math.max(0, ...opts.bars.map((b) => textWidth(b.name))) + 16);
  const f: Frame = { w: 530 + left, h: 80 + opts.bars.length * rowH + 30, left, right: 120, top: 40, bottom: 40 };
  const pw = f.w - f.left - f.right;
  const max = Math.max(...opts.bars.map((b) => b.value), opts.target?.value ?? 0) * 1.05 || 1;
  const px = (v: number) => f.left + (v / max) * pw;
  const out = frame(opts.title, f);
  opts.bars.forEach((b, i) => {
    const y = f.top + 10 + i * rowH;
    out.push(`<text x="${f.left - 8}" y="${y + 17}" text-anchor="end">${esc(b.name)}</text>`);
    out.push(
      `<rect x="${f.left}" y="${y}" width="${Math.max(1, px(b.value) - f.left).toFixed(1)}" height="24" ` +
        `fill="${COLORS[i % COLORS.length]}"/>`,
    );
    out.push(`<text x="${px(b.value) + 6}" y="${y + 17}">${fmt(b.value)} ${esc(opts.unit)}</text>`);
  });
  const bottom = f.top + 10 + opts.bars.length * rowH;
  out.push(`<line x1="${f.left}" y1="${f.top}" x2="${f.left}" y2="${bottom}" stroke="#333"/>`);
  if (opts.target) {
    const x = px(opts.target.value);
    out.push(`<line x1="${x}" y1="${f.top}" x2="${x}" y2="${bottom}" stroke="#555" stroke-dasharray="5 3"/>`);
    out.push(`<text x="${x}" y="${bottom + 16}" text-anchor="middle" fill="#555">${esc(opts.target.label)}</text>`);
  }
  out.push('</svg>');
  return out.join('\n') + '\n';
}

/** Histogram as bars over log-spaced bins (counts normalised per series), drawn as step lines. */
export function histogramChart(opts: {
  title: string;
  xLabel: string;
  series: Array<{ name: string; samples: Float64Array }>;
  bins?: number;
}): string {
  const bins = opts.bins ?? 60;
  const all = opts.series.flatMap((s) => [s.samples[0]!, s.samples[s.samples.length - 1]!]).filter((x) => x > 0);
  const lo = Math.log10(Math.min(...all));
  const hi = Math.log10(Math.max(...all)) + 1e-9;
  const series: Series[] = opts.series.map((s) => {
    const counts = new Float64Array(bins);
    for (const v of s.samples)
      counts[Math.min(bins - 1, Math.max(0, Math.floor(((Math.log10(Math.max(v, 1e-9)) - lo) / (hi - lo)) * bins)))]!++;
    const peak = Math.max(...counts) || 1;
    const pts: Array<[number, number]> = [];
    for (let b = 0; b < bins; b++) {
      const a = Math.pow(10, lo + ((hi - lo) * b) / bins);
      const z = Math.pow(10, lo + ((hi - lo) * (b + 1)) / bins);
      pts.push([a, counts[b]! / peak], [z, counts[b]! / peak]);
    }
    return { name: s.name, points: pts };
  });
  return lineChart({ title: opts.title, xLabel: opts.xLabel, yLabel: 'share of samples (peak = 1)', series });
}
