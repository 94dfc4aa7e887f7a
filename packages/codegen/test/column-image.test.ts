/**
 * The unit's column-image readers (cuda/column-image.ts) against core's packer (column-image.ts): row i
 * of an image, read by the unit into its request struct and re-encoded by the unit's own request
 * encoder, decodes to row i of the columns; a method without an image and an image of another grain are
 * refused. Host build (g++, RG_HOST_HARNESS) of the same source the device compiles, plus nvcc.
 */
import fc from 'fast-check';
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { SLOT_HEADER_SIZE } from '@ringgrain/core';
import type { GrainDef } from '@ringgrain/core/types';
import { Reader, columnImageFields, compileRowWriter, decodeExact, packColumnImage } from '@ringgrain/core/backend';
import { generateKernel } from '../src/index.ts';
import { kindValues } from '../../core/test/kind-fields.ts';
import { ImageSink } from './fixtures/image.ts';
import { HAVE_GXX, HAVE_NVCC, gxxBuild, nvccCompile } from './toolchain.ts';

const def = ImageSink.grain as GrainDef;
const SELF = 0;
const unit = (): string => generateKernel(def).source;

/** Reads an image from stdin (hex) and prints, per row, the key and the unit's re-encoded request (hex), or REFUSED. */
const HARNESS = String.raw`#define RG_HOST_HARNESS 1
#include "unit.cu"
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>
int main() {
  std::string hex; std::cin >> hex;
  std::vector<unsigned long long> words((hex.size() / 2 + 7) / 8 + 1, 0ull);
  unsigned char* img = (unsigned char*)words.data();
  for (size_t i = 0; i + 1 < hex.size(); i += 2) img[i / 2] = (unsigned char)std::stoul(hex.substr(i, 2), nullptr, 16);
  const rg_ColumnImageHeader* h = (const rg_ColumnImageHeader*)img;
  if (!rg_ImageSink_image_ok(img)) { std::printf("NOT_OURS\n"); return 0; }
  for (unsigned r = 0; r < h->rows; r++) {
    rg_ImageSink_req u; rg_zero(&u, sizeof(u));
    if (!rg_ImageSink_image_row(h->method, img, r, &u)) { std::printf("REFUSED\n"); return 0; }
    unsigned char buf[512]; rg_wr w = {buf, 0u, (unsigned)sizeof(buf)};
    if (!rg_ImageSink_encode_request(h->method, &u, &w)) { std::printf("ENCODE_FAILED\n"); return 0; }
    std::printf("%lld ", rg_image_key(img, r));
    for (unsigned i = 0; i < w.pos; i++) std::printf("%02x", buf[i]);
    alignas(16) unsigned char slot[512] = {0};
    const unsigned n = rg_ImageSink_image_slot(h->method, img, r, 1234.5 + r, slot);
    std::printf(" ");
    for (unsigned i = 4; i < n; i++) std::printf("%02x", slot[i]);
    std::printf("\n");
  }
  return 0;
}
`;

const hexOf = (u8: Uint8Array): string => Array.from(u8, (b) => b.toString(16).padStart(2, '0')).join('');
const unhex = (s: string): Uint8Array => Uint8Array.from(s.match(/../g) ?? [], (h) => parseInt(h, 16));

describe.skipIf(!HAVE_GXX)('column image readers in a unit (host build)', () => {
  const put = def.methodByName.get('put')!;
  const putIndex = def.methods.indexOf(put);
  let bin = '';
  const run = (image: Uint8Array): string[] => {
    if (!bin) {
      const b = gxxBuild(unit(), HARNESS);
      expect(b.log).toBe('');
      bin = b.out;
    }
    const r = spawnSync(bin, { input: hexOf(image), encoding: 'utf8' });
    expect(r.status).toBe(0);
    return r.stdout.trim().split('\n').filter((l) => l !== '');
  };

  it('read row i of the columns, every kind, for any rows and chunk', () => {
    const row = fc.record({ key: fc.integer({ min: 0, max: 2 ** 40 }), ...kindValues(true) });
    const fields = columnImageFields(put, SELF)!;
    fc.assert(
      fc.property(fc.array(row, { minLength: 1, maxLength: 12 }), fc.nat(), (rows, a) => {
        const from = a % rows.length;
        const cols: Record<string, unknown[]> = {};
        for (const f of fields) cols[f.name] = rows.map((r) => r[f.name as keyof typeof r]);
        const image = packColumnImage(fields, {
          grainId: SELF,
          method: putIndex,
          key: rows.map((r) => r.key),
          cols,
          from,
          to: rows.length,
        });
        const lines = run(image);
        // The unit's queue slot of each row is byte for byte the slot the host's row writer writes (time = 1234.5 +
        // row).
        const write = compileRowWriter(
          put,
          SELF,
          rows.map((r) => r.key),
          cols,
          512,
        )!;
        const buf = new ArrayBuffer(512);
        const want = rows.slice(from).map((_, r) => {
          new Uint8Array(buf).fill(0);
          write(new Int32Array(buf), new DataView(buf), 0, from + r, 1234.5 + r);
          const len = new DataView(buf).getUint32(4, true);
          return hexOf(new Uint8Array(buf, 4, SLOT_HEADER_SIZE + len - 4));
        });
        expect(lines.map((l) => l.split(' ')[2])).toEqual(want);
        const got = lines.map((line) => {
          const [key, payload] = line.split(' ');
          const bytes = unhex(payload!);
          const value = decodeExact(put.request, new Reader(bytes).reset(0, bytes.length)) as Record<string, unknown>;
          // -0 and 0 are one value to the receiving handler; toEqual tells them apart.
          return {
            key: Number(key),
            ...Object.fromEntries(Object.entries(value).map(([k, v]) => [k, Object.is(v, -0) ? 0 : v])),
          };
        });
        expect(got).toEqual(
          rows
            .slice(from)
            .map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Object.is(v, -0) ? 0 : v]))),
        );
      }),
      { numRuns: 25 },
    );
  });

  it('refuse an image of another grain, and a method whose request has no image', () => {
    const fields = columnImageFields(def.methodByName.get('add')!, SELF)!;
    const mk = (grainId: number, method: number) =>
      packColumnImage(fields, { grainId, method, key: [1], cols: { x: [2] }, from: 0, to: 1 });
    expect(
      run(
        mk(
          SELF + 1,
          def.methods.findIndex((m) => m.name === 'add'),
        ),
      ),
    ).toEqual(['NOT_OURS']);
    // An image laid out for `add` but naming `many` (a vec request, no image): refused, never read as rows.
    expect(run(mk(SELF, def.methods.findIndex((m) => m.name === 'many')))).toEqual(['REFUSED']);
    // Naming `put` (9 columns) with add's one column: the column table does not match, refused.
    expect(run(mk(SELF, putIndex))).toEqual(['REFUSED']);
  });
});

describe.skipIf(!HAVE_NVCC)('column image readers compile for the device (nvcc sm_90)', () => {
  it('ImageSink unit', () => {
    const r = nvccCompile(unit(), 'sm_90');
    expect(r.log).toBe('');
    expect(r.ok).toBe(true);
  }, 240_000); // a cubin in the long rounds, cold build cache
});
