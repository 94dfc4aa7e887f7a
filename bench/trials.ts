/** Repeated-trial statistics shared by `pnpm bench` and the GPU record scripts. */

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Median and spread (min, max) of repeated trials. */
export function trials(xs: number[]): { median: number; min: number; max: number; n: number; all: number[] } {
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs), n: xs.length, all: xs };
}
