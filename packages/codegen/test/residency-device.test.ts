import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import { DIR_STATE, GatherHeader, StateMeta, generateKernel, gatherLayout } from '../src/index.ts';
import { CTypes } from '../src/cuda/ctypes.ts';
import { RES_OP, ResidencyGlobals, ResidencyHostBlock, residencyConstants, residencyLayout } from '../src/cuda/residency.ts';
import { HAVE_GXX, gxxBuild } from './toolchain.ts';

/**
 * The device side of deactivation (residency.cuh: the control warp's relay, a worker's service, the
 * directory walk, one actor's eviction) built with g++ over single-threaded stand-ins for the device
 * primitives, with the generated directory lookup, insert and free-slot ring cut out of the Account unit
 * (as directory.test.ts does) and the residency structs emitted from their schemas (residency.ts) with
 * their static_asserts. The stand-in hook adds 1000 to the balance's first byte pattern and the stand-in
 * turn marks the actor dirty at its clock, so each row's state says whether onDeactivate ran before the
 * copy. Expected results come from a model of the CPU backend's deactivation (dispatcher.ts deactivate,
 * state-table.ts idleKeys/evict): actors whose last turn is before `before`, onDeactivate with `now`,
 * the final state and the dirty mark out, the slot freed and reused first, a later turn a fresh actor.
 */
