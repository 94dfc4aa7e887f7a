import { spawnSync } from 'node:child_process';
import { SLOT_HEADER_SIZE } from '@ringgrain/core';
import { Ring, SLOT, SlotFlag, SlotWriter, TURN_ERROR, decodeTurnError, ringBytes } from '@ringgrain/core/backend';
import { gxxBuild } from './toolchain.ts';

/**
 * RG_HOST_COOP: the unit's element-parallel loops run through its own lane runners and rg_coop_loop, as
 * on the GPU when a turn is alone on its warp, with the warp emulated here: 32 threads, one a lane, each
 * running rg_coop_run(co, lane); __shfl_xor_sync exchanges through a 32-thread barrier. RG_COOP_MIN_ITERS 1:
 * every parallel loop of one or more iterations goes to the lanes (the GPU keeps short ones on lane 0).
 * The lanes' iterations interleave as the threads are scheduled, so a loop whose iterations were not
 * independent gives other results than the JS handler's order.
 */
const COOP_PRELUDE = String.raw`#define RG_HOST_COOP 1
#define RG_COOP_MIN_ITERS 1u
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>
#define __device__
#define __noinline__
#define __forceinline__
static thread_local unsigned int rg_h_lane = 0;
struct rg_h_barrier {
  std::mutex m;
  std::condition_variable cv;
  unsigned int n = 0, gen = 0;
  void wait() {
    std::unique_lock<std::mutex> l(m);
    const unsigned int g = gen;
    if (++n == 32u) { n = 0; gen++; cv.notify_all(); return; }
    cv.wait(l, [&] { return gen != g; });
  }
};
static rg_h_barrier rg_h_bar;
static unsigned long long rg_h_x[32];
template <class T> static T __shfl_xor_sync(unsigned int mask, T v, unsigned int o) {
  static_assert(sizeof(T) <= 8, "a shuffled value fits 8 bytes");
  if (mask != 0xffffffffu) abort(); /* the runners shuffle across the full warp only */
  memcpy(&rg_h_x[rg_h_lane], &v, sizeof v);
  rg_h_bar.wait();
  T r;
  memcpy(&r, &rg_h_x[(rg_h_lane ^ o) & 31u], sizeof r);
  rg_h_bar.wait();
  return r;
}
static inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
`;

/** After the unit: the warp a post runs on (lane 0 on the calling thread, as on the GPU), and the posts counted. */
const COOP_WARP = String.raw`static unsigned long long rg_h_posts = 0;
static rg_coop rg_h_co;
static void rg_coop_post(rg_coop* co) {
  rg_h_posts++;
  std::vector<std::thread> lanes;
  for (unsigned int l = 1; l < 32u; l++) lanes.emplace_back([co, l] { rg_h_lane = l; rg_coop_run(co, l); });
  rg_h_lane = 0;
  rg_coop_run(co, 0u);
  for (auto& th : lanes) th.join();
}
#define RG_H_CO (&rg_h_co)
#define RG_H_POSTS rg_h_posts
`;

/** Without RG_HOST_COOP: no warp, so every loop runs sequentially (as in a host build of the kernel). */
const NO_COOP = String.raw`#define RG_H_CO ((rg_coop*)0)
#define RG_H_POSTS 0ull`;

