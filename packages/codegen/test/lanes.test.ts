/**
 * runtime/lanes.cuh, compiled alone with g++: a K2K sender on the GPU picks a key's lane group exactly as the
 * host picks its lane (core laneOfKey over every group's lanes), for keys of every size and sign. The
 * cuda-backend's lane groups (CudaBackend `devices`) rely on the two agreeing: a disagreement would run one
 * actor in two groups.
 */
import { execFileSync } from 'node:child_process';
import { laneOfKey } from '@ringgrain/core/backend';
import { describe, expect, it } from 'vitest';
import { runtimeFile } from '../src/index.ts';
import { HAVE_GXX, gxxBuild } from './toolchain.ts';

const harness = `#include <cstdio>
#include "unit.cu"
int main() {
  long long key;
  unsigned int lanes, groups, groupLanes;
  while (std::scanf("%lld %u %u %u", &key, &lanes, &groups, &groupLanes) == 4)
    std::printf("%u %u\\n", rg_lane_of_key(key, lanes), rg_group_of_key(key, groups, groupLanes));
  return 0;
}
`;

function keys(): number[] {
  const out: number[] = [];
  for (let i = -300; i < 3000; i++) out.push(i);
  let x = 0x2545f491;
  for (let i = 0; i < 2000; i++) {
    x = (Math.imul(x, 1103515245) + 12345) | 0;
    const hi = (x >>> 8) % 0x200000;
    out.push((i & 1 ? -1 : 1) * (hi * 4294967296 + (Math.imul(x, 2654435761) >>> 0)));
  }
  out.push(Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 2 ** 32, 2 ** 32 - 1, -(2 ** 32), -(2 ** 31), 2 ** 31);
  return out;
}

describe.skipIf(!HAVE_GXX)(
  `runtime/lanes.cuh against core laneOfKey${HAVE_GXX ? '' : ' (skipped: no g++ here)'}`,
  () => {
    it('lane and lane group of integer keys agree with the host for 1..32 lanes and 1..8 groups', () => {
      const build = gxxBuild(`#define RG_HD\n${runtimeFile('lanes.cuh')}`, harness);
      expect(build.ok, build.log).toBe(true);
      const shapes: Array<[lanes: number, groups: number, groupLanes: number]> = [];
      for (const groupLanes of [1, 2, 4, 5, 32])
        for (const groups of [1, 2, 3, 4, 8]) shapes.push([groups * groupLanes, groups, groupLanes]);
      const rows: string[] = [];
      const want: string[] = [];
      for (const k of keys()) {
        for (const [lanes, groups, groupLanes] of shapes) {
          rows.push(`${k} ${lanes} ${groups} ${groupLanes}`);
          want.push(`${laneOfKey(k, lanes)} ${Math.floor(laneOfKey(k, groups * groupLanes) / groupLanes)}`);
        }
      }
      const got = execFileSync(build.out, { input: rows.join('\n') + '\n', maxBuffer: 64 << 20 })
        .toString()
        .trim()
        .split('\n');
      expect(got.length).toBe(want.length);
      const bad = got.flatMap((g, i) => (g === want[i] ? [] : [`${rows[i]}: device ${g}, host ${want[i]}`]));
      expect(bad.slice(0, 5)).toEqual([]);
      // The groups are used: with 4 groups every group holds some of the first 3,000 keys.
      const seen = new Set(
        keys()
          .slice(0, 3300)
          .map((k) => Math.floor(laneOfKey(k, 16) / 4)),
      );
      expect([...seen].sort()).toEqual([0, 1, 2, 3]);
    });
  },
);
