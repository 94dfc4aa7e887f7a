import { encode as mpEncode } from '@msgpack/msgpack';
import type { GrainDef, StructSchema } from '@ringgrain/core/types';
import { Reader, Writer, compileEncoder, decodeExact } from '@ringgrain/core/backend';
import { describe, expect, it } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import { generateKernel } from '../src/index.ts';
import { diff } from './compare.ts';
import { Counter, Relay } from './fixtures/k2k.ts';
import { Stats } from './fixtures/stats.ts';
import { Small } from '../../../test/fixtures/grains.ts';
import { Harness } from './harness.ts';
import { randomValue, reshape, rng } from './random.ts';
import { HAVE_GXX } from './toolchain.ts';

function hostEncode(schema: StructSchema, value: unknown): Uint8Array {
  const buf = new Uint8Array(1 << 16);
  const w = new Writer(buf).reset(0, buf.length);
  compileEncoder(schema)(value, w);
  return buf.slice(0, w.pos);
}
function hostDecode(schema: StructSchema, bytes: Uint8Array): unknown {
  try {
    return decodeExact(schema, new Reader(bytes).reset(0, bytes.length));
  } catch {
    return undefined;
  }
}
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

// Small: every small integer kind, scalar and array (bin of 1- and 2-byte elements, up to a 400-byte bin16).
const GRAINS: GrainDef[] = [Account.grain, Stats.grain, Counter.grain, Relay.grain, Small.grain];

describe.skipIf(!HAVE_GXX)('device msgpack codecs (built for the host from the generated unit)', () => {
  const built = GRAINS.map((def) => ({
    def,
    h: Harness.build(
      def.name,
      generateKernel(def, {
        grains: [Counter.grain, Relay.grain, ...(def === Counter.grain || def === Relay.grain ? [] : [def])],
      }).source,
    ),
  }));

  it('decode + re-encode is byte-identical to the host encoder, for every request schema', () => {
    const r = rng(11);
    for (const { def, h } of built) {
      const items = [];
      for (let i = 0; i < 300; i++) {
        const m = def.methods[i % def.methods.length]!;
        items.push({
          method: m.id,
          payload: hostEncode(m.request, randomValue(m.request, r, { float: 1e6, int: 2 ** 31 - 1 })),
        });
      }
      const out = h.decode(items);
      items.forEach((it, i) => expect(out[i] && hex(out[i]!), `${def.name} #${i}`).toBe(hex(it.payload)));
    }
  });

  it(
    'accepts what @msgpack/msgpack writes (float64 or float32 floats, arrays for bins, any key order, any int ' +
      'width)',
    () => {
      const r = rng(12);
      for (const { def, h } of built) {
        const items = [];
        const want: Uint8Array[] = [];
        for (let i = 0; i < 300; i++) {
          const m = def.methods[i % def.methods.length]!;
          const v = randomValue(m.request, r, { float: 1e6, int: 2 ** 31 - 1 });
          const bytes = mpEncode(reshape(m.request, v, r), {
            forceFloat32: r() < 0.3,
            sortKeys: false,
            forceIntegerToFloat: false,
          });
          const decoded = hostDecode(m.request, bytes);
          expect(decoded, `host decoder accepts @msgpack/msgpack output for ${def.name}.${m.name}`).toBeDefined();
          items.push({ method: m.id, payload: bytes });
          want.push(hostEncode(m.request, decoded));
        }
        const out = h.decode(items);
        items.forEach((_, i) => expect(out[i] && hex(out[i]!), `${def.name} #${i}`).toBe(hex(want[i]!)));
      }
    },
  );

  it('ints for float fields, widened int formats and float-encoded integers decode as the host decodes them', () => {
    const { h, def } = built[1]!; // Stats
    const mix = def.methodByName.get('mix')!;
    const payloads = [
      // a: 7 as int64, b: 300 as uint64, c: int 3 for an f64 field, flags as array, m as array of mixed ints/floats
      '85a161d30000000000000007a162cf000000000000012ca163 ' +
        '03a5666c61677393c3c2c3a16d9401cb3ff8000000000000ca40200000 ff',
      // a: -1 as int8, b: 0 as float64 0.0 (an integer value), c: float32, m as bin of 4 f64
      '85a161d0ffa162cb0000000000000000a163ca3fc00000a5666c61677393c2c2c2a16dc420' + '00'.repeat(32),
    ].map((s) => new Uint8Array(Buffer.from(s.replace(/ /g, ''), 'hex')));
    const out = h.decode(payloads.map((payload) => ({ method: mix.id, payload })));
    payloads.forEach((p, i) => {
      const hostValue = hostDecode(mix.request, p);
      expect(hostValue).toBeDefined();
      expect(out[i] && hex(out[i]!)).toBe(hex(hostEncode(mix.request, hostValue)));
    });
  });

  it(
    'malformed payloads: rejected exactly when the host decoder rejects them (5,000 mutations), never crashing',
    () => {
      const r = rng(13);
      let rejected = 0;
      for (const { def, h } of built) {
        const items: { method: number; payload: Uint8Array }[] = [];
        for (let i = 0; i < 1250; i++) {
          const m = def.methods[i % def.methods.length]!;
          const good = hostEncode(m.request, randomValue(m.request, r, { float: 1e3, int: 1000 }));
          const bad = good.slice();
          const kind = i % 5;
          let payload: Uint8Array;
          if (kind === 0)
            payload = good.subarray(0, Math.floor(r() * good.length)); // truncated
          else if (kind === 1)
            payload = new Uint8Array([...good, Math.floor(r() * 256)]); // trailing byte
          else if (kind === 2) {
            for (let k = 0; k < 1 + Math.floor(r() * 3); k++) bad[Math.floor(r() * bad.length)] = Math.floor(r() * 256);
            payload = bad; // flipped bytes
          } else if (kind === 3)
            // noise
            payload = new Uint8Array(Array.from({ length: Math.floor(r() * 40) }, () => Math.floor(r() * 256)));
          else {
            // a type byte replaced by another type's (0xc0 nil, 0xa1 str, 0x91 array, 0x81 map, 0xc4 bin)
            const at = Math.floor(r() * bad.length);
            bad[at] = [0xc0, 0xa1, 0x91, 0x81, 0xc4, 0xcb, 0xd3][Math.floor(r() * 7)]!;
            payload = bad;
          }
          items.push({ method: m.id, payload });
        }
        const out = h.decode(items);
        items.forEach((it, i) => {
          const m = def.methods[it.method]!;
          const host = hostDecode(m.request, it.payload);
          const dev = out[i];
          expect(
            dev === undefined,
            `${def.name}.${m.name} ${hex(it.payload)}: device ${dev ? 'accepted' : 'rejected'}, host ` +
              `${host === undefined ? 'rejected' : 'accepted'}`,
          ).toBe(host === undefined);
          if (dev) expect(diff(m.request, hostDecode(m.request, dev), host)).toEqual([]);
          else rejected++;
        });
      }
      expect(rejected).toBeGreaterThan(2500);
    },
  );
});
