import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import { SlotHeader, layoutOf } from '@ringgrain/core/backend';
import { DIR_STATE, GatherHeader, OverflowHeader, OverflowNode, StateMeta, generateKernel, gatherLayout, overflowLayout } from '../src/index.ts';
import { CTypes } from '../src/cuda/ctypes.ts';
import { EvictRow, LoadRequest, RES_OP, ResidencyGlobals, ResidencyHostBlock, evictRing, residencyConstants, residencyLayout } from '../src/cuda/residency.ts';
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
const cuh = readFileSync(new URL('../src/cuda/runtime/residency.cuh', import.meta.url), 'utf8');
/** The text between `start` and the end of the function that starts at `last` (both in `text`). */
function cut(text: string, start: string, last: string): string {
  const a = text.indexOf(start);
  const b = text.indexOf(last, a);
  if (a < 0 || b < 0) throw new Error(`residency-device.test: ${start} / ${last} not found (the runtime moved?)`);
  return text.slice(a, text.indexOf('\n}\n', b) + 3);
}
const runtime = (f: string) => readFileSync(new URL(`../src/cuda/runtime/${f}`, import.meta.url), 'utf8');
// The overflow pool's node allocation and the key partition, as the device runs them.
const pool = existsSync(new URL('../src/cuda/runtime/k2k.cuh', import.meta.url))
  ? cut(runtime('k2k.cuh'), '__device__ static inline unsigned char* rg_ov_node(', 'rg_ov_node(') + cut(runtime('k2k.cuh'), '/* A taken node', 'static inline void rg_ov_free(')
  : '';
const partition = existsSync(new URL('../src/cuda/runtime/ring.cuh', import.meta.url)) ? cut(runtime('ring.cuh'), 'RG_HD static inline unsigned int rg_partition(', 'rg_partition(') : '';
const NODES = 3 + 16;
const MAX = 48;
const PARTS = 3;
const L = residencyLayout({ stateSize: 8, maxActors: MAX, partitions: PARTS });
const ER = evictRing(8);
const types = new CTypes();
types.named(ResidencyGlobals, 'rg_ResidencyGlobals');
types.named(ResidencyHostBlock, 'rg_ResidencyHostBlock');
types.named(LoadRequest, 'rg_LoadRequest');
types.named(EvictRow, 'rg_EvictRow');
types.named(GatherHeader, 'rg_GatherHeader');
types.named(StateMeta, 'rg_StateMeta');
types.named(SlotHeader, 'rg_SlotHeader');
types.named(OverflowHeader, 'rg_OverflowHeader');
types.named(OverflowNode, 'rg_OverflowNode');
const OV = overflowLayout({ partitions: PARTS, slotSize: 64, nodes: NODES });

