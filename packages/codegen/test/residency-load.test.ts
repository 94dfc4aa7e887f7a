import { describe, expect, it } from 'vitest';
import { NODES, NO_POOL, PARTS, partOf, partition, pool, run } from './residency-harness.ts';
import { HAVE_GXX } from './toolchain.ts';

/**
 * Loading on first message and installs on the device (residency.cuh), through the g++ harness
 * (residency-harness.ts).
 */

describe.skipIf(!HAVE_GXX || !pool || !partition)(
  `loading on first message and installs on the device (residency.cuh, g++ on the ` +
    `host)${pool && partition ? '' : NO_POOL}`,
  () => {
    /** The lines an install prints: per partition in order, its rows in board order. */
    const byPartition = (rows: Array<{ key: number; lines: string[] }>) =>
      [0, 1, 2].flatMap((p) => rows.filter((r) => partOf(r.key) === p).flatMap((r) => r.lines));

    it(
      "parks a missing actor's messages in order, posts its key once, installs (load) then replays them; a " +
        'failed load rejects exactly its parked messages',
      () => {
        const out = run([
          'T 5 1 10 1',
          'T 5 2 11 2',
          'T 6 3 12 7',
          'T 5 0 13 3',
          'L',
          'Z',
          'I 0 2 disk-on-fire',
          '5 1 100',
          '6 2 0',
          'T 5 4 20 4',
          'Z',
          'L',
        ]);
        let at = 0;
        const take = (n: number) => out.slice(at, (at += n));
        expect(take(4)).toEqual(['park 5 1', 'park 5 2', 'park 6 3', 'park 5 0']);
        expect(take(2)).toEqual(['load 5', 'load 6']); // one request per actor, in the order of their first messages
        expect(take(1)).toEqual(['ctr 4 0 0 0 parked 4 inUse 4']); // received, not processed: system.idle() waits
        expect(take(6)).toEqual(
          byPartition([
            // its state, then timers and onActivate with the first parked message's clock, then the messages in order
            { key: 5, lines: ['timers 5 10', 'onActivate 5 10', 'run 5 1 10 101', 'run 5 2 11 103', 'run 5 0 13 106'] },
            // REPLY | ERROR with the failure's id and the store's text, to the parked ask (corr 3)
            { key: 6, lines: ['reply 0 6 3 failure 7 disk-on-fire'] },
          ]),
        );
        expect(take(1)).toEqual(['I 1 1 1']);
        expect(take(1)).toEqual(['run 5 4 20 110']); // READY now: runs at once
        expect(take(1)).toEqual(['ctr 5 4 1 1 parked 0 inUse 0']); // received = processed + rejected; nodes back
        expect(out.slice(at)).toEqual(['live 1 dead 1 next 2']); // no load posted again; 6's entry a tombstone
      },
    );

    it(
      'preload installs only keys not held (a held state is newer), with clock 0; a later miss loads again; ' +
        'deactivation with Infinity rejects what still waits',
      () => {
        const out = run([
          'T 5 1 10 1',
          'L',
          'I 0 1 -',
          '5 1 100',
          'I 1 3 -',
          '5 1 999',
          '7 1 50',
          '8 0 0',
          'T 7 5 30 1',
          'T 8 6 31 2',
          'T 5 9 32 1',
          'T 6 7 40 9',
          'L',
          'D inf 50',
          'Z',
          'X',
        ]);
        let at = 0;
        const take = (n: number) => out.slice(at, (at += n));
        expect(take(2)).toEqual(['park 5 1', 'load 5']);
        expect(take(4)).toEqual(['timers 5 10', 'onActivate 5 10', 'run 5 1 10 101', 'I 1 1 0']);
        expect(take(4)).toEqual(
          byPartition([
            { key: 7, lines: ['timers 7 0', 'onActivate 7 0'] },
            { key: 8, lines: ['timers 8 0', 'onActivate 8 0'] },
          ]),
        );
        expect(take(1)).toEqual(['I 2 2 0']); // key 5 was held: passed
        expect(take(3)).toEqual(['run 7 5 30 51', 'run 8 6 31 2', 'run 5 9 32 102']);
        expect(take(2)).toEqual(['park 6 7', 'load 6']);
        // Infinity: the LOADING actor's parked ask is rejected, the three READY ones are deactivated.
        expect(take(1)).toEqual(["reply 0 6 7 failure 0 the kernel stopped before the actor's state was loaded"]);
        expect(take(1)).toEqual(['D 3 2 3 3']);
        expect(take(3).sort()).toEqual(['5 1102 1', '7 1051 1', '8 1002 1']); // onDeactivate (+1000) before the copy
        take(1); // hooks line
        expect(take(1)).toEqual(['ctr 5 4 1 3 parked 0 inUse 0']); // received = processed + rejected
        expect(take(1)).toEqual(['stopped 0 1']); // a stopped kernel serves requests until the host's EXIT
      },
    );

  it('a full pool rejects the message (typed, counted) and keeps the ones parked before it', () => {
    const cmds = Array.from({ length: 20 }, (_, i) => `T 9 ${i + 1} ${i} 1`);
    const out = run([...cmds, 'Z', 'L', 'I 0 1 -', '9 0 0', 'Z']);
    const parked = out.filter((l) => l.startsWith('park 9'));
    const refused = out.filter((l) => l === 'reject 9 pool');
    expect(parked.length + refused.length).toBe(20);
    expect(parked.length).toBe(NODES - PARTS); // every node of the ring (the partitions' stubs are not in it)
    expect(parked).toEqual(Array.from({ length: parked.length }, (_, i) => `park 9 ${i + 1}`));
    const runs = out.filter((l) => l.startsWith('run 9'));
    expect(runs).toEqual(Array.from({ length: parked.length }, (_, i) => `run 9 ${i + 1} ${i} ${i + 1}`));
    expect(out.at(-2)).toBe(`ctr 20 ${parked.length} ${refused.length} 1 parked 0 inUse 0`);
  });
});
