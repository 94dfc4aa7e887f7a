import { describe, expect, it } from 'vitest';
import { Packr } from 'msgpackr';
import { ClusterConfigError } from '@ringgrain/core/cluster';
import { MalformedFrameError, decodeFrame, encodeFrame, natsCluster } from '../src/index.ts';
import { readFrame } from '../src/frame.ts';

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

  it('carry message entries with their names in a string table and their bytes as views of one frame copy', () => {
    const pay = (n: number) => new Uint8Array([0x81, 0xa1, 0x6e, n]);
    const entries = [
      [0, 'Counter', 'add', 7, pay(1), 0, 'silo-a', 0],
      [0, 'Counter', 'get', 2 ** 40 + 3, pay(2), 17, 'silo-a', 1],
      [0, 'Ledger', 'add', 'key ü', pay(3), 0, 'silo-b', 0],
      [0, 'Counter', 'add', -5, new Uint8Array(70_000).fill(9), 0xffffffff, 'silo-a', 3],
      [1, 4, 1, pay(4)],
      [1, 5, 0, { name: 'Error', code: 'X', message: 'm' }],
      [3, 'Ledger', 12],
    ];
    const data = encodeFrame('silo-a', entries);
    // Names once per frame: 'Counter' appears once in the bytes although three entries name it.
    expect(Buffer.from(data).toString('latin1').split('Counter').length - 1).toBe(1);
    const f = decodeFrame(data);
    expect(f.from).toBe('silo-a');
    expect(f.entries).toEqual(entries);
    const views = f.entries.filter((e) => (e as unknown[])[0] === 0).map((e) => (e as unknown[])[4] as Uint8Array);
    for (const b of views) expect(b).toBeInstanceOf(Uint8Array);
    // The bytes are views of one buffer (the frame's copy), not the sender's buffer.
    expect(new Set(views.map((b) => b.buffer)).size).toBe(1);
    expect(views[0]!.buffer).not.toBe(data.buffer);
  });

  it('read version 1 frames, and refuse a message entry whose name index is not in the table', () => {
    const raw = new Packr({ useRecords: false });
    const v1 = decodeFrame(raw.pack([1, 'me', [[0, 'G', 'm', 1, new Uint8Array([1]), 0, 'me', 0]]]));
    expect(v1.entries).toEqual([[0, 'G', 'm', 1, new Uint8Array([1]), 0, 'me', 0]]);
    const bad = decodeFrame(raw.pack([2, 'me', [[0, 5, 0, 1, new Uint8Array([1]), 0, 'x', 0]], ['G']]));
    // Left as non-strings: the router's entry check refuses the entry (MalformedEntryError), the frame is read.
    expect((bad.entries[0] as unknown[]).slice(0, 3)).toEqual([0, null, 'G']);
    expect((bad.entries[0] as unknown[])[6]).toBe(null);
    expect(() => decodeFrame(raw.pack([2, 'me', [], [1]]))).toThrow(MalformedFrameError);
  });

  it('refuse what is not a frame with MalformedFrameError', () => {
    const raw = new Packr({ useRecords: false });
    const bad: Uint8Array[] = [
      new Uint8Array([0xc1]),
      new Uint8Array([]),
      raw.pack('text'),
      raw.pack([1, 'me']),
      raw.pack([2, 'me', []]),
      raw.pack([1, 'bad id!', []]),
      raw.pack([1, 'me', {}]),
    ];
    for (const b of bad) expect(() => decodeFrame(b)).toThrow(MalformedFrameError);
  });

  it('read messages, replies and acks by hand exactly as msgpackr reads the same frame', () => {
    const pay = (n: number) => new Uint8Array([0x81, 0xa1, 0x6e, n]);
    const keys = [0, 127, 128, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, -1, -32, -33, -(2 ** 31), 2 ** 53 - 1];
    const entries: unknown[][] = [
      ...keys.map((k, i) => [0, i % 2 ? 'Counter' : 'Ledger', 'add', k, pay(i), i === 3 ? 0xffffffff : i, 'silo-a', i]),
      [0, 'Ledger', 'add', -(2 ** 53 - 1), new Uint8Array(300).fill(7), 0, 'silo-a', 0],
      [0, 'Ledger', 'add', 'x'.repeat(40), new Uint8Array(0), 0, 'silo-a', 0],
      [0, 'Ledger', 'add', 'key ü', pay(1), 0, 'silö', 0],
      [1, 4, 1, pay(4)],
      [1, 7, 1, null],
      [2, 2 ** 40],
      [2, 300],
    ];
    const data = encodeFrame('silo-a', entries);
    // Read by hand (undefined would mean msgpackr's path read it).
    expect(readFrame(new Uint8Array(data))?.entries).toEqual(entries);
    // A reply carrying an error is left to msgpackr's path.
    expect(readFrame(encodeFrame('silo-a', [[1, 5, 0, { name: 'Error', code: 'X', message: 'm' }]]))).toBe(undefined);
    const f = decodeFrame(data);
    expect(f.entries).toEqual(entries);
    // The reference: msgpackr's reading of the same bytes, names put back from the table.
    const ref = new Packr({ useRecords: false }).unpack(data) as [number, string, unknown[][], string[]];
    const [, from, raw, table] = ref;
    for (const e of raw) if (e[0] === 0) for (const i of [1, 2, 6]) e[i] = table[e[i] as number];
    expect(f.from).toBe(from);
    expect(f.entries).toEqual(raw);
    // A frame cut short is refused as before.
    expect(() => decodeFrame(data.subarray(0, data.length - 3))).toThrow(MalformedFrameError);
  });
});
