import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { NO_POOL, PARTS, from, harness, partition, pool, src, to } from './residency-harness.ts';
import { HAVE_GXX, gxxBuild } from './toolchain.ts';

/**
 * Deactivation on the device (residency.cuh) through the g++ harness (residency-harness.ts): the harness builds
 * with the residency structs' static_asserts, and a request deactivates what the CPU backend's model says.
 */

/** The CPU backend's deactivation as a model: which keys leave, with which state and dirty mark. */
interface Actor { part: number; slot: number; value: number; last: number; dirty: boolean }

describe.skipIf(!HAVE_GXX || !pool || !partition)(
  `deactivation on the device (residency.cuh, g++ on the host)${pool && partition ? '' : NO_POOL}`,
  () => {
    it('builds with the residency structs emitted from residency.ts (static_asserts)', () => {
      const b = gxxBuild(src.slice(from, to), harness);
      expect(b.log).toBe('');
      expect(b.ok).toBe(true);
    });

    it(
      'deactivates exactly the idle actors of every partition: onDeactivate first, final state and dirty mark ' +
        'staged, slots reused, later turns fresh actors',
      () => {
        const b = gxxBuild(src.slice(from, to), harness);
        expect(b.ok).toBe(true);
        const model = new Map<number, Actor>();
        const cmds: string[] = [];
        const expectLines: Array<(line: string) => void> = [];
        let seq = 0;
        let hooks = 0;
        let timers = 0;
        const free: number[] = [];
        let next = 0;
        const turn = (part: number, key: number, t: number) => {
          cmds.push(`A ${part} ${key} ${t}`);
          let a = model.get(key);
          const fresh = !a;
          if (!a) {
            const slot = free.length ? free.shift()! : next++;
            a = { part, slot, value: key >>> 0, last: t, dirty: true };
            model.set(key, a);
          }
          a.last = t;
          a.dirty = true;
          const want = `${a.slot} ${fresh ? 1 : 0}`;
          expectLines.push((l) => expect(l, `turn ${key}`).toBe(want));
        };
        const clean = (key: number) => {
          cmds.push(`C ${model.get(key)!.slot}`);
          model.get(key)!.dirty = false;
        };
        const deactivate = (before: number, now: number) => {
          cmds.push(`D ${before === Infinity ? 'inf' : before} ${now}`);
          seq++;
          const gone = [...model.entries()].filter(([, a]) => a.last < before);
          hooks += gone.length;
          timers += gone.length;
          const head = `D ${seq} ${seq - 1} ${seq} ${gone.length}`;
          expectLines.push((l) => expect(l).toBe(head));
          // Rows come in directory order per partition; compare as a set of (key, state, dirty).
          const rows: string[] = [];
          // The hook stores nothing here: each row is the state as the turns left it, with its own mark.
          const want = gone.map(([key, a]) => `${key} ${a.value} ${a.dirty ? 1 : 0}`).sort();
          for (let i = 0; i < gone.length; i++)
            expectLines.push((l) => {
              rows.push(l);
              if (rows.length === gone.length) expect([...rows].sort()).toEqual(want);
            });
          const wantHooks = hooks;
          const wantTimers = timers;
          const anyGone = gone.length > 0;
          expectLines.push((l) => {
            const [h, , n, , tm] = l.split(' ').slice(1);
            expect(Number(h)).toBe(wantHooks);
            if (anyGone) expect(Number(n)).toBe(now); // onDeactivate ran with the request's now
            expect(Number(tm)).toBe(wantTimers);
          });
          // Freed slots go on the ring in deactivation order: directory order, which the model cannot know;
          // the test below reads them back from the turns' answers instead.
          for (const [key, a] of gone) {
            model.delete(key);
            free.push(a.slot);
          }
        };
        // 30 actors over 3 partitions at times 0..29; a third cleaned (read out by a gather) before the hook.
        cmds.push('W 0');
        for (let i = 0; i < 30; i++) turn(i % PARTS, 1000 + 17 * i, i);
        for (let i = 0; i < 30; i += 3) clean(1000 + 17 * i);
        deactivate(10, 50); // times 0..9 leave
        // Every remaining actor answers from its slot; the next new ones must take the 10 freed slots.
        for (let i = 10; i < 30; i++) turn(i % PARTS, 1000 + 17 * i, 60 + i);
        deactivate(Infinity, 70);
        const r = spawnSync(b.out, { input: cmds.join('\n') + '\n', encoding: 'utf8' });
        expect(r.stderr).toBe('');
        expect(r.status).toBe(0);
        const out = r.stdout.trim().split('\n');
        expect(out.length).toBe(expectLines.length + 1);
        expectLines.forEach((f, i) => f(out[i]!));
        expect(out.at(-1)).toBe('live 0 dead 30 next 30');
      },
    );

    it('freed slots are reused first and a reactivated key starts from a zeroed actor (not its old state)', () => {
      const b = gxxBuild(src.slice(from, to), harness);
      const cmds = [
        'A 0 5 1',
        'A 1 6 2',
        'A 2 7 3',
        'D 2.5 10',
        'M',
        'A 0 5 20',
        'A 1 8 21',
        'A 2 9 22',
        'D inf 30',
        'M',
      ];
      const r = spawnSync(b.out, { input: cmds.join('\n') + '\n', encoding: 'utf8' });
      expect(r.status).toBe(0);
      const out = r.stdout.trim().split('\n');
      expect(out.slice(0, 3)).toEqual(['0 1', '1 1', '2 1']);
      expect(out[3]).toBe('D 1 0 1 2');
      expect(out.slice(4, 6).sort()).toEqual(['5 1005 1', '6 1006 1']);
      expect(out[7]).toBe('stray 0'); // no mark or clock left on the freed slots
      const reused = out.slice(8, 11);
      // Key 5 is a new activation (flag 1) on a freed slot, then 8 on the other freed one, then 9 on slot 3.
      expect(reused.map((l) => l.split(' ')[1])).toEqual(['1', '1', '1']);
      expect(new Set(reused.slice(0, 2).map((l) => l.split(' ')[0]))).toEqual(new Set(['0', '1']));
      expect(reused[2]).toBe('3 1');
      const last = out.slice(11);
      expect(last[0]).toBe('D 2 1 2 4');
      // Key 5's state is its fresh one (5 + 1000), not the 1005 it was deactivated with (+1000 again).
      expect(last.slice(1, 5).sort()).toEqual(['5 1005 1', '7 1007 1', '8 1008 1', '9 1009 1']);
      expect(last[6]).toBe('stray 0');
    });
  },
);
