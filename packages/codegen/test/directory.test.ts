import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { DIR_STATE, runtimeFile } from '../src/index.ts';
import { HAVE_GXX, gxxBuild } from './toolchain.ts';

/**
 * The directory's lookup and insert (runtime/directory.cuh rg_<G>_activate / rg_<G>_insert), cut out of
 * the runtime file and built with g++ over single-threaded stand-ins for the device primitives: the probe
 * invariant with tombstones (DEAD entries), which deactivation will make, checked on the host.
 */
const G = 'Account';
const src = runtimeFile('directory.cuh');
const from = src.indexOf('__device__ static __noinline__ void rg_slot_free(');
const activateAt = src.indexOf('__device__ static RG_G(state)* RG_G(activate)(');
const to = src.indexOf('\n}\n', activateAt) + 3;

const harness = String.raw`#include <cstdio>
#include <cstring>
#include <vector>
#define __device__
#define __noinline__
#define RG_G(name) rg_${G}_##name
#define RG_DIR_EMPTY ${DIR_STATE.EMPTY}u
#define RG_DIR_WRITING ${DIR_STATE.WRITING}u
#define RG_DIR_READY ${DIR_STATE.READY}u
#define RG_DIR_DEAD ${DIR_STATE.DEAD}u
#define RG_DIR_OWNER_SHIFT ${DIR_STATE.OWNER_SHIFT}u
#define RG_AT_DIR_STATE 12
#define RG_C_ACTIVATIONS 0
static void __threadfence() {}
static unsigned int atomicExch(unsigned int* p, unsigned int v) { unsigned int o = *p; *p = v; return o; }
static unsigned int ring[64];
static unsigned int rg_free_cap(unsigned int) { return 64u; }
static unsigned int* rg_free_ring(const unsigned char*, unsigned int) { return ring; }
struct uint4 { unsigned int x, y, z, w; };
struct rg_DirEntry { unsigned int keyLo, keyHi, slot, state; };
struct rg_${G}_state { unsigned char b[16]; };
struct rg_G { unsigned int stateNext, freeHead, freeTail; };
struct rg_kernel { rg_G* g; rg_DirEntry* directory; unsigned char* states; unsigned int maxActors, dirCapacity; };
static unsigned int rg_ld_vol(const unsigned int* p) { return *p; }
static uint4 rg_ld_rlx_gpu_v4(const rg_DirEntry* e) { return {e->keyLo, e->keyHi, e->slot, e->state}; }
static void rg_st_rel_gpu(unsigned int* p, unsigned int v) { *p = v; }
static unsigned int atomicCAS(unsigned int* p, unsigned int cmp, unsigned int v) { unsigned int o = *p; if (o == cmp) *p = v; return o; }
static unsigned int atomicAdd(unsigned int* p, unsigned int v) { unsigned int o = *p; *p += v; return o; }
static void rg_zero(void* p, unsigned long n) { memset(p, 0, n); }
static void rg_meta_activate(unsigned char*, unsigned int, unsigned int, unsigned int, unsigned int) {}
#include "unit.cu"
/* Commands on stdin: "A part key" activates (prints the slot or -1); "K part key" evicts the key as
   deactivation will: entry DEAD, slot pushed on the free-slot ring. */
int main() {
  const unsigned int cap = 64, maxActors = 64;
  std::vector<rg_DirEntry> dir(cap);
  std::vector<unsigned char> states(sizeof(rg_${G}_state) * maxActors);
  rg_G g = {0, 0xFFFFFFF0u, 0xFFFFFFF0u}; /* tickets wrap past 2^32 during the run */
  rg_kernel k = {&g, dir.data(), states.data(), maxActors, cap};
  unsigned int ctr[1] = {0};
  char cmd;
  unsigned int part;
  long long key;
  while (scanf(" %c %u %lld", &cmd, &part, &key) == 3) {
    if (cmd == 'A') {
      rg_${G}_state* s = rg_${G}_activate(&k, ctr, key, part);
      printf("%lld\n", s ? (long long)((s - (rg_${G}_state*)states.data())) : -1LL);
    } else {
      const unsigned int ready = RG_DIR_READY | ((part + 1u) << RG_DIR_OWNER_SHIFT);
      int n = 0;
      for (auto& e : dir) if (e.state == ready && e.keyLo == (unsigned int)key && e.keyHi == (unsigned int)((unsigned long long)key >> 32)) { e.state = RG_DIR_DEAD; rg_slot_free(&k, e.slot); n++; }
      printf("%d\n", n);
    }
  }
  int live = 0, dead = 0;
  for (auto& e : dir) { if ((e.state & 3u) == RG_DIR_READY) live++; if (e.state == RG_DIR_DEAD) dead++; }
  printf("live %d dead %d next %u\n", live, dead, g.stateNext);
}
`;

