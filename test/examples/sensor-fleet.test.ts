/**
 * The sensor-fleet example end to end, as a user runs it (a child process), on a small fleet: on cpu and
 * inline every device's state and every region's alert counts equal the JavaScript model after phase 1,
 * flush, restart with preload and phase 2 (in one process, and in two with --phase1-only / --restart);
 * --inject-mismatch makes the check fail; bad flags are refused; --backend cuda either runs and matches or
 * ends with the backend's typed refusal (never a fake pass).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = path.join(root, 'examples/sensor-fleet/main.ts');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'rg-fleet-test-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const SMALL = ['--devices', '3000', '--rounds', '5'];

function fleet(args: string[]): { rc: number | null; out: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, RINGGRAIN_LOG: 'warn' },
  });
  return { rc: r.status, out: `${r.stdout}\n${r.stderr}` };
}

/** The summary's "alerts raised A (model), B (actors)": both, so a test can see alerts really happened. */
function alerts(out: string): [number, number] {
  const m = /alerts raised ([\d,]+) \(model\), ([\d,]+) \(actors\)/.exec(out);
  expect(m, out).not.toBeNull();
  return [Number(m![1]!.replace(/,/g, '')), Number(m![2]!.replace(/,/g, ''))];
}

describe('examples/sensor-fleet', () => {
  for (const backend of ['cpu', 'inline']) {
    it(
      `--backend ${backend}: phase 1, flush, restart with preload, phase 2 — every device and region equals ` +
        'the model',
      () => {
        const r = fleet(['--backend', backend, ...SMALL, '--threads', '2']);
        expect(r.rc, r.out).toBe(0);
        expect(r.out).toContain(
          "OK: every device's state (3,000) and every region's alert counts equal the JavaScript model.",
        );
        const [model, actors] = alerts(r.out);
        expect(model).toBeGreaterThan(100);
        expect(actors).toBe(model);
        // The restart preloaded every device that reported in phase 1 (all 3,000 here, with 5 rounds).
        expect(r.out).toMatch(/\| preload \(restart\) \| — \| 3,000 devices in /);
      },
    );
  }

  it('--inject-mismatch: the check fails, names the value, exits 1', () => {
    // On inline (the quickest to start): the check does not depend on the backend.
    const r = fleet(['--backend', 'inline', ...SMALL, '--inject-mismatch']);
    expect(r.rc, r.out).toBe(1);
    expect(r.out).toContain('MISMATCH:');
    expect(r.out).toContain('1 of ');
    expect(r.out).toMatch(/device 1500 sum: actors [\d.]+, model [\d.]+/);
    expect(r.out).not.toContain('OK: every device');
  });

  it('--phase1-only then --restart in a new process on the same --data-dir: equals the model', () => {
    const dir = path.join(tmp, 'two-process');
    const first = fleet(['--backend', 'inline', ...SMALL, '--phase1-only', '--data-dir', dir]);
    expect(first.rc, first.out).toBe(0);
    expect(first.out).toContain('phase 1 only: states kept in lmdb');
    const second = fleet(['--backend', 'inline', ...SMALL, '--restart', '--data-dir', dir]);
    expect(second.rc, second.out).toBe(0);
    expect(second.out).toContain("OK: every device's state (3,000)");
    // Phase 2 alone: the table's phase 1 column is empty.
    expect(second.out).toMatch(/\| start \(kernels, tables\) \| — \| /);
  });

  it('bad input is refused with a message and exit code 2, before anything runs', () => {
    const cases: Array<[string[], string]> = [
      [['--store', 'sqlite'], '--store must be lmdb or postgres (got "sqlite")'],
      [['--restart'], '--restart and --phase1-only need --data-dir DIR'],
      [['--phase1-only', '--restart', '--data-dir', tmp], '--phase1-only and --restart exclude each other'],
      [['--round', '3'], 'unknown option --round (--help lists them)'],
    ];
    for (const [args, message] of cases) {
      const r = fleet(['--backend', 'cpu', '--devices', '100', ...args]);
      expect(r.rc, `${args.join(' ')}: ${r.out}`).toBe(2);
      expect(r.out).toContain(message);
    }
    // A fresh run on a directory that holds data would mix old states in: refused.
    const full = path.join(tmp, 'full');
    mkdirSync(full, { recursive: true });
    writeFileSync(path.join(full, 'x'), 'x');
    const r = fleet(['--backend', 'cpu', '--devices', '100', '--data-dir', full]);
    expect(r.rc, r.out).toBe(2);
    expect(r.out).toContain(`--data-dir ${full} is not empty`);
  });

  it('--backend cuda: runs and matches the model, or ends with the typed refusal (no device: says so)', () => {
    const r = fleet(['--backend', 'cuda', ...SMALL]);
    if (r.out.includes('--backend cuda is not available')) {
      // No CUDA device or driver on this machine.
      expect(r.rc, r.out).toBe(2);
    } else if (r.rc === 3) {
      // The CUDA backend's kernels do not run timers or keep persistent state yet: its typed error, as is.
      // (StorageUnsupportedError's message starts with the store: "lmdb state store: grain ...".)
      expect(r.out).toMatch(
        /(TimersUnsupportedError \[TIMERS_UNSUPPORTED\]|StorageUnsupportedError \[STORAGE_UNSUPPORTED\]): (lmdb state store: )?grain "(Device|Alerts)"/,
      );
      expect(r.out).toContain('nothing was checked');
    } else {
      expect(r.rc, r.out).toBe(0);
      expect(r.out).toContain("OK: every device's state (3,000)");
    }
  });
});