/** A C++ main around a generated unit: the unit's own decode → handle → encode, driven over stdin. */
function harnessSource(grain: string, coop: boolean, lanes: boolean): string {
  const G = grain;
  return String.raw`#define RG_HOST_HARNESS 1
${lanes ? '#define RG_H_LANES 1' : ''}
${coop ? COOP_PRELUDE : ''}
#include "unit.cu"
${coop ? COOP_WARP : NO_COOP}
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>
#include <string>
#include <vector>

/* Per thread: a lanes build runs up to 32 turns at once, each on a thread of its own. */
static thread_local std::vector<std::string> sent;
static thread_local unsigned char k2k[1 << 16];
static std::string hex(const unsigned char* p, unsigned n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < n; i++) { s += d[p[i] >> 4]; s += d[p[i] & 15]; }
  return s.empty() ? "-" : s;
}
static std::vector<unsigned char> unhex(const std::string& s) {
  std::vector<unsigned char> v;
  if (s == "-") return v;
  for (size_t i = 0; i + 1 < s.size(); i += 2) v.push_back((unsigned char)std::stoul(s.substr(i, 2), nullptr, 16));
  return v;
}
unsigned char* rg_host_k2k_claim(rg_turn* t, unsigned int grain, unsigned int len) {
  (void)grain;
  if (len + RG_HDR > sizeof(k2k)) { t->err = RG_E_PAYLOAD_TOO_LARGE; return 0; }
  memset(k2k, 0, sizeof(k2k));
  return k2k;
}
void rg_host_k2k_publish(rg_turn* t, unsigned char* slot, unsigned int len) { (void)t; sent.push_back(hex(slot, RG_HDR + len)); }

/*
 * One turn as the kernel runs it (decode → handle → encode), from a state and payload in hex: the line the
 * host side parses. Everything it writes is its own (heap or thread-local), so turns may run at once.
 */
static std::string turnLine(unsigned method, long long key, unsigned budget, const std::string& stateHex, const std::string& payloadHex, rg_coop* co) {
  std::vector<unsigned char> p = unhex(payloadHex);
  std::vector<unsigned char> sb = unhex(stateHex);
  std::unique_ptr<rg_${G}_state> st(new rg_${G}_state);
  if (sb.size() != sizeof(*st)) return "BAD_STATE";
  memcpy(st.get(), sb.data(), sizeof(*st));
  /* Poisoned, as the kernel's scratch is never zeroed: a field the decoder or the handler does not
     write would show as 0xA5 bytes and differ from the JS result. */
  std::unique_ptr<rg_${G}_req> req(new rg_${G}_req);
  memset(req.get(), 0xA5, sizeof(*req));
  if (!rg_${G}_decode(method, p.data(), (unsigned)p.size(), req.get())) return "REJECT";
  rg_turn t;
  memset(&t, 0, sizeof(t));
  t.key = key;
  t.now = 1234.5;
  t.budget = budget;
  t.method = method;
  t.flags = RG_ASK;
  t.corr = 7;
  t.sender = RG_HOST_SENDER;
  t.grain = 0;
  t.co = co;
  sent.clear();
  std::unique_ptr<rg_${G}_rep> rep(new rg_${G}_rep);
  memset(rep.get(), 0xA5, sizeof(*rep));
  int rc = rg_${G}_handle(&t, st.get(), req.get(), rep.get());
  std::string reply = "-", error = "-";
  std::vector<unsigned char> out(1 << 16);
  if (rc == RG_OK) {
    rg_wr w = {out.data(), 0u, (unsigned)out.size()};
    reply = rg_${G}_encode_reply(method, rep.get(), &w) ? hex(out.data(), w.pos) : "ENCODE_FAIL";
  } else if (rc > RG_FORWARDED) {
    /* The error reply's payload as the kernel writes it (rg_reply_text): [HANDLER, [the turn's error text]]. */
    rg_wr w = {out.data(), 0u, (unsigned)out.size()};
    const char* text = rg_turn_error(&t, rc);
    rg_wr_turn_error(&w, RG_TE_HANDLER, text, rg_strlen(text));
    error = hex(out.data(), w.pos);
  }
  std::ostringstream o;
  o << rc << " " << hex((const unsigned char*)st.get(), sizeof(*st)) << " " << reply << " " << error << " " << sent.size();
  for (auto& x : sent) o << " " << x;
  return o.str();
}

/* Rounds of lane-parallel turns run (lanes builds). */
static unsigned long long rg_h_rounds = 0;
#if defined(RG_H_LANES)
/* Lane-parallel turns: up to 32 turns of distinct actors at once, each on its own thread and with no warp
   to help (t->co null), as a worker warp runs a round of them; the lines come out in input order. */
struct Job { unsigned method; long long key; unsigned budget; std::string state, payload, out; };
static std::vector<Job> jobs;
static void runRound(std::vector<Job>& js) {
  if (js.empty()) return;
  rg_h_rounds++;
  std::vector<std::thread> lanes;
  for (auto& j : js) lanes.emplace_back([&j] { j.out = turnLine(j.method, j.key, j.budget, j.state, j.payload, (rg_coop*)0); });
  for (auto& l : lanes) l.join();
  for (auto& j : js) std::cout << j.out << "\n";
  js.clear();
}
#endif

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd, payloadHex;
    unsigned method;
    in >> cmd >> method;
#if defined(RG_H_LANES)
    if (cmd != "H") runRound(jobs);
#endif
    if (cmd == "P") { std::cout << RG_H_POSTS << " " << rg_h_rounds << "\n"; continue; }
    if (cmd == "D") {
      static rg_${G}_req req;
      in >> payloadHex;
      std::vector<unsigned char> p = unhex(payloadHex);
      if (!rg_${G}_decode(method, p.data(), (unsigned)p.size(), &req)) { std::cout << "REJECT\n"; continue; }
      static unsigned char out[1 << 16];
      rg_wr w = {out, 0u, sizeof(out)};
      if (!rg_${G}_encode_request(method, &req, &w)) { std::cout << "ENCODE_FAIL\n"; continue; }
      std::cout << "OK " << hex(out, w.pos) << "\n";
      continue;
    }
    long long key;
    unsigned budget;
    std::string stateHex;
    if (cmd == "K") {
      /* An activation hook (method: RG_HOOK_*) as the kernel runs it: rc, state, error text, sends. */
      in >> key >> budget >> stateHex;
      std::vector<unsigned char> sb = unhex(stateHex);
      static rg_${G}_state hs;
      if (sb.size() != sizeof(hs)) { std::cout << "BAD_STATE\n"; continue; }
      memcpy(&hs, sb.data(), sizeof(hs));
      rg_turn t;
      memset(&t, 0, sizeof(t));
      t.key = key;
      t.now = 1234.5;
      t.budget = budget;
      t.method = method;
      t.sender = RG_HOST_SENDER;
      t.co = RG_H_CO;
      sent.clear();
      int rc = rg_${G}_hook(&t, &hs, method);
      std::string error = "-";
      if (rc > RG_FORWARDED) {
        static unsigned char out[1 << 16];
        rg_wr w = {out, 0u, sizeof(out)};
        const char* text = rg_turn_error(&t, rc);
        rg_wr_turn_error(&w, RG_TE_HANDLER, text, rg_strlen(text));
        error = hex(out, w.pos);
      }
      std::cout << rc << " " << hex((const unsigned char*)&hs, sizeof(hs)) << " - " << error << " " << sent.size();
      for (auto& s : sent) std::cout << " " << s;
      std::cout << "\n";
      continue;
    }
    in >> key >> budget >> stateHex >> payloadHex;
#if defined(RG_H_LANES)
    jobs.push_back({method, key, budget, stateHex, payloadHex, ""});
    if (jobs.size() == 32u) runRound(jobs);
#else
    std::cout << turnLine(method, key, budget, stateHex, payloadHex, RG_H_CO) << "\n";
#endif
  }
#if defined(RG_H_LANES)
  runRound(jobs);
#endif
  return 0;
}
`;
}

