import { describe, expect, it } from 'vitest';
import { MAX, NO_POOL, partOf, partition, pool, run } from './residency-harness.ts';
import { HAVE_GXX } from './toolchain.ts';

/**
 * A full table making room on the device (residency.cuh), and many more keys than directory entries, through the
 * g++ harness (residency-harness.ts).
 */

describe.skipIf(!HAVE_GXX || !pool || !partition)(
  `a full table makes room on the device (residency.cuh, g++ on the host)${pool && partition ? '' : NO_POOL}`,
  () => {
    /** `n` keys from `start` up whose partition passes `keep`. */
    const keysWhere = (n: number, start: number, keep: (p: number) => boolean) => {
      const out: number[] = [];
      for (let k = start; out.length < n; k++) if (keep(partOf(k))) out.push(k);
      return out;
    };
    /** A turns at times t0 + i (the state's first word is the key: the harness's fresh actor). */
    const fill = (keys: number[], t0: number) => keys.map((k, i) => `A ${partOf(k)} ${k} ${t0 + i}`);
    /**
     * The evict-ring rows the model expects: the actors of `parts` whose last turn is before `before`, onDeactivate's
     * +1000 in the state, dirty.
     */
    const rows = (keys: number[], t0: number, before: number, parts: number[]) =>
      keys.flatMap((k, i) => (t0 + i < before && parts.includes(partOf(k)) ? [`evict ${k} ${k + 1000} 1`] : [])).sort();

    it(
      "a new key meeting a full table deactivates its own worker's idle actors (onDeactivate, final state and " +
        'mark on the evict ring), takes a freed slot; the other workers deactivate theirs when they answer the ' +
        'room request',
      () => {
        const keys = Array.from({ length: MAX }, (_, i) => 100 + i);
        const key = keysWhere(1, 500, (p) => p === 0)[0]!;
        const out = run(['R 1000', ...fill(keys, 0), 'W 1', `T ${key} 1 1030 5`, 'E', 'M', 'P', 'E', 'M', 'L', 'Z']);
        let at = MAX;
        expect(out.slice(0, MAX).every((l) => l.endsWith(' 1'))).toBe(true); // 48 fresh activations
        expect(out[at++]).toBe(`park ${key} 1`); // a slot was found at once: LOADING, parked
        const own = rows(keys, 0, 30, [0]);
        expect(own.length).toBeGreaterThan(0);
        expect(out.slice(at, at + own.length).sort()).toEqual(own);
        at += own.length;
        // Room request 1: worker 0 answered it (no wait for the others: it found a slot), the others not yet.
        expect(out[at++]).toBe(`room 1 1 0 0 made ${own.length} waits 0 hooks ${own.length}`);
        expect(out[at++]).toBe('stray 0');
        const others = rows(keys, 0, 30, [1, 2]);
        expect(out.slice(at, at + others.length).sort()).toEqual(others);
        at += others.length;
        const all = own.length + others.length;
        // every actor idle for idleMs at 1030 (last turns 0..29), as the CPU backend deactivates them
        expect(all).toBe(30);
        expect(out[at++]).toBe(`room 1 1 1 1 made ${all} waits 0 hooks ${all}`);
        expect(out[at++]).toBe('stray 0');
        expect(out[at++]).toBe(`load ${key}`);
        expect(out[at++]).toBe('ctr 1 0 0 48 parked 1 inUse 1'); // the new actor is counted at its install
        expect(out[at]).toBe(`live 19 dead 30 next 48`); // 18 READY, 1 LOADING
      },
    );

    it(
      'a worker with no idle actor of its own waits until the other workers deactivated theirs; with nothing ' +
        'idle anywhere, the message is rejected as a full table (typed, counted); without idleMs no room is asked ' +
        'for',
      () => {
        // Every actor in partitions 1 and 2; the new key's worker (0) holds none.
        const keys = keysWhere(MAX, 1, (p) => p !== 0);
        const [k0, k1, k2] = keysWhere(3, 5000, (p) => p === 0);
        const out = run(['R 1000', ...fill(keys, 0), 'W 0', `T ${k0} 1 1010 5`, 'E', 'Z']);
        let at = MAX;
        expect(out[at++]).toBe(`park ${k0} 1`);
        // the hook stores nothing (W 0)
        const gone = keys.flatMap((k, i) => (i < 10 ? [`evict ${k} ${k} 1`] : [])).sort();
        expect(out.slice(at, at + 10).sort()).toEqual(gone);
        at += 10;
        expect(out[at++]).toBe('room 1 1 1 1 made 10 waits 1 hooks 10'); // one wait: the others answered in it
        expect(out[at++]).toBe('ctr 1 0 0 48 parked 1 inUse 1');
        // Every actor's last turn within idleMs: nothing can be deactivated, the message is a full table.
        const busy = run([
          'R 1000',
          ...fill(keys, 5000),
          `T ${k1} 2 5100 5`,
          'E',
          'R inf',
          `T ${k2} 3 99999 5`,
          'E',
          'Z',
        ]);
        at = MAX;
        expect(busy[at++]).toBe(`reject ${k1} full`);
        expect(busy[at++]).toBe('room 1 1 1 1 made 0 waits 1 hooks 0'); // every worker answered, nothing deactivated
        expect(busy[at++]).toBe(`reject ${k2} full`); // no idleMs: no room request
        expect(busy[at++]).toBe('room 1 1 1 1 made 0 waits 1 hooks 0');
        expect(busy[at++]).toBe('ctr 2 0 2 48 parked 0 inUse 0');
      },
    );

  it('a class without storage (activation in the turn) makes room the same way', () => {
    const keys = Array.from({ length: MAX }, (_, i) => 200 + i);
    const [k0] = keysWhere(1, 7000, (p) => p === 1);
    const out = run(['R 100', ...fill(keys, 0), 'W 1', `A 1 ${k0} 5000`, 'P', 'E', 'M']);
    expect(out[MAX]).toMatch(/^\d+ 1$/); // a fresh activation on a freed slot
    const all = keys.map((k) => `evict ${k} ${k + 1000} 1`).sort();
    expect(out.slice(MAX + 1, MAX + 1 + MAX).sort()).toEqual(all); // every actor idle at 5000: all deactivated
    expect(out[MAX + 1 + MAX]).toBe(`room 1 1 1 1 made ${MAX} waits 0 hooks ${MAX}`);
    expect(out[MAX + 2 + MAX]).toBe('stray 0');
  });
});