const G = 'Account';
// The directory's C: the runtime file where the runtime lives in .cuh files, else the unit (RG_G(x) = rg_Account_x).
const dirFile = new URL('../src/cuda/runtime/directory.cuh', import.meta.url);
const src = existsSync(dirFile) ? readFileSync(dirFile, 'utf8') : generateKernel(Account.grain).source;
const from = src.indexOf('__device__ static __noinline__ void rg_slot_free(');
const activateAt = src.search(/__device__ static (rg_Account_state|RG_G\(state\))\* (rg_Account_activate|RG_G\(activate\))\(/);
const to = src.indexOf('\n}\n', activateAt) + 3;
const cuh = readFileSync(new URL('../src/cuda/residency.cuh', import.meta.url), 'utf8');
const MAX = 48;
const PARTS = 3;
const L = residencyLayout({ stateSize: 8, maxActors: MAX, partitions: PARTS });
const types = new CTypes();
types.named(ResidencyGlobals, 'rg_ResidencyGlobals');
types.named(ResidencyHostBlock, 'rg_ResidencyHostBlock');
types.named(GatherHeader, 'rg_GatherHeader');
types.named(StateMeta, 'rg_StateMeta');

const harness = String.raw`#include <cstdio>
#include <cstring>
#include <cstddef>
#include <vector>
#define __device__
#define __noinline__
#define RG_OFFSET_ASSERT(T, f, off, msg) static_assert(offsetof(T, f) == (off), msg)
#define RG_G(name) rg_${G}_##name
#define RG_KEY_OF(lo, hi) ((long long)(((unsigned long long)(hi) << 32) | (lo)))
#define RG_DIR_EMPTY ${DIR_STATE.EMPTY}u
#define RG_DIR_WRITING ${DIR_STATE.WRITING}u
#define RG_DIR_READY ${DIR_STATE.READY}u
#define RG_DIR_DEAD ${DIR_STATE.DEAD}u
#define RG_DIR_OWNER_SHIFT ${DIR_STATE.OWNER_SHIFT}u
#define RG_AT_DIR_STATE 12
#define RG_C_ACTIVATIONS 0
#define RG_C_K2K_SENT 1
#define RG_C_HANDLER_ERRORS 2
#define RG_GATHER_KEYS_AT ${gatherLayout(0, 0).keysAt}ull
#define RG_STATE_REGION_ALIGN 256ull
#define RG_HAS_ON_DEACTIVATE 1
#define RG_HOOK_ON_DEACTIVATE 7u
#define RG_HOST_SENDER 0xffffffffu
#define RG_SELF_ID 0u
#define RG_FORWARDED 1
#define RG_REPLY 2u
#define RG_ERROR 4u
static void __threadfence() {}
static void __threadfence_system() {}
static unsigned int atomicExch(unsigned int* p, unsigned int v) { unsigned int o = *p; *p = v; return o; }
static unsigned int atomicCAS(unsigned int* p, unsigned int cmp, unsigned int v) { unsigned int o = *p; if (o == cmp) *p = v; return o; }
static unsigned int atomicAdd(unsigned int* p, unsigned int v) { unsigned int o = *p; *p += v; return o; }
static unsigned int rg_ld_vol(const unsigned int* p) { return *(const volatile unsigned int*)p; }
static unsigned int rg_ld_acq_gpu(const unsigned int* p) { return *p; }
static unsigned int rg_ld_acq_sys(const unsigned int* p) { return *p; }
static void rg_st_rel_gpu(unsigned int* p, unsigned int v) { *p = v; }
static void rg_st_rel_sys(unsigned int* p, unsigned int v) { *p = v; }
static void rg_zero(void* p, unsigned long n) { memset(p, 0, n); }
struct uint4 { unsigned int x, y, z, w; };
struct rg_DirEntry { unsigned int keyLo, keyHi, slot, state; };
struct rg_coop {};
${types.defs.join('\n')}
${residencyConstants()}
static_assert(sizeof(rg_ResidencyHostBlock) == 256 && sizeof(rg_ResidencyGlobals) == 384, "residency structs as residency.ts lays them out");
struct rg_${G}_state { unsigned char b[8]; };
struct rg_G { unsigned int stateNext, freeHead, freeTail; };
struct rg_kernel {
  rg_G* g; rg_DirEntry* directory; unsigned char* states; unsigned int maxActors, dirCapacity, partitions;
  rg_ResidencyGlobals* res; unsigned int resPublished, hooksOn, metaOn;
};
static unsigned int ring[64];
static unsigned int rg_free_cap(unsigned int) { return 64u; }
static unsigned int* rg_free_ring(const unsigned char*, unsigned int) { return ring; }
static uint4 rg_ld_rlx_gpu_v4(const rg_DirEntry* e) { return {e->keyLo, e->keyHi, e->slot, e->state}; }
static rg_StateMeta* metas;
static rg_StateMeta* rg_meta_of(const unsigned char*, unsigned int) { return metas; }
static void rg_meta_activate(unsigned char*, unsigned int, unsigned int, unsigned int, unsigned int) {}
static void rg_gather_copy(unsigned char* d, const unsigned char* s) { memcpy(d, s, sizeof(rg_${G}_state)); }
/* Stand-ins of the turn machinery: the hook adds 1000 to the state's first word and counts. */
struct rg_turn { long long key; double now; unsigned int sent; };
static void rg_turn_init(rg_turn* t, const rg_kernel*, long long key, double now, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, rg_coop*) { t->key = key; t->now = now; t->sent = 0; }
#define RG_TM_TURN(k, t, st, part) ((void)0)
static int timersStopped = 0;
#define RG_TM_DEACTIVATE(k, st, part) (timersStopped++)
static bool hookWrites = true;
static bool rg_${G}_hook_writes(unsigned int) { return hookWrites; }
static unsigned char* statesBase;
static void rg_meta_enter(const unsigned char*, unsigned int, const rg_${G}_state*) {}
static void rg_meta_touch(const unsigned char*, unsigned int, const rg_${G}_state* s, double now) {
  rg_StateMeta* m = metas + (s - (const rg_${G}_state*)statesBase);
  m->lastActive = now; m->dirty = 1u;
}
static int hooks = 0;
static double hookNow = -1;
static int rg_${G}_hook(rg_turn* t, rg_${G}_state* s, unsigned int) {
  hooks++; hookNow = t->now;
  if (!hookWrites) return 0;
  unsigned int v; memcpy(&v, s->b, 4); v += 1000u; memcpy(s->b, &v, 4);
  return 0;
}
static void rg_reply_text(rg_kernel*, unsigned char*, unsigned int, unsigned int, unsigned int, unsigned int, const char*) {}
static const char* rg_turn_error(rg_turn*, int) { return ""; }
#include "unit.cu"
${cuh}
int main() {
  const unsigned int cap = 128;
  std::vector<rg_DirEntry> dir(cap);
  std::vector<unsigned char> states(sizeof(rg_${G}_state) * ${MAX});
  std::vector<rg_StateMeta> meta(${MAX});
  std::vector<unsigned char> area(${L.bytes});
  alignas(16) static rg_ResidencyHostBlock host;
  memset(&host, 0, sizeof host);
  metas = meta.data();
  statesBase = states.data();
  rg_G g = {0, 0xFFFFFFF8u, 0xFFFFFFF8u};
  rg_ResidencyGlobals* r = (rg_ResidencyGlobals*)area.data();
  const unsigned long long base = (unsigned long long)area.data(), hp = (unsigned long long)&host;
  r->hostLo = (unsigned int)hp; r->hostHi = (unsigned int)(hp >> 32);
  r->acksLo = (unsigned int)(base + ${L.acksAt}); r->acksHi = (unsigned int)((base + ${L.acksAt}) >> 32);
  r->stagingLo = (unsigned int)(base + ${L.stagingAt}); r->stagingHi = (unsigned int)((base + ${L.stagingAt}) >> 32);
  rg_kernel k = {&g, dir.data(), states.data(), ${MAX}, cap, ${PARTS}, r, 0u, 1u, 1u};
  unsigned int ctr[3] = {0, 0, 0};
  unsigned char stage[64];
  char cmd;
  while (scanf(" %c", &cmd) == 1) {
    if (cmd == 'A') { /* A part key time: a turn (activate, state = key's low word if new, marked dirty at time) */
      unsigned int part; long long key; double t;
      if (scanf("%u %lld %lf", &part, &key, &t) != 3) return 2;
      const unsigned int before = ctr[RG_C_ACTIVATIONS];
      rg_${G}_state* s = rg_${G}_activate(&k, ctr, key, part);
      if (!s) { printf("full\n"); continue; }
      if (ctr[RG_C_ACTIVATIONS] != before) { unsigned int v = (unsigned int)key; memcpy(s->b, &v, 4); }
      rg_meta_touch(states.data(), ${MAX}, s, t);
      printf("%ld %u\n", (long)(s - (rg_${G}_state*)states.data()), ctr[RG_C_ACTIVATIONS] != before ? 1u : 0u);
    } else if (cmd == 'M') { /* M: marks or clocks left on slots no READY entry holds (a gather would read them) */
      std::vector<bool> held(${MAX}, false);
      for (auto& e : dir) if ((e.state & 3u) == RG_DIR_READY) held[e.slot] = true;
      int stray = 0;
      for (unsigned int i = 0; i < ${MAX}; i++) if (!held[i] && (meta[i].dirty != 0u || meta[i].busy != 0u || meta[i].lastActive != 0.0)) stray++;
      printf("stray %d\n", stray);
    } else if (cmd == 'W') { /* W 0|1: whether onDeactivate stores into the state (it then marks it) */
      int w;
      if (scanf("%d", &w) != 1) return 2;
      hookWrites = w != 0;
    } else if (cmd == 'C') { /* C slot: the gather read the actor out (mark cleared) */
      unsigned int slot;
      if (scanf("%u", &slot) != 1) return 2;
      meta[slot].dirty = 0u;
    } else if (cmd == 'D') { /* D before now: one deactivation request through control, workers, control */
      double before, now;
      if (scanf("%lf %lf", &before, &now) != 2) return 2;
      host.op = ${RES_OP.DEACTIVATE}u; host.before = before; host.now = now;
      host.seq++;
      rg_res_control(&k); /* relay */
      const unsigned int relayed = r->seq;
      rg_res_control(&k); /* not yet: no worker has acknowledged */
      const unsigned int early = host.doneSeq;
      for (unsigned int p = 0; p < ${PARTS}; p++) {
        if (!rg_${G}_res_service(&k, ctr, p, stage, sizeof stage, 0)) return 3;
        if (rg_${G}_res_service(&k, ctr, p, stage, sizeof stage, 0)) return 4; /* once per request */
      }
      rg_res_control(&k); /* publish */
      printf("D %u %u %u %u\n", relayed, early, host.doneSeq, host.evicted);
      const unsigned char* st = area.data() + ${L.stagingAt};
      for (unsigned int i = 0; i < host.evicted; i++) {
        long long key; unsigned int v;
        memcpy(&key, st + ${L.staging.keysAt} + 8 * i, 8);
        memcpy(&v, st + ${L.staging.statesAt} + 8 * i, 4);
        printf("%lld %u %u\n", key, v, (unsigned int)st[${L.staging.flagsAt} + i]);
      }
      printf("hooks %d now %g timers %d\n", hooks, hookNow, timersStopped);
    }
  }
  int live = 0, dead = 0;
  for (auto& e : dir) { if ((e.state & 3u) == RG_DIR_READY) live++; if (e.state == RG_DIR_DEAD) dead++; }
  printf("live %d dead %d next %u\n", live, dead, g.stateNext);
}
`;

/** The CPU backend's deactivation as a model: which keys leave, with which state and dirty mark. */
interface Actor { part: number; slot: number; value: number; last: number; dirty: boolean }

describe.skipIf(!HAVE_GXX)('deactivation on the device (residency.cuh, g++ on the host)', () => {
  it('builds with the residency structs emitted from residency.ts (static_asserts)', () => {
    const b = gxxBuild(src.slice(from, to), harness);
    expect(b.log).toBe('');
    expect(b.ok).toBe(true);
  });

  it('deactivates exactly the idle actors of every partition: onDeactivate first, final state and dirty mark staged, slots reused, later turns fresh actors', () => {
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
      for (let i = 0; i < gone.length; i++) expectLines.push((l) => { rows.push(l); if (rows.length === gone.length) expect([...rows].sort()).toEqual(want); });
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
  });

  it('freed slots are reused first and a reactivated key starts from a zeroed actor (not its old state)', () => {
    const b = gxxBuild(src.slice(from, to), harness);
    const cmds = ['A 0 5 1', 'A 1 6 2', 'A 2 7 3', 'D 2.5 10', 'M', 'A 0 5 20', 'A 1 8 21', 'A 2 9 22', 'D inf 30', 'M'];
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
});
