import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import { SlotHeader, layoutOf } from '@ringgrain/core/backend';
import {
  DIR_STATE,
  GatherHeader,
  OverflowHeader,
  OverflowNode,
  StateMeta,
  generateKernel,
  gatherLayout,
  inlineRuntime,
  overflowLayout,
  runtimeFile,
} from '../src/index.ts';
import { CTypes } from '../src/cuda/ctypes.ts';
import {
  EvictRow,
  LoadRequest,
  RES_OP,
  ResidencyGlobals,
  ResidencyHostBlock,
  evictRing,
  residencyConstants,
  residencyLayout,
} from '../src/cuda/residency.ts';
import { gxxBuild } from './toolchain.ts';

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
 *
 * The harness, shared by residency-device.test.ts (deactivation), residency-load.test.ts (loading on first
 * message, installs) and residency-room.test.ts (a full table making room, many more keys than entries).
 */
const G = 'Account';
// The directory's C: the runtime file where the runtime lives in .cuh files, else the unit (RG_G(x) = rg_Account_x).
const dirFile = new URL('../src/cuda/runtime/directory.cuh', import.meta.url);
export const src = existsSync(dirFile) ? readFileSync(dirFile, 'utf8') : generateKernel(Account.grain).source;
export const from = src.indexOf('__device__ static __noinline__ void rg_slot_free(');
const activateAt = src.search(
  /__device__ static (rg_Account_state|RG_G\(state\))\* (rg_Account_activate|RG_G\(activate\))\(/,
);
export const to = src.indexOf('\n}\n', activateAt) + 3;
// residency.cuh with the files it includes (residency-evict.cuh, residency-load.cuh) inlined.
const cuh = inlineRuntime(runtimeFile('residency.cuh'));
/** The text between `start` and the end of the function that starts at `last` (both in `text`). */
function cut(text: string, start: string, last: string): string {
  const a = text.indexOf(start);
  const b = text.indexOf(last, a);
  if (a < 0 || b < 0) throw new Error(`residency-device.test: ${start} / ${last} not found (the runtime moved?)`);
  return text.slice(a, text.indexOf('\n}\n', b) + 3);
}
const runtime = (f: string) => readFileSync(new URL(`../src/cuda/runtime/${f}`, import.meta.url), 'utf8');
// The overflow pool's node allocation and the key partition, as the device runs them.
export const pool = existsSync(new URL('../src/cuda/runtime/k2k.cuh', import.meta.url))
  ? cut(runtime('k2k.cuh'), '__device__ static inline unsigned char* rg_ov_node(', 'rg_ov_node(') +
    cut(runtime('k2k.cuh'), '/* A taken node', 'static inline void rg_ov_free(')
  : '';
export const partition = existsSync(new URL('../src/cuda/runtime/ring.cuh', import.meta.url))
  ? cut(runtime('ring.cuh'), 'RG_HD static inline unsigned int rg_partition(', 'rg_partition(')
  : '';
export const NODES = 3 + 16;
export const MAX = 48;
export const PARTS = 3;
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

export const harness = String.raw`#include <cstdio>
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

export const NO_POOL = ' (skipped: no src/cuda/runtime/k2k.cuh and ring.cuh to take the pool and partition code from)';

/** rg_partition of the runtime (ring.cuh): the worker that owns a key. */
export const partOf = (key: number): number =>
  Number(((BigInt.asUintN(64, BigInt(key)) * 0x9e3779b97f4a7c15n) & 0xffff_ffff_ffff_ffffn) >> 32n) % PARTS;

/** Builds the harness (cached) and runs `cmds` through it: its output lines. */
export const run = (cmds: string[]) => {
  const b = gxxBuild(src.slice(from, to), harness);
  expect(b.log).toBe('');
  const r = spawnSync(b.out, { input: cmds.join('\n') + '\n', encoding: 'utf8' });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return r.stdout.trim().split('\n');
};