export function toHex(b: Uint8Array): string {
  return b.length ? Buffer.from(b).toString('hex') : '-';
}
export function fromHex(s: string): Uint8Array {
  return s === '-' ? new Uint8Array(0) : new Uint8Array(Buffer.from(s, 'hex'));
}

export interface TurnResult {
  readonly rc: number;
  readonly state: Uint8Array;
  readonly reply: Uint8Array | undefined;
  /** K2K slots: header then payload. */
  readonly sent: readonly Uint8Array[];
  /**
   * A failed turn (rc > 1): the error reply's payload bytes as the kernel writes them, and its text as the host reads
   * it.
   */
  readonly error: { readonly payload: Uint8Array; readonly text: string } | undefined;
}

/**
 * What the host makes of an error reply payload (core reply-error.ts, as the reply pump reads it): the
 * handler's text of a [HANDLER, [text]] payload; anything else is a test failure.
 */
export function hostErrorText(payload: Uint8Array): string {
  const data = decodeTurnError(
    payload,
    new DataView(payload.buffer, payload.byteOffset, payload.byteLength),
    0,
    payload.length,
  );
  if (!data || data.code !== TURN_ERROR.HANDLER || typeof data.fields[0] !== 'string') {
    throw new Error(`not a handler error payload: ${JSON.stringify(data)}`);
  }
  return data.fields[0];
}

/** The error reply payload the CPU backend writes for a handler that threw `message` (SlotWriter.writeError). */
export function cpuErrorPayload(message: string): Uint8Array {
  const slotSize = 1 << 16;
  const ring = Ring.format(new ArrayBuffer(ringBytes(2, slotSize)), 0, 2, slotSize);
  const slot = ring.slotsAt;
  const h = { method: 0, flags: SlotFlag.REPLY | SlotFlag.ERROR, corr: 1, keyLo: 0, keyHi: 0, sender: 0, grain: 0 };
  new SlotWriter().writeError(ring, slot, h, TURN_ERROR.HANDLER, [message]);
  const length = ring.dv.getUint32(slot + SLOT.length, true);
  return ring.u8.slice(slot + SLOT_HEADER_SIZE, slot + SLOT_HEADER_SIZE + length);
}

