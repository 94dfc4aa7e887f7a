import { describe, expect, it } from 'vitest';
import { Packr } from 'msgpackr';
import { ClusterConfigError } from '@ringgrain/core/cluster';
import { MalformedFrameError, decodeFrame, encodeFrame, natsCluster } from '../src/index.ts';

describe('natsCluster options', () => {
  it('refuses bad options with ClusterConfigError at the call', () => {
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ name: 'x' }, /servers is required/],
      [{ servers: 'nats://h', name: 'a.b' }, /name "a\.b"/],
      [{ servers: 'nats://h', name: '' }, /name ""/],
      [{ servers: 'nats://h', name: 'a', id: 'has space' }, /id "has space"/],
      [{ servers: 'nats://h', name: 'a', heartbeatMs: 1000, deadMs: 1500 }, /at least twice heartbeatMs/],
      [{ servers: 'nats://h', name: 'a', partitions: 1.5 }, /partitions must be an integer/],
      [{ servers: 'nats://h', name: 'a', deadMs: Number.NaN }, /deadMs must be a number/],
    ];
    for (const [o, msg] of bad) {
      let e: unknown;
      try {
        natsCluster(o as never);
      } catch (x) {
        e = x;
      }
      expect(e, JSON.stringify(o)).toBeInstanceOf(ClusterConfigError);
      expect((e as Error).message).toMatch(msg);
    }
    expect(natsCluster({ servers: ['nats://a:1', 'nats://b:2'], name: 'ok_name-1' }).engine).toBe('nats');
  });
});

describe('frames', () => {
  it('round trip entries with typed arrays of their own kind', () => {
    const entries = [
      [0, 'G', 'm', 12, { a: new Float64Array([1.5, 2]), b: new Int32Array([-1]), s: 'x' }, 0, 'me', 0],
      [1, 3, 1, { v: new Uint8Array([1, 2, 3]) }],
      [2, 99],
    ];
    const f = decodeFrame(encodeFrame('me', entries));
    expect(f.from).toBe('me');
    expect(f.entries).toEqual(entries);
    const p = (f.entries[0] as unknown[])[4] as Record<string, unknown>;
    expect(p['a']).toBeInstanceOf(Float64Array);
    expect(p['b']).toBeInstanceOf(Int32Array);
  });

  it('refuse what is not a frame with MalformedFrameError', () => {
    const raw = new Packr({ useRecords: false });
    const bad: Uint8Array[] = [new Uint8Array([0xc1]), new Uint8Array([]), raw.pack('text'), raw.pack([1, 'me']), raw.pack([2, 'me', []]), raw.pack([1, 'bad id!', []]), raw.pack([1, 'me', {}])];
    for (const b of bad) expect(() => decodeFrame(b)).toThrow(MalformedFrameError);
  });
});