const MANY =
  `many more keys than directory entries (residency.cuh, g++ on the host)${pool && partition ? '' : NO_POOL}`;
describe.skipIf(!HAVE_GXX || !pool || !partition)(MANY, () => {
  /*
   * The conformance case 'maxActors 1024 per lane serves 100,000 keys' at the harness's scale: batches of new keys
   * (a message each, all workers' keys), their loads answered, the clock moved past idleMs between batches, so
   * every batch meets a full table and makes room. 960 keys pass 128 directory entries: every entry has been a
   * tombstone long before the end. The H200 at a56e4f3 rejected 345 of a batch in that case: a lookup that only
   * stopped at an EMPTY entry walked the whole directory and called the key's table full.
   */
  it('every message of 960 keys through 48 slots (128 entries) runs, none rejected; a full table makes room', () => {
    const BATCH = 12;
    const BATCHES = 80;
    const cmds = ['R 1000'];
    for (let batch = 0; batch < BATCHES; batch++) {
      const keys = Array.from({ length: BATCH }, (_, i) => batch * BATCH + i);
      keys.forEach((k, i) => cmds.push(`T ${k} ${i + 1} ${2000 * batch} 1`));
      cmds.push('L', `I 0 ${BATCH} -`, ...keys.map((k) => `${k} 0 0`));
      // a second message to each, READY now: found where its insert put it, not loaded (or inserted) again
      keys.forEach((k, i) => cmds.push(`T ${k} ${100 + i} ${2000 * batch + 1} 2`));
      cmds.push('E');
    }
    cmds.push('Z');
    const out = run(cmds);
    const keys = BATCH * BATCHES;
    const parkedAgain = (l: string) => l.startsWith('park') && Number(l.split(' ')[2]) >= 100;
    expect(out.filter((l) => l.startsWith('reject') || l.startsWith('lost') || parkedAgain(l))).toEqual([]);
    // each key's first message ran on a fresh actor (ABSENT: zeroed + 1) after its install, then its second (+ 2)
    const runs = out.filter((l) => l.startsWith('run '));
    expect(runs.length).toBe(2 * keys);
    const byKey = new Map<string, string[]>();
    for (const l of runs) byKey.set(l.split(' ')[1]!, [...(byKey.get(l.split(' ')[1]!) ?? []), l.split(' ').at(-1)!]);
    expect(byKey.size).toBe(keys);
    expect([...byKey.values()].every((v) => v.join() === '1,3')).toBe(true);
    // each load posted once, in order within a batch
    const loads = out.filter((l) => l.startsWith('load ')).map((l) => Number(l.split(' ')[1]));
    expect(loads).toEqual(Array.from({ length: keys }, (_, i) => i));
    // every key of the batches before the last two was deactivated to make room, once
    const evicted = out.filter((l) => l.startsWith('evict ')).map((l) => Number(l.split(' ')[1]));
    expect(new Set(evicted).size).toBe(evicted.length);
    expect(evicted.length).toBeGreaterThanOrEqual(keys - 4 * BATCH);
    expect(out.at(-2)).toBe(`ctr ${2 * keys} ${2 * keys} 0 ${keys} parked 0 inUse 0`);
    // no EMPTY entry is left (128 = live + dead): the lookups stopped at probeMax, not at an EMPTY entry
    const [, live, , dead] = out.at(-1)!.split(' ');
    expect(Number(live) + Number(dead)).toBe(128);
  });

  it('no EMPTY entry left: a new key of a class without storage takes a free slot, no room request', () => {
    // 400 keys through the 48 slots of a class without storage, deactivated in waves: every entry a tombstone or live.
    const cmds = ['R 1000', 'W 0'];
    let t = 0;
    for (let wave = 0; wave < 20; wave++) {
      for (let i = 0; i < 20; i++) cmds.push(`A ${partOf(wave * 20 + i)} ${wave * 20 + i} ${t++}`);
      cmds.push(`D ${t} ${t}`);
    }
    // 10 actors now, idle for idleMs at 5000: a room request would deactivate them.
    for (let i = 0; i < 10; i++) cmds.push(`A ${partOf(1000 + i)} ${1000 + i} ${t++}`);
    cmds.push(`A ${partOf(2000)} 2000 5000`, 'E');
    const out = run(cmds);
    expect(out.filter((l) => l === 'full')).toEqual([]);
    const last = out.at(-3)!;
    expect(last).toMatch(/^\d+ 1$/); // a fresh activation
    expect(out.at(-2)).toBe('room 0 0 0 0 made 0 waits 0 hooks 400'); // no room request (the hooks are the waves' 400)
    const [, live, , dead] = out.at(-1)!.split(' ');
    expect([Number(live), Number(live) + Number(dead)]).toEqual([11, 128]);
  });
});