const harness = String.raw`#include <cstdio>
#include <cstring>
#include <cstddef>
#include <vector>
#define __device__
#define __noinline__
#define RG_RESIDENCY_HOST_TEST 1
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
#define RG_C_RECEIVED 3
#define RG_C_K2K_RECEIVED 4
#define RG_C_REJECTED 5
#define RG_C_PROCESSED 6
#define RG_HD
#define RG_HDR ${layoutOf(SlotHeader).size}u
#define RG_OV_HDR ${OV.tails}u
#define RG_OV_NODE_HDR 16u
#define RG_RES_WAIT() ((void)0)
/* k2k.cuh's pool code may name its atomics through RG_QATOMIC (the device's own scope choice): plain ones here */
#ifndef RG_QATOMIC
#define RG_QATOMIC(f) f
#endif
#ifndef RG_KATOMIC
#define RG_KATOMIC(f) f
#endif
/* A worker waiting for room: the other workers reach their loop's residency check meanwhile (each answers the room request). */
struct rg_kernel;
static void rg_test_others(rg_kernel* k, unsigned int part);
#define RG_RES_ROOM_WAIT(k, ctr, part, co, alone) rg_test_others((k), (part))
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
static void rg_st_vol(unsigned int* p, unsigned int v) { *p = v; }
static unsigned int atomicSub(unsigned int* p, unsigned int v) { unsigned int o = *p; *p -= v; return o; }
static unsigned int atomicMax(unsigned int* p, unsigned int v) { unsigned int o = *p; if (v > o) *p = v; return o; }
static unsigned long long atomicMax(unsigned long long* p, unsigned long long v) { unsigned long long o = *p; if (v > o) *p = v; return o; }
static long long __double_as_longlong(double d) { long long v; memcpy(&v, &d, 8); return v; }
static unsigned int rg_xchg_acq_gpu(unsigned int* p, unsigned int v) { unsigned int o = *p; *p = v; return o; }
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
  rg_ResidencyGlobals* res; unsigned int resPublished, hooksOn, metaOn, loadOn;
  unsigned char* overflow; unsigned int overflowNodes, slotSize;
};
${pool}
${partition}
static unsigned int ring[64];
static unsigned int rg_free_cap(unsigned int) { return 64u; }
static unsigned int* rg_free_ring(const unsigned char*, unsigned int) { return ring; }
static uint4 rg_ld_rlx_gpu_v4(const rg_DirEntry* e) { return {e->keyLo, e->keyHi, e->slot, e->state}; }
static rg_StateMeta* metas;
static rg_StateMeta* rg_meta_of(const unsigned char*, unsigned int) { return metas; }
static void rg_meta_activate(unsigned char*, unsigned int, unsigned int, unsigned int, unsigned int) {}
static void rg_gather_copy(unsigned char* d, const unsigned char* s) { memcpy(d, s, sizeof(rg_${G}_state)); }
template <unsigned int U> struct rg_gather_word { struct T { unsigned char b[U]; }; };
template <class T> static T __ldcg(const T* p) { return *p; }
/* Stand-ins of the turn machinery: the hook adds 1000 to the state's first word and counts. */
struct rg_turn { long long key; double now; unsigned int sent; };
static void rg_turn_init(rg_turn* t, const rg_kernel*, long long key, double now, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, rg_coop*) { t->key = key; t->now = now; t->sent = 0; }
#define RG_TM_TURN(k, t, st, part) ((void)0)
#define RG_REM_TURN(k, t) ((void)0)
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
static void rg_reply_text(rg_kernel*, unsigned char*, unsigned int, unsigned int method, unsigned int flags, unsigned int corr, const char* text) {
  printf("reply %u %u %u %s\n", method, flags, corr, text);
}
static void rg_res_reply_text(rg_kernel*, unsigned char*, unsigned int, unsigned int method, unsigned int corr,
                              unsigned int failure, const char* text, unsigned int n) {
  printf("reply %u %u %u failure %u %.*s\n", method, RG_REPLY | RG_ERROR, corr, failure, (int)n, text);
}
/* Activation at install: the declared timers, then onActivate (both stand-ins print what ran, with which clock). */
#define RG_TM_ACTIVATED(k, ctr, acts, st, key, now, part) do { if ((ctr)[RG_C_ACTIVATIONS] != (acts)) printf("timers %lld %g\n", (long long)(key), (double)(now)); } while (0)
#define RG_ON_ACTIVATE(k, ctr, acts, st, key, now, part, stage, cap, co) do { if ((ctr)[RG_C_ACTIVATIONS] != (acts)) printf("onActivate %lld %g\n", (long long)(key), (double)(now)); } while (0)
/* The turn as turn-run.cuh runs it for a class that loads: an actor this worker does not hold, or holds
   LOADING, has the message parked; else the handler (the state's first word += the payload's u32). */
static void rg_${G}_turn(rg_kernel* k, unsigned int* ctr, unsigned char* slot, unsigned char* stage, unsigned int, unsigned int part, unsigned char*, rg_coop*);
static const char* rg_turn_error(rg_turn*, int) { return ""; }
#include "unit.cu"
${cuh}
static unsigned int otherCtr[7];
static int waits = 0;
static void rg_test_others(rg_kernel* k, unsigned int part) {
  waits++;
  for (unsigned int q = 0; q < ${PARTS}; q++)
    if (q != part && rg_res_room_pending(k, q)) rg_${G}_res_room_service(k, otherCtr, q, 0, true);
}
static rg_DirEntry* rg_${G}_res_find(rg_kernel* k, long long key, unsigned int part) {
  const unsigned int ready = RG_DIR_READY | ((part + 1u) << RG_DIR_OWNER_SHIFT);
  for (unsigned int i = 0; i < k->dirCapacity; i++)
    if (k->directory[i].state == ready && RG_KEY_OF(k->directory[i].keyLo, k->directory[i].keyHi) == key) return &k->directory[i];
  return 0;
}
static void rg_${G}_turn(rg_kernel* k, unsigned int* ctr, unsigned char* slot, unsigned char* stage, unsigned int, unsigned int part, unsigned char*, rg_coop*) {
  const rg_SlotHeader* h = (const rg_SlotHeader*)stage;
  ctr[RG_C_RECEIVED]++;
  const long long key = RG_KEY_OF(h->keyLo, h->keyHi);
  const char* why = rg_${G}_res_wait(k, ctr, key, part, slot, h->time, true, 0);
  if (why == RG_RES_PARKED) { printf("park %lld %u\n", key, h->corr); return; }
  if (why) { ctr[RG_C_REJECTED]++; printf("reject %lld %s\n", key, why == RG_RES_FULL ? "full" : strstr(why, "pool") ? "pool" : "?"); return; }
  rg_DirEntry* e = rg_${G}_res_find(k, key, part);
  if (!e) { printf("lost %lld\n", key); return; }
  rg_${G}_state* s = (rg_${G}_state*)(k->states + (unsigned long long)e->slot * sizeof(rg_${G}_state));
  unsigned int v, a;
  memcpy(&v, s->b, 4); memcpy(&a, stage + RG_HDR, 4); v += a; memcpy(s->b, &v, 4);
  metas[e->slot].lastActive = h->time; metas[e->slot].dirty = 1u;
  ctr[RG_C_PROCESSED]++;
  printf("run %lld %u %g %u\n", key, h->corr, h->time, v);
}
int main() {
  const unsigned int cap = 128;
  std::vector<rg_DirEntry> dir(cap);
  std::vector<unsigned char> states(sizeof(rg_${G}_state) * ${MAX});
  std::vector<rg_StateMeta> meta(${MAX});
  std::vector<unsigned char> area(${L.bytes});
  /* the host block, then the load-request ring (residencyHostBytes) */
  alignas(16) static unsigned char hostMem[sizeof(rg_ResidencyHostBlock) + 16 * 64 + ${ER.stride} * 64];
  memset(hostMem, 0, sizeof hostMem);
  rg_ResidencyHostBlock& host = *(rg_ResidencyHostBlock*)hostMem;
  rg_LoadRequest* loads = (rg_LoadRequest*)(hostMem + sizeof(rg_ResidencyHostBlock));
  alignas(16) static unsigned char ov[${OV.bytes}];
  memset(ov, 0, sizeof ov);
  metas = meta.data();
  statesBase = states.data();
  rg_G g = {0, 0xFFFFFFF8u, 0xFFFFFFF8u};
  rg_ResidencyGlobals* r = (rg_ResidencyGlobals*)area.data();
  const unsigned long long base = (unsigned long long)area.data(), hp = (unsigned long long)&host;
  r->hostLo = (unsigned int)hp; r->hostHi = (unsigned int)(hp >> 32);
  r->acksLo = (unsigned int)(base + ${L.acksAt}); r->acksHi = (unsigned int)((base + ${L.acksAt}) >> 32);
  r->stagingLo = (unsigned int)(base + ${L.stagingAt}); r->stagingHi = (unsigned int)((base + ${L.stagingAt}) >> 32);
  r->boardLo = (unsigned int)(base + ${L.boardAt}); r->boardHi = (unsigned int)((base + ${L.boardAt}) >> 32);
  r->parksLo = (unsigned int)(base + ${L.parksAt}); r->parksHi = (unsigned int)((base + ${L.parksAt}) >> 32);
  r->boardKindsAt = ${L.board.kindsAt}u; r->boardStatesAt = ${L.board.statesAt}u; r->boardErrorAt = ${L.board.errorAt}u;
  r->installCapacity = ${L.installCapacity}u; r->loadCapacity = 64u;
  r->roomsLo = (unsigned int)(base + ${L.roomsAt}); r->roomsHi = (unsigned int)((base + ${L.roomsAt}) >> 32);
  r->evictCapacity = 64u; r->evictStride = ${ER.stride}u;
  r->idleMs = 1.0 / 0.0; /* no idleMs: a full table makes no room */
  unsigned char* evicts = hostMem + sizeof(rg_ResidencyHostBlock) + 16 * 64;
  unsigned int evictTail = 0u;
  rg_kernel k = {&g, dir.data(), states.data(), ${MAX}, cap, ${PARTS}, r, 0u, 1u, 1u, 1u, ov, ${NODES}u, 64u};
  unsigned int loadTail = 0u;
  unsigned int ctr[7] = {0, 0, 0, 0, 0, 0, 0};
  unsigned char stage[64];
  /* one request through the control warp (relay), every worker, the control warp again (publish) */
  auto request = [&](unsigned int op) -> int {
    host.op = op;
    host.seq++;
    rg_res_control(&k);
    for (unsigned int p = 0; p < ${PARTS}; p++) {
      if (!rg_res_pending(&k, p)) return 6;
      const unsigned int s = rg_${G}_res_service(&k, ctr, p, stage, sizeof stage, 0, 0);
      if (s != host.seq) return 3;
      rg_res_ack(&k, p, s);
      if (rg_res_pending(&k, p) || rg_${G}_res_service(&k, ctr, p, stage, sizeof stage, 0, 0)) return 4;
    }
    rg_res_control(&k);
    return host.doneSeq == host.seq ? 0 : 5;
  };
  char cmd;
  while (scanf(" %c", &cmd) == 1) {
    if (cmd == 'A') { /* A part key time: a turn (activate, state = key's low word if new, marked dirty at time) */
      unsigned int part; long long key; double t;
      if (scanf("%u %lld %lf", &part, &key, &t) != 3) return 2;
      const unsigned int before = ctr[RG_C_ACTIVATIONS];
      rg_${G}_state* s = rg_${G}_activate(&k, ctr, key, part);
      if (!s) s = rg_${G}_res_room_activate(&k, ctr, key, part, t, true, 0); /* a class without storage makes room the same way */
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
    } else if (cmd == 'T') { /* T key corr time amount: a message, through the worker of its key's partition */
      long long key; unsigned int corr, amount; double t;
      if (scanf("%lld %u %lf %u", &key, &corr, &t, &amount) != 4) return 2;
      alignas(16) unsigned char msg[64] = {};
      static_assert(RG_HDR + 4u <= 64u, "a message fits the stage");
      rg_SlotHeader* h = (rg_SlotHeader*)msg;
      h->length = 4u; h->corr = corr; h->time = t; h->method = 0u; h->sender = RG_HOST_SENDER;
      h->keyLo = (unsigned int)key; h->keyHi = (unsigned int)((unsigned long long)key >> 32);
      memcpy(msg + RG_HDR, &amount, 4);
      memcpy(stage, msg, 64);
      rg_${G}_turn(&k, ctr, msg, stage, sizeof stage, rg_partition(key, ${PARTS}), 0, 0);
    } else if (cmd == 'L') { /* L: the keys posted on the load-request ring since the last L */
      while (loads[loadTail & 63u].seq == loadTail + 1u) {
        printf("load %lld\n", RG_KEY_OF(loads[loadTail & 63u].keyLo, loads[loadTail & 63u].keyHi));
        loadTail++;
      }
      host.loadTail = loadTail;
    } else if (cmd == 'I') { /* I mode rows error: then rows "key kind value" on the board; one install */
      unsigned int mode, rows; char err[64];
      if (scanf("%u %u %63s", &mode, &rows, err) != 3) return 2;
      unsigned char* board = area.data() + ${L.boardAt};
      for (unsigned int i = 0; i < rows; i++) {
        long long key; unsigned int kind, v;
        if (scanf("%lld %u %u", &key, &kind, &v) != 3) return 2;
        memcpy(board + 8 * i, &key, 8);
        board[${L.board.kindsAt} + i] = (unsigned char)kind;
        memset(board + ${L.board.statesAt} + 8 * i, 0, 8);
        memcpy(board + ${L.board.statesAt} + 8 * i, &v, 4);
      }
      const unsigned int n = strcmp(err, "-") == 0 ? 0u : (unsigned int)strlen(err);
      memcpy(board + ${L.board.errorAt}, err, n);
      host.rows = rows; host.mode = mode; host.errorLength = n;
      host.failureId = n ? 7u : 0u; /* a StateLoadError.failureId */
      const int rc = request(${RES_OP.INSTALL}u);
      if (rc) return rc;
      printf("I %u %u %u\n", host.doneSeq, host.installed, host.rejected);
    } else if (cmd == 'X') { /* X: the host lets a stopped kernel exit; the control warp sees it at once */
      printf("stopped %d", rg_res_stopped(&k) ? 1 : 0);
      host.op = ${RES_OP.EXIT}u;
      host.seq++;
      printf(" %d\n", rg_res_stopped(&k) ? 1 : 0);
    } else if (cmd == 'R') { /* R idleMs: the class's idleMs (inf: none) */
      double ms;
      if (scanf("%lf", &ms) != 1) return 2;
      r->idleMs = ms;
    } else if (cmd == 'E') { /* E: the rows on the evict ring since the last E (key, state's first word, dirty), then room words */
      while (((rg_EvictRow*)(evicts + ${ER.stride} * (evictTail & 63u)))->seq == evictTail + 1u) {
        const rg_EvictRow* row = (const rg_EvictRow*)(evicts + ${ER.stride} * (evictTail & 63u));
        unsigned int v;
        memcpy(&v, (const unsigned char*)row + sizeof(rg_EvictRow), 4);
        printf("evict %lld %u %u\n", RG_KEY_OF(row->keyLo, row->keyHi), v, row->dirty);
        evictTail++;
      }
      host.evictTail = evictTail;
      printf("room %u", r->roomEpoch);
      for (unsigned int p = 0; p < ${PARTS}; p++) printf(" %u", rg_res_rooms(r)[p]);
      printf(" made %u waits %d hooks %d\n", r->madeRoom, waits, hooks);
    } else if (cmd == 'P') { /* P: every worker's loop reaches its residency check (a pending room request is answered) */
      for (unsigned int p = 0; p < ${PARTS}; p++) if (rg_res_room_pending(&k, p)) rg_${G}_res_room_service(&k, ctr, p, 0, true);
    } else if (cmd == 'Z') { /* Z: counters, pool */
      printf("ctr %u %u %u %u parked %u inUse %u\n", ctr[RG_C_RECEIVED], ctr[RG_C_PROCESSED], ctr[RG_C_REJECTED], ctr[RG_C_ACTIVATIONS], r->parked, ((rg_OverflowHeader*)ov)->inUse);
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
        const unsigned int s = rg_${G}_res_service(&k, ctr, p, stage, sizeof stage, 0, 0);
        if (s != host.seq) return 3;
        rg_res_ack(&k, p, s);
        if (rg_${G}_res_service(&k, ctr, p, stage, sizeof stage, 0, 0)) return 4; /* once per request */
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

describe.skipIf(!HAVE_GXX || !pool || !partition)(`deactivation on the device (residency.cuh, g++ on the host)${pool && partition ? '' : ' (skipped: no src/cuda/runtime/k2k.cuh and ring.cuh to take the pool and partition code from)'}`, () => {
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

/** rg_partition of the runtime (ring.cuh): the worker that owns a key. */
const partOf = (key: number): number => Number(((BigInt.asUintN(64, BigInt(key)) * 0x9e3779b97f4a7c15n) & 0xffff_ffff_ffff_ffffn) >> 32n) % PARTS;

describe.skipIf(!HAVE_GXX || !pool || !partition)(`loading on first message and installs on the device (residency.cuh, g++ on the host)${pool && partition ? '' : ' (skipped: no src/cuda/runtime/k2k.cuh and ring.cuh to take the pool and partition code from)'}`, () => {
  const run = (cmds: string[]) => {
    const b = gxxBuild(src.slice(from, to), harness);
    expect(b.log).toBe('');
    const r = spawnSync(b.out, { input: cmds.join('\n') + '\n', encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    return r.stdout.trim().split('\n');
  };
  /** The lines an install prints: per partition in order, its rows in board order. */
  const byPartition = (rows: Array<{ key: number; lines: string[] }>) => [0, 1, 2].flatMap((p) => rows.filter((r) => partOf(r.key) === p).flatMap((r) => r.lines));

  it('parks a missing actor\'s messages in order, posts its key once, installs (load) then replays them; a failed load rejects exactly its parked messages', () => {
    const out = run([
      'T 5 1 10 1', 'T 5 2 11 2', 'T 6 3 12 7', 'T 5 0 13 3',
      'L', 'Z',
      'I 0 2 disk-on-fire', '5 1 100', '6 2 0',
      'T 5 4 20 4', 'Z', 'L',
    ]);
    let at = 0;
    const take = (n: number) => out.slice(at, (at += n));
    expect(take(4)).toEqual(['park 5 1', 'park 5 2', 'park 6 3', 'park 5 0']);
    expect(take(2)).toEqual(['load 5', 'load 6']); // one request per actor, in the order of their first messages
    expect(take(1)).toEqual(['ctr 4 0 0 0 parked 4 inUse 4']); // received, not processed: system.idle() waits
    expect(take(6)).toEqual(byPartition([
      // its state, then timers and onActivate with the first parked message's clock, then the messages in order
      { key: 5, lines: ['timers 5 10', 'onActivate 5 10', 'run 5 1 10 101', 'run 5 2 11 103', 'run 5 0 13 106'] },
      // REPLY | ERROR with the failure's id and the store's text, to the parked ask (corr 3)
      { key: 6, lines: ['reply 0 6 3 failure 7 disk-on-fire'] },
    ]));
    expect(take(1)).toEqual(['I 1 1 1']);
    expect(take(1)).toEqual(['run 5 4 20 110']); // READY now: runs at once
    expect(take(1)).toEqual(['ctr 5 4 1 1 parked 0 inUse 0']); // received = processed + rejected; nodes back
    expect(out.slice(at)).toEqual(['live 1 dead 1 next 2']); // no load posted again; 6's entry a tombstone
  });

  it('preload installs only keys not held (a held state is newer), with clock 0; a later miss loads again; deactivation with Infinity rejects what still waits', () => {
    const out = run([
      'T 5 1 10 1', 'L', 'I 0 1 -', '5 1 100',
      'I 1 3 -', '5 1 999', '7 1 50', '8 0 0',
      'T 7 5 30 1', 'T 8 6 31 2', 'T 5 9 32 1',
      'T 6 7 40 9', 'L',
      'D inf 50', 'Z', 'X',
    ]);
    let at = 0;
    const take = (n: number) => out.slice(at, (at += n));
    expect(take(2)).toEqual(['park 5 1', 'load 5']);
    expect(take(4)).toEqual(['timers 5 10', 'onActivate 5 10', 'run 5 1 10 101', 'I 1 1 0']);
    expect(take(4)).toEqual(byPartition([
      { key: 7, lines: ['timers 7 0', 'onActivate 7 0'] },
      { key: 8, lines: ['timers 8 0', 'onActivate 8 0'] },
    ]));
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
  });

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

describe.skipIf(!HAVE_GXX || !pool || !partition)(`a full table makes room on the device (residency.cuh, g++ on the host)${pool && partition ? '' : ' (skipped: no src/cuda/runtime/k2k.cuh and ring.cuh to take the pool and partition code from)'}`, () => {
  const run = (cmds: string[]) => {
    const b = gxxBuild(src.slice(from, to), harness);
    expect(b.log).toBe('');
    const r = spawnSync(b.out, { input: cmds.join('\n') + '\n', encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    return r.stdout.trim().split('\n');
  };
  /** `n` keys from `start` up whose partition passes `keep`. */
  const keysWhere = (n: number, start: number, keep: (p: number) => boolean) => {
    const out: number[] = [];
    for (let k = start; out.length < n; k++) if (keep(partOf(k))) out.push(k);
    return out;
  };
  /** A turns at times t0 + i (the state's first word is the key: the harness's fresh actor). */
  const fill = (keys: number[], t0: number) => keys.map((k, i) => `A ${partOf(k)} ${k} ${t0 + i}`);
  /** The evict-ring rows the model expects: the actors of `parts` whose last turn is before `before`, onDeactivate's +1000 in the state, dirty. */
  const rows = (keys: number[], t0: number, before: number, parts: number[]) =>
    keys.flatMap((k, i) => (t0 + i < before && parts.includes(partOf(k)) ? [`evict ${k} ${k + 1000} 1`] : [])).sort();

  it('a new key meeting a full table deactivates its own worker\'s idle actors (onDeactivate, final state and mark on the evict ring), takes a freed slot; the other workers deactivate theirs when they answer the room request', () => {
    const keys = Array.from({ length: MAX }, (_, i) => 100 + i);
    const key = keysWhere(1, 500, (p) => p === 0)[0]!;
    const out = run(['R 1000', ...fill(keys, 0), 'W 1', `T ${key} 1 1030 5`, 'E', 'M', 'P', 'E', 'M', 'L', 'Z']);
    let at = MAX;
    expect(out.slice(0, MAX).every((l) => l.endsWith(' 1'))).toBe(true); // 48 fresh activations
    expect(out[at++]).toBe(`park ${key} 1`); // a slot was found at once: LOADING, parked
    const own = rows(keys, 0, 30, [0]);
    expect(own.length).toBeGreaterThan(0);
    expect(out.slice(at, at + own.length).sort()).toEqual(own);
    at += own.length;
    // Room request 1: worker 0 answered it (no wait for the others: it found a slot), the others not yet.
    expect(out[at++]).toBe(`room 1 1 0 0 made ${own.length} waits 0 hooks ${own.length}`);
    expect(out[at++]).toBe('stray 0');
    const others = rows(keys, 0, 30, [1, 2]);
    expect(out.slice(at, at + others.length).sort()).toEqual(others);
    at += others.length;
    const all = own.length + others.length;
    expect(all).toBe(30); // every actor idle for idleMs at 1030 (last turns 0..29), as the CPU backend deactivates them
    expect(out[at++]).toBe(`room 1 1 1 1 made ${all} waits 0 hooks ${all}`);
    expect(out[at++]).toBe('stray 0');
    expect(out[at++]).toBe(`load ${key}`);
    expect(out[at++]).toBe('ctr 1 0 0 48 parked 1 inUse 1'); // the new actor is counted at its install
    expect(out[at]).toBe(`live 19 dead 30 next 48`); // 18 READY, 1 LOADING
  });

  it('a worker with no idle actor of its own waits until the other workers deactivated theirs; with nothing idle anywhere, the message is rejected as a full table (typed, counted); without idleMs no room is asked for', () => {
    // Every actor in partitions 1 and 2; the new key's worker (0) holds none.
    const keys = keysWhere(MAX, 1, (p) => p !== 0);
    const [k0, k1, k2] = keysWhere(3, 5000, (p) => p === 0);
    const out = run(['R 1000', ...fill(keys, 0), 'W 0', `T ${k0} 1 1010 5`, 'E', 'Z']);
    let at = MAX;
    expect(out[at++]).toBe(`park ${k0} 1`);
    const gone = keys.flatMap((k, i) => (i < 10 ? [`evict ${k} ${k} 1`] : [])).sort(); // the hook stores nothing (W 0)
    expect(out.slice(at, at + 10).sort()).toEqual(gone);
    at += 10;
    expect(out[at++]).toBe('room 1 1 1 1 made 10 waits 1 hooks 10'); // one wait: the others answered in it
    expect(out[at++]).toBe('ctr 1 0 0 48 parked 1 inUse 1');
    // Every actor's last turn within idleMs: nothing can be deactivated, the message is a full table.
    const busy = run(['R 1000', ...fill(keys, 5000), `T ${k1} 2 5100 5`, 'E', 'R inf', `T ${k2} 3 99999 5`, 'E', 'Z']);
    at = MAX;
    expect(busy[at++]).toBe(`reject ${k1} full`);
    expect(busy[at++]).toBe('room 1 1 1 1 made 0 waits 1 hooks 0'); // every worker answered, nothing deactivated
    expect(busy[at++]).toBe(`reject ${k2} full`); // no idleMs: no room request
    expect(busy[at++]).toBe('room 1 1 1 1 made 0 waits 1 hooks 0');
    expect(busy[at++]).toBe('ctr 2 0 2 48 parked 0 inUse 0');
  });

  it('a class without storage (activation in the turn) makes room the same way', () => {
    const keys = Array.from({ length: MAX }, (_, i) => 200 + i);
    const [k0] = keysWhere(1, 7000, (p) => p === 1);
    const out = run(['R 100', ...fill(keys, 0), 'W 1', `A 1 ${k0} 5000`, 'P', 'E', 'M']);
    expect(out[MAX]).toMatch(/^\d+ 1$/); // a fresh activation on a freed slot
    const all = keys.map((k) => `evict ${k} ${k + 1000} 1`).sort();
    expect(out.slice(MAX + 1, MAX + 1 + MAX).sort()).toEqual(all); // every actor idle at 5000: all deactivated
    expect(out[MAX + 1 + MAX]).toBe(`room 1 1 1 1 made ${MAX} waits 0 hooks ${MAX}`);
    expect(out[MAX + 2 + MAX]).toBe('stray 0');
  });
});

const NO_POOL = ' (skipped: no src/cuda/runtime/k2k.cuh and ring.cuh to take the pool and partition code from)';
const MANY = `many more keys than directory entries (residency.cuh, g++ on the host)${pool && partition ? '' : NO_POOL}`;
describe.skipIf(!HAVE_GXX || !pool || !partition)(MANY, () => {
  const run = (cmds: string[]) => {
    const b = gxxBuild(src.slice(from, to), harness);
    expect(b.log).toBe('');
    const r = spawnSync(b.out, { input: cmds.join('\n') + '\n', encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    return r.stdout.trim().split('\n');
  };
  /*
   * The conformance case 'maxActors 1024 per lane serves 100,000 keys' at the harness's scale: batches of new keys
   * (a message each, all workers' keys), their loads answered, the clock moved past idleMs between batches, so
   * every batch meets a full table and makes room. 960 keys pass 128 directory entries: every entry has been a
   * tombstone long before the end. The H200 at a56e4f3 rejected 345 of a batch in that case: a lookup that only
   * stopped at an EMPTY entry walked the whole directory and called the key's table full.
   */
  it('every message of 960 keys through 48 slots (128 entries) runs, none rejected; a full table makes room', () => {
    const BATCH = 12;
    const BATCHES = 80;
    const cmds = ['R 1000'];
    for (let batch = 0; batch < BATCHES; batch++) {
      const keys = Array.from({ length: BATCH }, (_, i) => batch * BATCH + i);
      keys.forEach((k, i) => cmds.push(`T ${k} ${i + 1} ${2000 * batch} 1`));
      cmds.push('L', `I 0 ${BATCH} -`, ...keys.map((k) => `${k} 0 0`));
      // a second message to each, READY now: found where its insert put it, not loaded (or inserted) again
      keys.forEach((k, i) => cmds.push(`T ${k} ${100 + i} ${2000 * batch + 1} 2`));
      cmds.push('E');
    }
    cmds.push('Z');
    const out = run(cmds);
    const keys = BATCH * BATCHES;
    const parkedAgain = (l: string) => l.startsWith('park') && Number(l.split(' ')[2]) >= 100;
    expect(out.filter((l) => l.startsWith('reject') || l.startsWith('lost') || parkedAgain(l))).toEqual([]);
    // each key's first message ran on a fresh actor (ABSENT: zeroed + 1) after its install, then its second (+ 2)
    const runs = out.filter((l) => l.startsWith('run '));
    expect(runs.length).toBe(2 * keys);
    const byKey = new Map<string, string[]>();
    for (const l of runs) byKey.set(l.split(' ')[1]!, [...(byKey.get(l.split(' ')[1]!) ?? []), l.split(' ').at(-1)!]);
    expect(byKey.size).toBe(keys);
    expect([...byKey.values()].every((v) => v.join() === '1,3')).toBe(true);
    // each load posted once, in order within a batch
    const loads = out.filter((l) => l.startsWith('load ')).map((l) => Number(l.split(' ')[1]));
    expect(loads).toEqual(Array.from({ length: keys }, (_, i) => i));
    // every key of the batches before the last two was deactivated to make room, once
    const evicted = out.filter((l) => l.startsWith('evict ')).map((l) => Number(l.split(' ')[1]));
    expect(new Set(evicted).size).toBe(evicted.length);
    expect(evicted.length).toBeGreaterThanOrEqual(keys - 4 * BATCH);
    expect(out.at(-2)).toBe(`ctr ${2 * keys} ${2 * keys} 0 ${keys} parked 0 inUse 0`);
    // no EMPTY entry is left (128 = live + dead): the lookups stopped at probeMax, not at an EMPTY entry
    const [, live, , dead] = out.at(-1)!.split(' ');
    expect(Number(live) + Number(dead)).toBe(128);
  });

  it('no EMPTY entry left: a new key of a class without storage takes a free slot, no room request', () => {
    // 400 keys through the 48 slots of a class without storage, deactivated in waves: every entry a tombstone or live.
    const cmds = ['R 1000', 'W 0'];
    let t = 0;
    for (let wave = 0; wave < 20; wave++) {
      for (let i = 0; i < 20; i++) cmds.push(`A ${partOf(wave * 20 + i)} ${wave * 20 + i} ${t++}`);
      cmds.push(`D ${t} ${t}`);
    }
    // 10 actors now, idle for idleMs at 5000: a room request would deactivate them.
    for (let i = 0; i < 10; i++) cmds.push(`A ${partOf(1000 + i)} ${1000 + i} ${t++}`);
    cmds.push(`A ${partOf(2000)} 2000 5000`, 'E');
    const out = run(cmds);
    expect(out.filter((l) => l === 'full')).toEqual([]);
    const last = out.at(-3)!;
    expect(last).toMatch(/^\d+ 1$/); // a fresh activation
    expect(out.at(-2)).toBe('room 0 0 0 0 made 0 waits 0 hooks 400'); // no room request (the hooks are the waves' 400)
    const [, live, , dead] = out.at(-1)!.split(' ');
    expect([Number(live), Number(live) + Number(dead)]).toEqual([11, 128]);
  });
});