describe.skipIf(!HAVE_GXX)(
  'directory with tombstones and the free-slot ring (generated lookup + insert, g++ on the host)',
  () => {
    it('cuts the two functions out of the unit', () => {
      expect(from).toBeGreaterThan(0);
      expect(activateAt).toBeGreaterThan(from);
      // The lookup stays lean: the claim (CAS, slot counter) lives only in the __noinline__ insert.
      const lookup = src.slice(activateAt, to);
      expect(lookup).not.toContain('atomicCAS');
      expect(lookup).toContain('return RG_G(insert)(k, ctr, home, lo, hi, ready);');
    });

    it(
      'finds every live key past tombstones, reuses tombstones and freed slots (FIFO), never holds a key twice',
      () => {
        const b = gxxBuild(src.slice(from, to), harness);
        expect(b.log).toBe('');
        expect(b.ok).toBe(true);
        // 48 keys in a 64-entry table over two partitions: long probe runs. Kill every third, check the rest,
        // reinsert the killed ones and 10 new ones (the directory's EMPTY entries run out: tombstones reused).
        const keys = Array.from({ length: 48 }, (_, i) => ({ part: i % 2, key: i * 7919 + 3 }));
        const killed = keys.filter((_, i) => i % 3 === 0);
        const kept = keys.filter((_, i) => i % 3 !== 0);
        const fresh = Array.from({ length: 10 }, (_, i) => ({ part: i % 2, key: 1_000_000 + i }));
        const cmds = [
          ...keys.map((k) => `A ${k.part} ${k.key}`),
          ...killed.map((k) => `K ${k.part} ${k.key}`),
          ...kept.map((k) => `A ${k.part} ${k.key}`),
          ...fresh.map((k) => `A ${k.part} ${k.key}`),
          ...killed.map((k) => `A ${k.part} ${k.key}`),
          ...fresh.map((k) => `A ${k.part} ${k.key}`),
        ];
        const r = spawnSync(b.out, { input: cmds.join('\n') + '\n', encoding: 'utf8' });
        expect(r.status).toBe(0);
        const out = r.stdout.trim().split('\n');
        let at = 0;
        const take = (n: number) => out.slice(at, (at += n)).map(Number);
        const first = take(keys.length);
        expect(first).toEqual(keys.map((_, i) => i)); // slots in activation order
        expect(take(killed.length)).toEqual(killed.map(() => 1));
        expect(take(kept.length)).toEqual(keys.map((_, i) => i).filter((i) => i % 3 !== 0)); // found, not reinserted
        const freshSlots = take(fresh.length);
        const killedSlots = keys.map((_, i) => i).filter((i) => i % 3 === 0);
        expect(freshSlots).toEqual(killedSlots.slice(0, fresh.length)); // freed slots first, in the order freed
        const again = take(killed.length);
        // The rest of the freed slots, then never-used ones.
        expect(again).toEqual([
          ...killedSlots.slice(fresh.length),
          ...Array.from({ length: fresh.length }, (_, i) => 48 + i),
        ]);
        expect(take(fresh.length)).toEqual(freshSlots); // found past tombstones and reused entries
        // 58 live keys: 32 kept entries + 26 inserts, but only 16 entries were ever EMPTY, so at least 10
        // inserts took a tombstone (at most 6 of the 16 left). 58 slots used: 48 + 10 never used before.
        const m = /^live (\d+) dead (\d+) next (\d+)$/.exec(out[at] ?? '');
        expect(m).not.toBeNull();
        expect(Number(m![1])).toBe(kept.length + fresh.length + killed.length);
        expect(Number(m![2])).toBeLessThanOrEqual(6);
        expect(Number(m![3])).toBe(58);
      },
    );
  },
);

