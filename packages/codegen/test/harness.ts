import { spawnSync } from 'node:child_process';
import { Ring, SLOT, SLOT_HEADER_SIZE, SlotFlag, SlotReader, SlotWriter, ringBytes } from '@ringgrain/core';
import { gxxBuild } from './toolchain.ts';

/** A C++ main around a generated unit: the unit's own decode → handle → encode, driven over stdin. */
function harnessSource(grain: string): string {
  const G = grain;
  return String.raw`#define RG_HOST_HARNESS 1
#include "unit.cu"
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

static std::vector<std::string> sent;
static unsigned char k2k[1 << 16];
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

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd, payloadHex;
    unsigned method;
    in >> cmd >> method;
    static rg_${G}_req req;
    if (cmd == "D") {
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
      sent.clear();
      int rc = rg_${G}_hook(&t, &hs, method);
      std::string error = "-";
      if (rc > RG_FORWARDED) {
        static unsigned char out[1 << 16];
        rg_wr w = {out, 0u, sizeof(out)};
        const char* text = rg_turn_error(&t, rc);
        rg_wr_str(&w, text, rg_strlen(text));
        error = hex(out, w.pos);
      }
      std::cout << rc << " " << hex((const unsigned char*)&hs, sizeof(hs)) << " - " << error << " " << sent.size();
      for (auto& s : sent) std::cout << " " << s;
      std::cout << "\n";
      continue;
    }
    in >> key >> budget >> stateHex >> payloadHex;
    std::vector<unsigned char> p = unhex(payloadHex);
    std::vector<unsigned char> sb = unhex(stateHex);
    static rg_${G}_state st;
    if (sb.size() != sizeof(st)) { std::cout << "BAD_STATE\n"; continue; }
    memcpy(&st, sb.data(), sizeof(st));
    /* Poisoned, as the kernel's scratch is never zeroed: a field the decoder or the handler does not
       write would show as 0xA5 bytes and differ from the JS result. */
    memset(&req, 0xA5, sizeof(req));
    if (!rg_${G}_decode(method, p.data(), (unsigned)p.size(), &req)) { std::cout << "REJECT\n"; continue; }
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
    sent.clear();
    static rg_${G}_rep rep;
    memset(&rep, 0xA5, sizeof(rep));
    int rc = rg_${G}_handle(&t, &st, &req, &rep);
    std::string reply = "-", error = "-";
    if (rc == RG_OK) {
      static unsigned char out[1 << 16];
      rg_wr w = {out, 0u, sizeof(out)};
      reply = rg_${G}_encode_reply(method, &rep, &w) ? hex(out, w.pos) : "ENCODE_FAIL";
    } else if (rc > RG_FORWARDED) {
      /* The error reply's payload as the kernel writes it (rg_reply_text): a msgpack str of the turn's error text. */
      static unsigned char out[1 << 16];
      rg_wr w = {out, 0u, sizeof(out)};
      const char* text = rg_turn_error(&t, rc);
      rg_wr_str(&w, text, rg_strlen(text));
      error = hex(out, w.pos);
    }
    std::cout << rc << " " << hex((const unsigned char*)&st, sizeof(st)) << " " << reply << " " << error << " " << sent.size();
    for (auto& s : sent) std::cout << " " << s;
    std::cout << "\n";
  }
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
  /** A failed turn (rc > 1): the error reply's payload bytes as the kernel writes them, and its text as the host reads it. */
  readonly error: { readonly payload: Uint8Array; readonly text: string } | undefined;
}

/** What the host makes of an error reply payload: core's SlotReader.text over a ring slot, as system.onReply reads it. */
export function hostErrorText(payload: Uint8Array): string {
  const slotSize = Math.ceil((SLOT_HEADER_SIZE + payload.length + 16) / 16) * 16;
  const ring = Ring.format(new ArrayBuffer(ringBytes(2, slotSize)), 0, 2, slotSize);
  const slot = ring.slotsAt;
  ring.u8.set(payload, slot + SLOT_HEADER_SIZE);
  ring.dv.setUint32(slot + SLOT.length, payload.length, true);
  return new SlotReader().text(ring, slot);
}

/** The error reply payload the CPU backend writes for a handler that threw `message` (SlotWriter.writeText). */
export function cpuErrorPayload(message: string): Uint8Array {
  const slotSize = 1 << 16;
  const ring = Ring.format(new ArrayBuffer(ringBytes(2, slotSize)), 0, 2, slotSize);
  const slot = ring.slotsAt;
  new SlotWriter().writeText(ring, slot, { method: 0, flags: SlotFlag.REPLY | SlotFlag.ERROR, corr: 1, keyLo: 0, keyHi: 0, sender: 0, grain: 0 }, message);
  const length = ring.dv.getUint32(slot + SLOT.length, true);
  return ring.u8.slice(slot + SLOT_HEADER_SIZE, slot + SLOT_HEADER_SIZE + length);
}

export class Harness {
  private constructor(private readonly bin: string) {}

  static build(grain: string, unit: string): Harness {
    const r = gxxBuild(unit, harnessSource(grain));
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
    return this.run(items.map((i) => `D ${i.method} ${toHex(i.payload)}`)).map((l) => (l.startsWith('OK ') ? fromHex(l.slice(3)) : undefined));
  }

  /** Runs activation hook `which` (HOOK_METHOD id) of the unit, as rg_*_hook does in the kernel (reply: always undefined). */
  hooks(items: readonly { which: number; key: number; budget: number; state: Uint8Array }[]): TurnResult[] {
    return this.run(items.map((i) => `K ${i.which} ${i.key} ${i.budget} ${toHex(i.state)}`)).map((l) => {
      const [rc, st, , err, n, ...sent] = l.split(' ');
      if (st === undefined || Number(n) !== sent.length) throw new Error(`bad harness line ${l}`);
      const error = err === '-' ? undefined : { payload: fromHex(err as string), text: hostErrorText(fromHex(err as string)) };
      return { rc: Number(rc), state: fromHex(st), reply: undefined, sent: sent.map(fromHex), error };
    });
  }

  turns(items: readonly { method: number; key: number; budget: number; state: Uint8Array; payload: Uint8Array }[]): (TurnResult | 'REJECT')[] {
    return this.run(items.map((i) => `H ${i.method} ${i.key} ${i.budget} ${toHex(i.state)} ${toHex(i.payload)}`)).map((l) => {
      if (l === 'REJECT') return 'REJECT';
      const [rc, st, rep, err, n, ...sent] = l.split(' ');
      if (Number(n) !== sent.length) throw new Error(`bad harness line ${l}`);
      const error = err === '-' ? undefined : { payload: fromHex(err as string), text: hostErrorText(fromHex(err as string)) };
      return { rc: Number(rc), state: fromHex(st as string), reply: rep === '-' && Number(rc) !== 0 ? undefined : fromHex(rep as string), sent: sent.map(fromHex), error };
    });
  }
}

export const HDR = SLOT_HEADER_SIZE;