export class Harness {
  private constructor(private readonly bin: string) {}

  /**
   * `coop`: element-parallel loops run on an emulated warp (RG_HOST_COOP above). `lanes`: turns run 32 at
   * a time, each on a thread of its own with no warp to help, as a worker warp's lane-parallel round runs
   * 32 actors' turns (distinct actors: each turn has its own state); the generated code must hold nothing
   * two turns share.
   */
  static build(grain: string, unit: string, opts: { coop?: boolean; lanes?: boolean } = {}): Harness {
    const coop = opts.coop === true;
    const lanes = opts.lanes === true;
    if (coop && lanes)
      throw new Error('a harness runs turns either on lanes (lanes) or with a warp to help (coop), not both');
    const r = gxxBuild(unit, harnessSource(grain, coop, lanes), ['-pthread'], { stdPch: true });
    if (!r.ok) throw new Error(`harness build failed:\n${r.log}`);
    return new Harness(r.out);
  }

  private run(lines: string[]): string[] {
    const r = spawnSync(this.bin, [], { input: `${lines.join('\n')}\n`, encoding: 'utf8', maxBuffer: 1 << 28 });
    if (r.status !== 0) throw new Error(`harness exited ${r.status}: ${r.stderr}`);
    return r.stdout.trimEnd().split('\n');
  }

  /** Decode then re-encode each payload: undefined where the unit rejected it. */
  decode(items: readonly { method: number; payload: Uint8Array }[]): (Uint8Array | undefined)[] {
    return this.run(items.map((i) => `D ${i.method} ${toHex(i.payload)}`)).map((l) =>
      l.startsWith('OK ') ? fromHex(l.slice(3)) : undefined,
    );
  }

  /**
   * Runs activation hook `which` (HOOK_METHOD id) of the unit, as rg_*_hook does in the kernel (reply: always
   * undefined).
   */
  hooks(items: readonly { which: number; key: number; budget: number; state: Uint8Array }[]): TurnResult[] {
    return this.run(items.map((i) => `K ${i.which} ${i.key} ${i.budget} ${toHex(i.state)}`)).map((l) => {
      const [rc, st, , err, n, ...sent] = l.split(' ');
      if (st === undefined || Number(n) !== sent.length) throw new Error(`bad harness line ${l}`);
      const error =
        err === '-' ? undefined : { payload: fromHex(err as string), text: hostErrorText(fromHex(err as string)) };
      return { rc: Number(rc), state: fromHex(st), reply: undefined, sent: sent.map(fromHex), error };
    });
  }

  /**
   * The turns' results, how many element-parallel loops went to the (emulated) warp (0 without `coop`) and
   * how many rounds of lane-parallel turns ran (0 without `lanes`).
   */
  turnsPosted(
    items: readonly { method: number; key: number; budget: number; state: Uint8Array; payload: Uint8Array }[],
  ): { results: (TurnResult | 'REJECT')[]; posts: number; rounds: number } {
    const lines = this.run([
      ...items.map((i) => `H ${i.method} ${i.key} ${i.budget} ${toHex(i.state)} ${toHex(i.payload)}`),
      'P 0',
    ]);
    const [posts, rounds] = (lines.pop() ?? '').split(' ').map(Number);
    return { results: this.parseTurns(lines), posts: posts!, rounds: rounds! };
  }

  turns(
    items: readonly { method: number; key: number; budget: number; state: Uint8Array; payload: Uint8Array }[],
  ): (TurnResult | 'REJECT')[] {
    return this.parseTurns(
      this.run(items.map((i) => `H ${i.method} ${i.key} ${i.budget} ${toHex(i.state)} ${toHex(i.payload)}`)),
    );
  }

  private parseTurns(lines: string[]): (TurnResult | 'REJECT')[] {
    return lines.map((l) => {
      if (l === 'REJECT') return 'REJECT';
      const [rc, st, rep, err, n, ...sent] = l.split(' ');
      if (Number(n) !== sent.length) throw new Error(`bad harness line ${l}`);
      const error =
        err === '-' ? undefined : { payload: fromHex(err as string), text: hostErrorText(fromHex(err as string)) };
      return {
        rc: Number(rc),
        state: fromHex(st as string),
        reply: rep === '-' && Number(rc) !== 0 ? undefined : fromHex(rep as string),
        sent: sent.map(fromHex),
        error,
      };
    });
  }
}

export const HDR = SLOT_HEADER_SIZE;
