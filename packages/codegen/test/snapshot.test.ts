import { describe, expect, it } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import { AST_VERSION, generateKernel } from '../src/index.ts';
import { inlineRuntime } from '../src/cuda/runtime.ts';
import { Counter, Relay } from './fixtures/k2k.ts';
import { Stats } from './fixtures/stats.ts';
import { Guard } from './fixtures/throws.ts';
import { CONFORMANCE_GRAINS } from './fixtures/conformance.ts';
import { Beacon } from './fixtures/timers.ts';

/** The translated part of a unit: K2K senders, helpers and handlers (the rest is pinned by the full snapshots). */
function handlers(source: string): string {
  const from = source.indexOf('/* ---- K2K senders');
  const to = source.indexOf('union rg_', from);
  return source.slice(from, to);
}

// Generated units, pinned. A change to the translator shows up line by line; review it, then `vitest -u`.
// One unit as generated (Account, as a .cu file: the grain's own C, with #include lines for the runtime files, which
// are
// reviewed as the C files they are, src/cuda/runtime/); the others pin their translated parts only.
describe('generated units (inline snapshots)', () => {
  it('parses handlers into the versioned tree', () => {
    const k = generateKernel(Account.grain);
    expect([...k.trees.keys()]).toEqual([
      'method:deposit',
      'method:withdraw',
      'method:transfer',
      'method:credit',
      'method:balance',
    ]);
    const deposit = k.trees.get('method:deposit')!;
    expect(deposit.version).toBe(AST_VERSION);
    expect(deposit.body[0]).toEqual({
      kind: 'assign',
      loc: { line: 21, column: 5 },
      op: '+=',
      target: {
        kind: 'member',
        loc: { line: 21, column: 5 },
        object: { kind: 'ident', loc: { line: 21, column: 5 }, name: 's' },
        name: 'balance',
      },
      value: {
        kind: 'member',
        loc: { line: 21, column: 18 },
        object: { kind: 'ident', loc: { line: 21, column: 18 }, name: 'm' },
        name: 'amount',
      },
    });
  });

  it('bank Account: the generated unit, in a file of its own (__snapshots__/Account.cu)', async () => {
    const k = generateKernel(Account.grain);
    await expect(k.grainSource).toMatchFileSnapshot('./__snapshots__/Account.cu');
    // source is grainSource with the runtime files inlined, nothing else.
    expect(k.source).toBe(inlineRuntime(k.grainSource));
    expect(k.source).not.toMatch(/^#include "/m);
    // NVRTC has no __builtin_offsetof: offset asserts go through RG_OFFSET_ASSERT (a no-op there), never bare.
    expect(k.source).not.toMatch(/^\s*static_assert\(__builtin_offsetof/m);
  });

  it('Beacon (timers: ctx.startTimer / stopTimer as writes of the timer row, string keys)', () => {
    expect(handlers(generateKernel(Beacon.grain).source)).toMatchInlineSnapshot(`
      "/* ---- K2K senders ---------------------------------------------------------------------------------- */
      RG_HD static void rg_send_Beacon_bump(rg_turn* t, long long k, const rg_Beacon_bump_req* m, bool forward) {
        rg_wr measure = {0, 0u, 0xffffffffu};
        if (!rg_enc_Beacon_bump_req(m, &measure)) { t->err = RG_E_REPLY_MISMATCH; return; }
        rg_k2k_ticket tk;
        unsigned char* p = rg_k2k_claim(t, 0u, k, measure.pos, &tk);
        if (!p) return;
        rg_wr w = {p, 0u, measure.pos};
        rg_enc_Beacon_bump_req(m, &w);
        rg_k2k_publish(t, &tk, 0u, 2u, k, measure.pos, forward, true);
      }
      /* ---- helpers and handlers ---------------------------------------------------------------------- */
      /* Beacon.onPulse (timers.ts:27) */
      RG_HD static int rg_h_Beacon_onPulse(rg_turn* t, rg_Beacon_state* s, rg_Beacon_onPulse_req* m, unsigned char* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->pulses = rg_tou32(RG_ADD((double)s->pulses, 1.0));
        s->at = t->now;
        if ((fmod((double)s->pulses, 10.0) == 0.0)) {
          {
            rg_Beacon_bump_req _m0;
            rg_zero(&_m0, sizeof(_m0));
            _m0.n = s->pulses;
            if (!t->err) rg_send_Beacon_bump(t, t->key, &_m0, false);
          }
          if (RG_UNLIKELY(t->err)) return t->err;
        }
        return RG_OK;
      }
      /* Beacon.onSlow (timers.ts:32) */
      RG_HD static int rg_h_Beacon_onSlow(rg_turn* t, rg_Beacon_state* s, rg_Beacon_onSlow_req* m, unsigned char* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->slows = rg_tou32(RG_ADD((double)s->slows, 1.0));
        if (((double)s->slows >= 3.0)) {
          rg_tm_stop(t, 1u);
          if (RG_UNLIKELY(t->err)) return t->err;
        }
        return RG_OK;
      }
      /* Beacon.bump (timers.ts:36) */
      RG_HD static int rg_h_Beacon_bump(rg_turn* t, rg_Beacon_state* s, rg_Beacon_bump_req* m, unsigned char* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->at = (double)m->n;
        return RG_OK;
      }
      /* Beacon.arm (timers.ts:39) */
      RG_HD static int rg_h_Beacon_arm(rg_turn* t, rg_Beacon_state* s, rg_Beacon_arm_req* m, unsigned char* r) {
        (void)t; (void)s; (void)m; (void)r;
        rg_tm_start(t, 1u, true, m->periodMs, true, m->dueMs, "Beacon.startTimer(\\"slow\\"): periodMs ", " is not a finite number > 0\\012  hint: periodMs must be a finite number of milliseconds greater than 0", "Beacon.startTimer(\\"slow\\"): dueMs ", " is not a finite number \\342\\211\\245 0\\012  hint: dueMs (the delay of the first tick) must be a finite number of milliseconds \\342\\211\\245 0");
        if (RG_UNLIKELY(t->err)) return t->err;
        return RG_OK;
      }
      /* Beacon.armDeclared (timers.ts:42) */
      RG_HD static int rg_h_Beacon_armDeclared(rg_turn* t, rg_Beacon_state* s, rg_Beacon_armDeclared_req* m, unsigned char* r) {
        (void)t; (void)s; (void)m; (void)r;
        rg_tm_start(t, 1u, false, 0.0, false, 0.0, "Beacon.startTimer(\\"slow\\"): periodMs ", " is not a finite number > 0\\012  hint: periodMs must be a finite number of milliseconds greater than 0", "Beacon.startTimer(\\"slow\\"): dueMs ", " is not a finite number \\342\\211\\245 0\\012  hint: dueMs (the delay of the first tick) must be a finite number of milliseconds \\342\\211\\245 0");
        if (RG_UNLIKELY(t->err)) return t->err;
        return RG_OK;
      }
      /* Beacon.armDue (timers.ts:45) */
      RG_HD static int rg_h_Beacon_armDue(rg_turn* t, rg_Beacon_state* s, rg_Beacon_armDue_req* m, unsigned char* r) {
        (void)t; (void)s; (void)m; (void)r;
        rg_tm_start(t, 1u, false, 0.0, true, m->dueMs, "Beacon.startTimer(\\"slow\\"): periodMs ", " is not a finite number > 0\\012  hint: periodMs must be a finite number of milliseconds greater than 0", "Beacon.startTimer(\\"slow\\"): dueMs ", " is not a finite number \\342\\211\\245 0\\012  hint: dueMs (the delay of the first tick) must be a finite number of milliseconds \\342\\211\\245 0");
        if (RG_UNLIKELY(t->err)) return t->err;
        return RG_OK;
      }
      /* Beacon.disarm (timers.ts:48) */
      RG_HD static int rg_h_Beacon_disarm(rg_turn* t, rg_Beacon_state* s, rg_Beacon_disarm_req* m, unsigned char* r) {
        (void)t; (void)s; (void)m; (void)r;
        rg_tm_stop(t, 0u);
        if (RG_UNLIKELY(t->err)) return t->err;
        rg_tm_stop(t, 1u);
        if (RG_UNLIKELY(t->err)) return t->err;
        return RG_OK;
      }
      "
    `);
  });

  it('Stats (arrays, vecs, nested structs, f32 math, loops, helpers)', () => {
    expect(handlers(generateKernel(Stats.grain).source)).toMatchInlineSnapshot(`
      "/* ---- K2K senders ---------------------------------------------------------------------------------- */
      /* ---- helpers and handlers ---------------------------------------------------------------------- */
      RG_HD static double rg_f_clamp(rg_turn* t, double v_x, double v_lo, double v_hi);
      RG_HD static double rg_f_weighted(rg_turn* t, double v_a, double v_b, double v_w);
      RG_HD static double rg_f_clamp(rg_turn* t, double v_x, double v_lo, double v_hi) {
        (void)t;
        return rg_min(rg_max(v_x, v_lo), v_hi);
        return rg_nan(); /* falling off the end: undefined, NaN in arithmetic */
      }
      RG_HD static double rg_f_weighted(rg_turn* t, double v_a, double v_b, double v_w) {
        (void)t;
        double v_acc = 0.0;
        {
          double v_i = 0.0;
          for (; (v_i < 3.0); v_i = RG_ADD(v_i, 1.0)) {
            if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return 0.0; }
            v_acc = RG_ADD(v_acc, RG_DIV(rg_f_clamp(t, RG_ADD(RG_MUL(v_a, v_w), v_b), (-1000.0), 1000.0), 3.0));
            if (RG_UNLIKELY(t->err)) return 0.0;
          }
        }
        return v_acc;
        return rg_nan(); /* falling off the end: undefined, NaN in arithmetic */
      }
      /* Stats.add (stats.ts:38) */
      RG_HD static int rg_h_Stats_add(rg_turn* t, rg_Stats_state* s, rg_Stats_add_req* m, rg_Stats_add_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        double v_total = 0.0;
        {
          double v_i = 0.0;
          for (; (v_i < (double)m->xs.length); v_i = RG_ADD(v_i, 1.0)) {
            if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
            const float v_x = m->xs.items[rg_idx(t, v_i, m->xs.length)];
            if (RG_UNLIKELY(t->err)) return t->err;
            v_total = RG_ADD(v_total, (double)v_x);
            const double v_bucket = rg_min(7.0, rg_max(0.0, (double)(rg_toi32(floor((double)v_x)) | 0)));
            {
              unsigned int* _p0 = &s->hist[rg_idx(t, v_bucket, 8)];
              const unsigned int _v1 = rg_tou32(RG_ADD((double)s->hist[rg_idx(t, v_bucket, 8)], 1.0));
              if (!t->err) *_p0 = _v1;
            }
            if (RG_UNLIKELY(t->err)) return t->err;
            if (((double)s->samples.length < 16.0)) {
              {
                float* _p2 = &s->samples.items[rg_idxu(t, s->samples.length, 16)];
                const float _v3 = (float)(RG_MUL((double)v_x, 0.5));
                if (!t->err) *_p2 = _v3;
              }
              if (RG_UNLIKELY(t->err)) return t->err;
              s->samples.length = rg_tou32(RG_ADD((double)s->samples.length, 1.0));
            }
          }
        }
        s->sum = RG_ADD(s->sum, v_total);
        s->count = rg_tou32(RG_ADD((double)s->count, (double)m->xs.length));
        const double v_mean = (((double)s->count == 0.0) ? 0.0 : RG_DIV(s->sum, (double)s->count));
        r->sum = s->sum;
        r->n = s->count;
        r->mean = (float)v_mean;
        return RG_OK;
      }
      /* Stats.move (stats.ts:56) */
      RG_HD static int rg_h_Stats_move(rg_turn* t, rg_Stats_state* s, rg_Stats_move_req* m, rg_Stats_move_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        double v_k = 0.0;
        while (((v_k < (double)m->steps) && (v_k < 64.0))) {
          if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
          s->pos.x = (float)(RG_ADD((double)s->pos.x, (double)m->dx));
          s->pos.y = (float)(RG_ADD((double)s->pos.y, RG_MUL((double)m->dy, 0.25)));
          v_k = RG_ADD(v_k, 1.0);
        }
        const double v_d = RG_SUB(RG_ADD(sqrt(RG_ADD(RG_MUL((double)s->pos.x, (double)s->pos.x), RG_MUL((double)s->pos.y, (double)s->pos.y))), RG_MUL(hypot((double)m->dx, (double)m->dy), cos((double)m->dx))), atan2((double)m->dy, (double)m->dx));
        r->x = s->pos.x;
        r->y = (float)(rg_fround(RG_MUL((double)s->pos.y, 2.0)));
        r->d = v_d;
        return RG_OK;
      }
      /* Stats.mix (stats.ts:67) */
      RG_HD static int rg_h_Stats_mix(rg_turn* t, rg_Stats_state* s, rg_Stats_mix_req* m, rg_Stats_mix_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        const double v_q = trunc(RG_DIV((double)m->a, 7.0));
        const int v_r = (rg_toi32(fmod((double)m->a, 5.0)) | 0);
        double v_bits = (double)((int)((unsigned int)m->a << (3u & 31u)) ^ (int)(m->b >> (2u & 31u)));
        v_bits = (double)(rg_toi32(v_bits) & 65535);
        const int v_idx = (rg_toi32(fmod((double)m->b, 4.0)) | 0);
        {
          int* _p0 = &s->grid[rg_idxi(t, v_idx, 4)].v;
          const int _v1 = (rg_toi32(RG_MUL((double)m->a, 3.0)) | 0);
          if (!t->err) *_p0 = _v1;
        }
        if (RG_UNLIKELY(t->err)) return t->err;
        {
          float* _p2 = &s->grid[rg_idx(t, fmod(RG_ADD((double)m->b, 1.0), 4.0), 4)].w;
          const float _v3 = (float)m->c;
          if (!t->err) *_p2 = _v3;
        }
        if (RG_UNLIKELY(t->err)) return t->err;
        double v_x = RG_ADD(RG_ADD(RG_SUB(RG_ADD(RG_ADD(rg_round(m->c), rg_pow(2.0, fmod((double)m->a, 8.0))), fabs(m->c)), floor(RG_DIV(m->c, 3.0))), ceil(m->c)), rg_f_weighted(t, m->c, 1.0, 0.5));
        if (RG_UNLIKELY(t->err)) return t->err;
        if ((m->flags[0] && !(m->flags[1]))) {
          v_x = (-v_x);
        } else {
          if ((m->flags[2] || (m->a > 100))) {
            v_x = RG_ADD(RG_ADD(RG_ADD(RG_ADD(RG_MUL(v_x, 2.0), (double)rg_imul(m->a, 3)), rg_sign(m->c)), exp(RG_DIV(m->c, 1000.0))), log(RG_ADD(fabs(m->c), 1.0)));
          }
        }
        {
          bool rg_mis = false;
          r->q = rg_chk_i32(&rg_mis, v_q);
          r->r = v_r;
          r->s = (rg_tou32(v_bits) >> (0u & 31u));
          r->x = v_x;
          r->u = ((m->a >= 0) == m->flags[0]);
          rg_copy_t(t, &r->w, &m->m, sizeof(r->w));
          r->g.v = s->grid[rg_idxi(t, v_idx, 4)].v;
          r->g.w = s->grid[rg_idxi(t, v_idx, 4)].w;
          if (rg_mis && !t->err) t->err = RG_E_REPLY_MISMATCH;
          if (RG_UNLIKELY(t->err)) return t->err;
          return RG_OK;
        }
      }
      /* Stats.spin (stats.ts:92) */
      RG_HD static int rg_h_Stats_spin(rg_turn* t, rg_Stats_state* s, rg_Stats_spin_req* m, rg_Stats_spin_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        double v_k = 0.0;
        while ((v_k < (double)m->n)) {
          if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
          v_k = RG_ADD(v_k, 1.0);
        }
        s->count = rg_tou32(RG_ADD((double)s->count, 1.0));
        {
          bool rg_mis = false;
          r->k = rg_chk_i32(&rg_mis, v_k);
          if (rg_mis && !t->err) t->err = RG_E_REPLY_MISMATCH;
          if (RG_UNLIKELY(t->err)) return t->err;
          return RG_OK;
        }
      }
      /* Stats.at (stats.ts:99) */
      RG_HD static int rg_h_Stats_at(rg_turn* t, rg_Stats_state* s, rg_Stats_at_req* m, rg_Stats_at_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        r->v = s->hist[rg_idxi(t, m->i, 8)];
        if (RG_UNLIKELY(t->err)) return t->err;
        return RG_OK;
      }
      "
    `);
  });

  it('Relay (K2K send/forward to another class and to itself)', () => {
    expect(
      handlers(generateKernel(Relay.grain, { grains: [Counter.grain, Relay.grain] }).source),
    ).toMatchInlineSnapshot(`
      "/* ---- K2K senders ---------------------------------------------------------------------------------- */
      RG_HD static void rg_send_Counter_add(rg_turn* t, double key, const rg_Counter_add_req* m, bool forward) {
        long long k;
        if (!rg_key_of(key, &k)) { t->err = RG_E_INVALID_KEY; return; }
        rg_wr measure = {0, 0u, 0xffffffffu};
        if (!rg_enc_Counter_add_req(m, &measure)) { t->err = RG_E_REPLY_MISMATCH; return; }
        rg_k2k_ticket tk;
        unsigned char* p = rg_k2k_claim(t, 0u, k, measure.pos, &tk);
        if (!p) return;
        rg_wr w = {p, 0u, measure.pos};
        rg_enc_Counter_add_req(m, &w);
        rg_k2k_publish(t, &tk, 0u, 0u, k, measure.pos, forward, false);
      }
      RG_HD static void rg_send_Counter_bump(rg_turn* t, double key, const rg_Counter_bump_req* m, bool forward) {
        long long k;
        if (!rg_key_of(key, &k)) { t->err = RG_E_INVALID_KEY; return; }
        rg_wr measure = {0, 0u, 0xffffffffu};
        if (!rg_enc_Counter_bump_req(m, &measure)) { t->err = RG_E_REPLY_MISMATCH; return; }
        rg_k2k_ticket tk;
        unsigned char* p = rg_k2k_claim(t, 0u, k, measure.pos, &tk);
        if (!p) return;
        rg_wr w = {p, 0u, measure.pos};
        rg_enc_Counter_bump_req(m, &w);
        rg_k2k_publish(t, &tk, 0u, 1u, k, measure.pos, forward, false);
      }
      RG_HD static void rg_send_Relay_fanout(rg_turn* t, double key, const rg_Relay_fanout_req* m, bool forward) {
        long long k;
        if (!rg_key_of(key, &k)) { t->err = RG_E_INVALID_KEY; return; }
        rg_wr measure = {0, 0u, 0xffffffffu};
        if (!rg_enc_Relay_fanout_req(m, &measure)) { t->err = RG_E_REPLY_MISMATCH; return; }
        rg_k2k_ticket tk;
        unsigned char* p = rg_k2k_claim(t, 1u, k, measure.pos, &tk);
        if (!p) return;
        rg_wr w = {p, 0u, measure.pos};
        rg_enc_Relay_fanout_req(m, &w);
        rg_k2k_publish(t, &tk, 1u, 1u, k, measure.pos, forward, false);
      }
      /* ---- helpers and handlers ---------------------------------------------------------------------- */
      /* Relay.route (k2k.ts:37) */
      RG_HD static int rg_h_Relay_route(rg_turn* t, rg_Relay_state* s, rg_Relay_route_req* m, rg_Relay_route_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->sent = rg_tou32(RG_ADD((double)s->sent, 1.0));
        {
          rg_Counter_add_req _m0;
          rg_zero(&_m0, sizeof(_m0));
          _m0.amount = RG_MUL(m->amount, 2.0);
          if (!t->err) rg_send_Counter_add(t, (double)m->to, &_m0, true);
        }
        if (RG_UNLIKELY(t->err)) return t->err;
        return RG_FORWARDED;
      }
      /* Relay.fanout (k2k.ts:42) */
      RG_HD static int rg_h_Relay_fanout(rg_turn* t, rg_Relay_state* s, rg_Relay_fanout_req* m, unsigned char* r) {
        (void)t; (void)s; (void)m; (void)r;
        {
          double v_i = 0.0;
          for (; ((v_i < (double)m->n) && (v_i < 8.0)); v_i = RG_ADD(v_i, 1.0)) {
            if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
            {
              rg_Counter_bump_req _m0;
              rg_zero(&_m0, sizeof(_m0));
              bool rg_mis = false;
              _m0.by = rg_chk_i32(&rg_mis, v_i);
              rg_copy(&_m0.tags, &m->tags, rg_minu((unsigned int)sizeof(_m0.tags), (unsigned int)((const unsigned char*)&(m->tags).items[(m->tags).length] - (const unsigned char*)&(m->tags))));
              if (rg_mis && !t->err) {
                long long rg_k;
                t->err = rg_key_of(RG_ADD((double)t->key, v_i), &rg_k) ? RG_E_REPLY_MISMATCH : RG_E_INVALID_KEY;
              }
              if (!t->err) rg_send_Counter_bump(t, RG_ADD((double)t->key, v_i), &_m0, false);
            }
            if (RG_UNLIKELY(t->err)) return t->err;
            s->sent = rg_tou32(RG_ADD((double)s->sent, 1.0));
          }
        }
        if ((m->n > 100)) {
          {
            rg_Relay_fanout_req _m1;
            rg_zero(&_m1, sizeof(_m1));
            _m1.n = 0;
            rg_copy(&_m1.tags, &m->tags, rg_minu((unsigned int)sizeof(_m1.tags), (unsigned int)((const unsigned char*)&(m->tags).items[(m->tags).length] - (const unsigned char*)&(m->tags))));
            if (!t->err) rg_send_Relay_fanout(t, (double)t->key, &_m1, false);
          }
          if (RG_UNLIKELY(t->err)) return t->err;
        }
        return RG_OK;
      }
      "
    `);
  });

  it('Counter (K2K target with a vec payload)', () => {
    expect(
      handlers(generateKernel(Counter.grain, { grains: [Counter.grain, Relay.grain] }).source),
    ).toMatchInlineSnapshot(`
      "/* ---- K2K senders ---------------------------------------------------------------------------------- */
      /* ---- helpers and handlers ---------------------------------------------------------------------- */
      /* Counter.add (k2k.ts:15) */
      RG_HD static int rg_h_Counter_add(rg_turn* t, rg_Counter_state* s, rg_Counter_add_req* m, rg_Counter_add_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->total = RG_ADD(s->total, m->amount);
        s->hits = rg_tou32(RG_ADD((double)s->hits, 1.0));
        r->total = s->total;
        r->hits = s->hits;
        return RG_OK;
      }
      /* Counter.bump (k2k.ts:21) */
      RG_HD static int rg_h_Counter_bump(rg_turn* t, rg_Counter_state* s, rg_Counter_bump_req* m, unsigned char* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->hits = rg_tou32(RG_ADD((double)s->hits, RG_ADD((double)m->by, (double)m->tags.length)));
        return RG_OK;
      }
      "
    `);
  });

  it('Guard (throw new Error(constant) in handlers and helpers, array literals in replies and K2K payloads)', () => {
    expect(handlers(generateKernel(Guard.grain).source)).toMatchInlineSnapshot(`
      "/* ---- K2K senders ---------------------------------------------------------------------------------- */
      RG_HD static void rg_send_Guard_pack(rg_turn* t, double key, const rg_Guard_pack_req* m, bool forward) {
        long long k;
        if (!rg_key_of(key, &k)) { t->err = RG_E_INVALID_KEY; return; }
        rg_wr measure = {0, 0u, 0xffffffffu};
        if (!rg_enc_Guard_pack_req(m, &measure)) { t->err = RG_E_REPLY_MISMATCH; return; }
        rg_k2k_ticket tk;
        unsigned char* p = rg_k2k_claim(t, 0u, k, measure.pos, &tk);
        if (!p) return;
        rg_wr w = {p, 0u, measure.pos};
        rg_enc_Guard_pack_req(m, &w);
        rg_k2k_publish(t, &tk, 0u, 3u, k, measure.pos, forward, false);
      }
      /* ---- helpers and handlers ---------------------------------------------------------------------- */
      RG_HD static double rg_f_root(rg_turn* t, double v_x);
      RG_HD static void rg_f_guard(rg_turn* t, bool v_ok);
      RG_HD static double rg_f_root(rg_turn* t, double v_x) {
        (void)t;
        if ((v_x < 0.0)) {
          if (!t->err) {
            t->msg = "root: \\"x\\" must be >= 0 \\\\ \\320\\272\\320\\273\\321\\216\\321\\207-\\360\\237\\224\\221\\?";
            t->err = RG_E_THROW;
          }
          return 0.0;
        }
        return sqrt(v_x);
        return rg_nan(); /* falling off the end: undefined, NaN in arithmetic */
      }
      RG_HD static void rg_f_guard(rg_turn* t, bool v_ok) {
        (void)t;
        if (!v_ok) {
          if (!t->err) {
            t->msg = "guard failed";
            t->err = RG_E_THROW;
          }
          return;
        }
      }
      /* Guard.root (throws.ts:41) */
      RG_HD static int rg_h_Guard_root(rg_turn* t, rg_Guard_state* s, rg_Guard_root_req* m, rg_Guard_root_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->n = rg_tou32(RG_ADD((double)s->n, 1.0));
        s->last = m->x;
        const double v_r = rg_f_root(t, m->x);
        if (RG_UNLIKELY(t->err)) return t->err;
        r->r = v_r;
        r->n = s->n;
        return RG_OK;
      }
      /* Guard.check (throws.ts:49) */
      RG_HD static int rg_h_Guard_check(rg_turn* t, rg_Guard_state* s, rg_Guard_check_req* m, unsigned char* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->n = rg_tou32(RG_ADD((double)s->n, 1.0));
        rg_f_guard(t, m->ok);
        if (RG_UNLIKELY(t->err)) return t->err;
        {
          double v_i = 0.0;
          for (; (v_i < 3.0); v_i = RG_ADD(v_i, 1.0)) {
            if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
            s->n = rg_tou32(RG_ADD((double)s->n, 1.0));
            if (((v_i == 2.0) && (m->code < (-100)))) {
              t->msg = "code below -100";
              t->err = RG_E_THROW;
              return t->err;
            }
          }
        }
        s->last = (double)m->code;
        return RG_OK;
      }
      /* Guard.never (throws.ts:59) */
      RG_HD static int rg_h_Guard_never(rg_turn* t, rg_Guard_state* s, rg_Guard_never_req* m, rg_Guard_never_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->n = rg_tou32(RG_ADD((double)s->n, 1.0));
        t->msg = "never replies";
        t->err = RG_E_THROW;
        return t->err;
      }
      /* Guard.pack (throws.ts:64) */
      RG_HD static int rg_h_Guard_pack(rg_turn* t, rg_Guard_state* s, rg_Guard_pack_req* m, rg_Guard_pack_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        {
          bool rg_mis = false;
          r->ints[0] = m->b;
          r->ints[1] = rg_chk_i32(&rg_mis, RG_MUL((double)m->b, 2.0));
          r->ints[2] = (rg_toi32(m->a) | 0);
          r->f32s[0] = (float)m->a;
          r->f32s[1] = (float)(RG_DIV(m->a, 3.0));
          r->f64s.items[0] = m->a;
          r->f64s.items[1] = RG_MUL(m->a, (double)m->b);
          r->f64s.length = 2u;
          r->flags[0] = m->c;
          r->flags[1] = !m->c;
          r->pts[0].x = (float)m->a;
          r->pts[0].y = (double)m->b;
          r->pts[1].x = (float)((double)m->b);
          r->pts[1].y = m->a;
          r->grid[0][0] = m->xs.length;
          r->grid[0][1] = 1u;
          r->grid[1][0] = 2u;
          r->grid[1][1] = ((unsigned int)m->b >> (0u & 31u));
          rg_copy_t(t, &r->copy, &m->xs, rg_minu((unsigned int)sizeof(r->copy), (unsigned int)((const unsigned char*)&(m->xs).items[(m->xs).length] - (const unsigned char*)&(m->xs))));
          r->empty.length = 0u;
          if (rg_mis && !t->err) t->err = RG_E_REPLY_MISMATCH;
          if (RG_UNLIKELY(t->err)) return t->err;
          return RG_OK;
        }
      }
      /* Guard.relay (throws.ts:77) */
      RG_HD static int rg_h_Guard_relay(rg_turn* t, rg_Guard_state* s, rg_Guard_relay_req* m, unsigned char* r) {
        (void)t; (void)s; (void)m; (void)r;
        {
          rg_Guard_pack_req _m0;
          rg_zero(&_m0, sizeof(_m0));
          _m0.a = m->a;
          _m0.b = m->b;
          _m0.c = (m->b > 0);
          _m0.xs.items[0] = 1u;
          _m0.xs.items[1] = ((unsigned int)m->b >> (0u & 31u));
          _m0.xs.items[2] = 3u;
          _m0.xs.length = 3u;
          if (!t->err) rg_send_Guard_pack(t, RG_ADD((double)t->key, 1.0), &_m0, false);
        }
        if (RG_UNLIKELY(t->err)) return t->err;
        if ((m->b < 0)) {
          t->msg = "relay: negative b (the send above still went out)";
          t->err = RG_E_THROW;
          return t->err;
        }
        return RG_OK;
      }
      /* Guard.nudge (throws.ts:82) */
      RG_HD static int rg_h_Guard_nudge(rg_turn* t, rg_Guard_state* s, rg_Guard_nudge_req* m, rg_Guard_nudge_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        rg_Guard_state_pts* const v_p = &(s->pts[rg_idxi(t, m->k, 2)]);
        if (RG_UNLIKELY(t->err)) return t->err;
        v_p->x = (float)m->d;
        {
          const double _v0 = m->ys[rg_idxi(t, m->j, 2)];
          if (!t->err) v_p->y = _v0;
        }
        if (RG_UNLIKELY(t->err)) return t->err;
        r->x = v_p->x;
        r->y = s->pts[rg_idxi(t, m->k, 2)].y;
        if (RG_UNLIKELY(t->err)) return t->err;
        return RG_OK;
      }
      "
    `);
  });

  it('conformance fixture grains (test/fixtures/grains.ts): senders, helpers and handlers of every grain', () => {
    const grains = CONFORMANCE_GRAINS.map((c) => c.grain);
    const out = grains.map((g) => handlers(generateKernel(g, { grains }).source)).join('\n');
    expect(out).toMatchInlineSnapshot(`
      "/* ---- K2K senders ---------------------------------------------------------------------------------- */
      /* ---- helpers and handlers ---------------------------------------------------------------------- */
      struct rg_env_Numbers_arrays_0 {
        rg_Numbers_state* s;
        rg_Numbers_arrays_req* m;
      };
      /* Numbers.arrays: the body of the loop at line 57, one iteration (element-parallel) */
      RG_HD static void rg_lp_Numbers_arrays_0(rg_turn* t, const rg_env_Numbers_arrays_0* e, rg_Numbers_state* s, rg_Numbers_arrays_req* m, double* red, double v_i, unsigned int u_i) {
        (void)t; (void)e; (void)s; (void)m;
        (void)red; (void)v_i; (void)u_i;
        red[0] = RG_ADD(red[0], (double)m->ints[u_i]);
      }
      #if defined(__CUDACC__) || defined(RG_HOST_COOP)
      static_assert(sizeof(rg_env_Numbers_arrays_0) <= RG_COOP_ENV_BYTES, "element-parallel loop: captured values fit rg_coop.env (parallel.ts checks)");
      __device__ static void rg_run_Numbers_arrays_0(rg_coop* co, unsigned int lane) {
        rg_turn lt = co->turn;
        const rg_env_Numbers_arrays_0* e_ = (const rg_env_Numbers_arrays_0*)co->env;
        const unsigned int n_ = co->n;
        const double lo_ = co->lo;
        const unsigned int ulo = lo_ >= 0.0 ? (unsigned int)lo_ : 0u;
        double red[1] = {-0.0};
        unsigned int k = lane;
        for (; k + 96u < n_; k += 128u) {
          rg_lp_Numbers_arrays_0(&lt, e_, e_->s, e_->m, red, lo_ + (double)(k), ulo + k);
          rg_lp_Numbers_arrays_0(&lt, e_, e_->s, e_->m, red, lo_ + (double)((k + 32u)), ulo + (k + 32u));
          rg_lp_Numbers_arrays_0(&lt, e_, e_->s, e_->m, red, lo_ + (double)((k + 64u)), ulo + (k + 64u));
          rg_lp_Numbers_arrays_0(&lt, e_, e_->s, e_->m, red, lo_ + (double)((k + 96u)), ulo + (k + 96u));
        }
        for (; k < n_; k += 32u) rg_lp_Numbers_arrays_0(&lt, e_, e_->s, e_->m, red, lo_ + (double)(k), ulo + k);
        if (lane == 0u) { co->failAt = 0xffffffffu; co->iters = n_; }
        for (unsigned int o = 16u; o != 0u; o >>= 1) red[0] = RG_ADD(red[0], __shfl_xor_sync(0xffffffffu, red[0], o));
        if (lane == 0u) co->red[0] = red[0];
      }
      #endif
      struct rg_env_Numbers_arrays_1 {
        rg_Numbers_state* s;
        rg_Numbers_arrays_req* m;
      };
      /* Numbers.arrays: the body of the loop at line 59, one iteration (element-parallel) */
      RG_HD static void rg_lp_Numbers_arrays_1(rg_turn* t, const rg_env_Numbers_arrays_1* e, rg_Numbers_state* s, rg_Numbers_arrays_req* m, double* red, double v_i, unsigned int u_i) {
        (void)t; (void)e; (void)s; (void)m;
        (void)red; (void)v_i; (void)u_i;
        red[0] = RG_ADD(red[0], (double)m->bounded.items[u_i]);
      }
      #if defined(__CUDACC__) || defined(RG_HOST_COOP)
      static_assert(sizeof(rg_env_Numbers_arrays_1) <= RG_COOP_ENV_BYTES, "element-parallel loop: captured values fit rg_coop.env (parallel.ts checks)");
      __device__ static void rg_run_Numbers_arrays_1(rg_coop* co, unsigned int lane) {
        rg_turn lt = co->turn;
        const rg_env_Numbers_arrays_1* e_ = (const rg_env_Numbers_arrays_1*)co->env;
        const unsigned int n_ = co->n;
        const double lo_ = co->lo;
        const unsigned int ulo = lo_ >= 0.0 ? (unsigned int)lo_ : 0u;
        double red[1] = {-0.0};
        unsigned int k = lane;
        for (; k + 96u < n_; k += 128u) {
          rg_lp_Numbers_arrays_1(&lt, e_, e_->s, e_->m, red, lo_ + (double)(k), ulo + k);
          rg_lp_Numbers_arrays_1(&lt, e_, e_->s, e_->m, red, lo_ + (double)((k + 32u)), ulo + (k + 32u));
          rg_lp_Numbers_arrays_1(&lt, e_, e_->s, e_->m, red, lo_ + (double)((k + 64u)), ulo + (k + 64u));
          rg_lp_Numbers_arrays_1(&lt, e_, e_->s, e_->m, red, lo_ + (double)((k + 96u)), ulo + (k + 96u));
        }
        for (; k < n_; k += 32u) rg_lp_Numbers_arrays_1(&lt, e_, e_->s, e_->m, red, lo_ + (double)(k), ulo + k);
        if (lane == 0u) { co->failAt = 0xffffffffu; co->iters = n_; }
        for (unsigned int o = 16u; o != 0u; o >>= 1) red[0] = RG_ADD(red[0], __shfl_xor_sync(0xffffffffu, red[0], o));
        if (lane == 0u) co->red[0] = red[0];
      }
      #endif
      /* Numbers.echo (grains.ts:37) */
      RG_HD static int rg_h_Numbers_echo(rg_turn* t, rg_Numbers_state* s, rg_Numbers_echo_req* m, rg_Numbers_echo_req* r) {
        (void)t; (void)s; (void)m; (void)r;
        r->f32 = m->f32;
        r->f64 = m->f64;
        r->i32 = m->i32;
        r->u32 = m->u32;
        r->b = m->b;
        return RG_OK;
      }
      /* Numbers.store (grains.ts:41) */
      RG_HD static int rg_h_Numbers_store(rg_turn* t, rg_Numbers_state* s, rg_Numbers_echo_req* m, rg_Numbers_store_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->f32 = m->f32;
        s->f64 = m->f64;
        s->i32 = m->i32;
        s->u32 = m->u32;
        s->b = m->b;
        s->count = rg_tou32(RG_ADD((double)s->count, 1.0));
        r->count = s->count;
        return RG_OK;
      }
      /* Numbers.load (grains.ts:51) */
      RG_HD static int rg_h_Numbers_load(rg_turn* t, rg_Numbers_state* s, rg_Numbers_load_req* m, rg_Numbers_load_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        r->f32 = s->f32;
        r->f64 = s->f64;
        r->i32 = s->i32;
        r->u32 = s->u32;
        r->b = s->b;
        r->count = s->count;
        r->total = s->total;
        return RG_OK;
      }
      /* Numbers.arrays (grains.ts:55) */
      RG_HD static int rg_h_Numbers_arrays(rg_turn* t, rg_Numbers_state* s, rg_Numbers_arrays_req* m, rg_Numbers_arrays_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        double v_intSum = 0.0;
        {
          const double _lo0 = 0.0;
          const double _hi1 = 3.0;
          (void)_lo0; (void)_hi1;
          #if defined(__CUDA_ARCH__) || defined(RG_HOST_COOP)
          if (t->co && _lo0 == trunc(_lo0) && _lo0 >= -2147483648.0 && _hi1 <= 2147483648.0 && _hi1 - _lo0 >= (double)RG_COOP_MIN_ITERS && ceil(_hi1 - _lo0) <= (double)(t->budget - t->iters) && _lo0 >= 0.0 && _hi1 <= (double)(3) && v_intSum == trunc(v_intSum) && fabs(v_intSum) <= 4503599627370496.0 && _hi1 - _lo0 <= 1048576.0) {
            rg_env_Numbers_arrays_0* _e2 = (rg_env_Numbers_arrays_0*)t->co->env;
            _e2->s = s;
            _e2->m = m;
            rg_coop_loop(t, 0u, _lo0, (unsigned int)ceil(_hi1 - _lo0));
            if (RG_UNLIKELY(t->err)) return t->err;
            v_intSum = RG_ADD(v_intSum, t->co->red[0]);
          } else
          #endif
          {
            {
              double v_i = 0.0;
              for (; (v_i < 3.0); v_i = RG_ADD(v_i, 1.0)) {
                if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
                v_intSum = RG_ADD(v_intSum, (double)m->ints[rg_idx(t, v_i, 3)]);
                if (RG_UNLIKELY(t->err)) return t->err;
              }
            }
          }
        }
        double v_boundedSum = 0.0;
        {
          const double _lo3 = 0.0;
          const double _hi4 = (double)m->bounded.length;
          (void)_lo3; (void)_hi4;
          #if defined(__CUDA_ARCH__) || defined(RG_HOST_COOP)
          if (t->co && _lo3 == trunc(_lo3) && _lo3 >= -2147483648.0 && _hi4 <= 2147483648.0 && _hi4 - _lo3 >= (double)RG_COOP_MIN_ITERS && ceil(_hi4 - _lo3) <= (double)(t->budget - t->iters) && _lo3 >= 0.0 && _hi4 <= (double)(m->bounded.length) && v_boundedSum == trunc(v_boundedSum) && fabs(v_boundedSum) <= 4503599627370496.0 && _hi4 - _lo3 <= 1048576.0) {
            rg_env_Numbers_arrays_1* _e5 = (rg_env_Numbers_arrays_1*)t->co->env;
            _e5->s = s;
            _e5->m = m;
            rg_coop_loop(t, 1u, _lo3, (unsigned int)ceil(_hi4 - _lo3));
            if (RG_UNLIKELY(t->err)) return t->err;
            v_boundedSum = RG_ADD(v_boundedSum, t->co->red[0]);
          } else
          #endif
          {
            {
              double v_i = 0.0;
              for (; (v_i < (double)m->bounded.length); v_i = RG_ADD(v_i, 1.0)) {
                if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
                v_boundedSum = RG_ADD(v_boundedSum, (double)m->bounded.items[rg_idx(t, v_i, m->bounded.length)]);
                if (RG_UNLIKELY(t->err)) return t->err;
              }
            }
          }
        }
        {
          bool rg_mis = false;
          r->doubled[0] = (float)(RG_MUL((double)m->fixed[0], 2.0));
          r->doubled[1] = (float)(RG_MUL((double)m->fixed[1], 2.0));
          r->doubled[2] = (float)(RG_MUL((double)m->fixed[2], 2.0));
          r->doubled[3] = (float)(RG_MUL((double)m->fixed[3], 2.0));
          r->intSum = rg_chk_i32(&rg_mis, v_intSum);
          r->n = m->bounded.length;
          r->boundedSum = v_boundedSum;
          rg_copy_t(t, &r->bounded, &m->bounded, rg_minu((unsigned int)sizeof(r->bounded), (unsigned int)((const unsigned char*)&(m->bounded).items[(m->bounded).length] - (const unsigned char*)&(m->bounded))));
          r->flags[0] = !(m->flags[0]);
          r->flags[1] = !(m->flags[1]);
          rg_copy_t(t, &r->f64s, &m->f64s, rg_minu((unsigned int)sizeof(r->f64s), (unsigned int)((const unsigned char*)&(m->f64s).items[(m->f64s).length] - (const unsigned char*)&(m->f64s))));
          if (rg_mis && !t->err) t->err = RG_E_REPLY_MISMATCH;
          if (RG_UNLIKELY(t->err)) return t->err;
          return RG_OK;
        }
      }
      /* Numbers.nested (grains.ts:71) */
      RG_HD static int rg_h_Numbers_nested(rg_turn* t, rg_Numbers_state* s, rg_Numbers_nested_req* m, rg_Numbers_nested_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        double v_x = 0.0;
        double v_y = 0.0;
        double v_inside = 0.0;
        const unsigned int v_n = m->pts.length;
        {
          double v_i = 0.0;
          for (; (v_i < (double)v_n); v_i = RG_ADD(v_i, 1.0)) {
            if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
            rg_Numbers_nested_req_pts_items* const v_p = &(m->pts.items[rg_idx(t, v_i, m->pts.length)]);
            if (RG_UNLIKELY(t->err)) return t->err;
            v_x = RG_ADD(v_x, (double)v_p->x);
            v_y = RG_ADD(v_y, (double)v_p->y);
            if ((((((double)v_p->x >= m->box.lo.x) && ((double)v_p->x <= m->box.hi.x)) && ((double)v_p->y >= m->box.lo.y)) && ((double)v_p->y <= m->box.hi.y))) {
              v_inside = RG_ADD(v_inside, 1.0);
            }
          }
        }
        if (((double)v_n > 0.0)) {
          v_x = RG_DIV(v_x, (double)v_n);
          v_y = RG_DIV(v_y, (double)v_n);
        }
        {
          bool rg_mis = false;
          r->centroid.x = RG_SUB(v_x, m->origin.x);
          r->centroid.y = RG_SUB(v_y, m->origin.y);
          r->n = v_n;
          r->inside = rg_chk_u32(&rg_mis, v_inside);
          if (rg_mis && !t->err) t->err = RG_E_REPLY_MISMATCH;
          if (RG_UNLIKELY(t->err)) return t->err;
          return RG_OK;
        }
      }
      /* Numbers.bulk (grains.ts:89) */
      RG_HD static int rg_h_Numbers_bulk(rg_turn* t, rg_Numbers_state* s, rg_Numbers_bulk_req* m, rg_Numbers_bulk_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        double v_sum = 0.0;
        {
          double v_i = 0.0;
          for (; (v_i < (double)m->xs.length); v_i = RG_ADD(v_i, 1.0)) {
            if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
            v_sum = RG_ADD(v_sum, m->xs.items[rg_idx(t, v_i, m->xs.length)]);
            if (RG_UNLIKELY(t->err)) return t->err;
          }
        }
        r->n = m->xs.length;
        r->sum = v_sum;
        return RG_OK;
      }
      /* Numbers.fail (grains.ts:95) */
      RG_HD static int rg_h_Numbers_fail(rg_turn* t, rg_Numbers_state* s, rg_Numbers_fail_req* m, rg_Numbers_fail_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        if ((m->code != 0)) {
          t->msg = "refused: code must be zero";
          t->err = RG_E_THROW;
          return t->err;
        }
        s->count = rg_tou32(RG_ADD((double)s->count, 1.0));
        r->ok = true;
        return RG_OK;
      }
      /* Numbers.failTell (grains.ts:101) */
      RG_HD static int rg_h_Numbers_failTell(rg_turn* t, rg_Numbers_state* s, rg_Numbers_failTell_req* m, unsigned char* r) {
        (void)t; (void)s; (void)m; (void)r;
        if ((m->code != 0)) {
          t->msg = "tell refused";
          t->err = RG_E_THROW;
          return t->err;
        }
        return RG_OK;
      }
      /* Numbers.now (grains.ts:105) */
      RG_HD static int rg_h_Numbers_now(rg_turn* t, rg_Numbers_state* s, rg_Numbers_now_req* m, rg_Numbers_now_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        r->t = t->now;
        return RG_OK;
      }
      /* Numbers.add (grains.ts:109) */
      RG_HD static int rg_h_Numbers_add(rg_turn* t, rg_Numbers_state* s, rg_Numbers_add_req* m, rg_Numbers_add_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->count = rg_tou32(RG_ADD((double)s->count, 1.0));
        s->total = RG_ADD(s->total, (double)m->by);
        r->count = s->count;
        r->total = s->total;
        return RG_OK;
      }

      /* ---- K2K senders ---------------------------------------------------------------------------------- */
      /* ---- helpers and handlers ---------------------------------------------------------------------- */
      /* Seq.push (grains.ts:131) */
      RG_HD static int rg_h_Seq_push(rg_turn* t, rg_Seq_state* s, rg_Seq_push_req* m, unsigned char* r) {
        (void)t; (void)s; (void)m; (void)r;
        if (((double)s->inTurn != 0.0)) {
          s->overlaps = rg_tou32(RG_ADD((double)s->overlaps, 1.0));
        }
        s->inTurn = 1u;
        {
          const bool _c0 = ((double)m->seq != RG_ADD((double)s->last[rg_idxu(t, m->sender, 16)], 1.0));
          if (RG_UNLIKELY(t->err)) return t->err;
          if (_c0) {
            s->violations = rg_tou32(RG_ADD((double)s->violations, 1.0));
          }
        }
        {
          unsigned int* _p1 = &s->last[rg_idxu(t, m->sender, 16)];
          const unsigned int _v2 = m->seq;
          if (!t->err) *_p1 = _v2;
        }
        if (RG_UNLIKELY(t->err)) return t->err;
        {
          double v_i = 0.0;
          for (; (v_i < 50.0); v_i = RG_ADD(v_i, 1.0)) {
            if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
            s->spin = RG_ADD(s->spin, RG_MUL(v_i, 0.5));
          }
        }
        s->count = rg_tou32(RG_ADD((double)s->count, 1.0));
        s->inTurn = 0u;
        return RG_OK;
      }
      /* Seq.pushAsk (grains.ts:142) */
      RG_HD static int rg_h_Seq_pushAsk(rg_turn* t, rg_Seq_state* s, rg_Seq_pushAsk_req* m, rg_Seq_pushAsk_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        if (((double)s->inTurn != 0.0)) {
          s->overlaps = rg_tou32(RG_ADD((double)s->overlaps, 1.0));
        }
        s->inTurn = 1u;
        {
          const bool _c0 = ((double)m->seq != RG_ADD((double)s->last[rg_idxu(t, m->sender, 16)], 1.0));
          if (RG_UNLIKELY(t->err)) return t->err;
          if (_c0) {
            s->violations = rg_tou32(RG_ADD((double)s->violations, 1.0));
          }
        }
        {
          unsigned int* _p1 = &s->last[rg_idxu(t, m->sender, 16)];
          const unsigned int _v2 = m->seq;
          if (!t->err) *_p1 = _v2;
        }
        if (RG_UNLIKELY(t->err)) return t->err;
        s->count = rg_tou32(RG_ADD((double)s->count, 1.0));
        s->inTurn = 0u;
        r->count = s->count;
        return RG_OK;
      }
      /* Seq.stats (grains.ts:152) */
      RG_HD static int rg_h_Seq_stats(rg_turn* t, rg_Seq_state* s, rg_Seq_stats_req* m, rg_Seq_stats_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        r->count = s->count;
        r->violations = s->violations;
        r->overlaps = s->overlaps;
        rg_copy_t(t, &r->last, &s->last, sizeof(r->last));
        return RG_OK;
      }

      /* ---- K2K senders ---------------------------------------------------------------------------------- */
      RG_HD static void rg_send_Seq_push(rg_turn* t, double key, const rg_Seq_push_req* m, bool forward) {
        long long k;
        if (!rg_key_of(key, &k)) { t->err = RG_E_INVALID_KEY; return; }
        rg_wr measure = {0, 0u, 0xffffffffu};
        if (!rg_enc_Seq_push_req(m, &measure)) { t->err = RG_E_REPLY_MISMATCH; return; }
        rg_k2k_ticket tk;
        unsigned char* p = rg_k2k_claim(t, 1u, k, measure.pos, &tk);
        if (!p) return;
        rg_wr w = {p, 0u, measure.pos};
        rg_enc_Seq_push_req(m, &w);
        rg_k2k_publish(t, &tk, 1u, 0u, k, measure.pos, forward, false);
      }
      /* ---- helpers and handlers ---------------------------------------------------------------------- */
      /* Sender.emit (grains.ts:167) */
      RG_HD static int rg_h_Sender_emit(rg_turn* t, rg_Sender_state* s, rg_Sender_emit_req* m, rg_Sender_emit_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        {
          double v_i = 0.0;
          for (; (v_i < (double)m->count); v_i = RG_ADD(v_i, 1.0)) {
            if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
            {
              rg_Seq_push_req _m0;
              rg_zero(&_m0, sizeof(_m0));
              bool rg_mis = false;
              _m0.sender = m->from;
              _m0.seq = rg_chk_u32(&rg_mis, RG_ADD((double)m->first, v_i));
              if (rg_mis && !t->err) {
                long long rg_k;
                t->err = rg_key_of((double)m->target, &rg_k) ? RG_E_REPLY_MISMATCH : RG_E_INVALID_KEY;
              }
              if (!t->err) rg_send_Seq_push(t, (double)m->target, &_m0, false);
            }
            if (RG_UNLIKELY(t->err)) return t->err;
            s->sent = rg_tou32(RG_ADD((double)s->sent, 1.0));
          }
        }
        r->sent = s->sent;
        return RG_OK;
      }

      /* ---- K2K senders ---------------------------------------------------------------------------------- */
      RG_HD static void rg_send_Hop2_go(rg_turn* t, double key, const rg_Hop1_go_req* m, bool forward) {
        long long k;
        if (!rg_key_of(key, &k)) { t->err = RG_E_INVALID_KEY; return; }
        rg_wr measure = {0, 0u, 0xffffffffu};
        if (!rg_enc_Hop1_go_req(m, &measure)) { t->err = RG_E_REPLY_MISMATCH; return; }
        rg_k2k_ticket tk;
        unsigned char* p = rg_k2k_claim(t, 4u, k, measure.pos, &tk);
        if (!p) return;
        rg_wr w = {p, 0u, measure.pos};
        rg_enc_Hop1_go_req(m, &w);
        rg_k2k_publish(t, &tk, 4u, 0u, k, measure.pos, forward, false);
      }
      /* ---- helpers and handlers ---------------------------------------------------------------------- */
      /* Hop1.go (grains.ts:187) */
      RG_HD static int rg_h_Hop1_go(rg_turn* t, rg_Hop1_state* s, rg_Hop1_go_req* m, rg_Hop1_go_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->seen = rg_tou32(RG_ADD((double)s->seen, 1.0));
        {
          rg_Hop1_go_req _m0;
          rg_zero(&_m0, sizeof(_m0));
          bool rg_mis = false;
          _m0.x = rg_chk_i32(&rg_mis, RG_MUL((double)m->x, 2.0));
          _m0.trail = rg_chk_u32(&rg_mis, RG_ADD(RG_MUL((double)m->trail, 10.0), 1.0));
          if (rg_mis && !t->err) {
            long long rg_k;
            t->err = rg_key_of(RG_ADD((double)t->key, 1.0), &rg_k) ? RG_E_REPLY_MISMATCH : RG_E_INVALID_KEY;
          }
          if (!t->err) rg_send_Hop2_go(t, RG_ADD((double)t->key, 1.0), &_m0, true);
        }
        if (RG_UNLIKELY(t->err)) return t->err;
        return RG_FORWARDED;
      }

      /* ---- K2K senders ---------------------------------------------------------------------------------- */
      RG_HD static void rg_send_Hop3_go(rg_turn* t, double key, const rg_Hop2_go_req* m, bool forward) {
        long long k;
        if (!rg_key_of(key, &k)) { t->err = RG_E_INVALID_KEY; return; }
        rg_wr measure = {0, 0u, 0xffffffffu};
        if (!rg_enc_Hop2_go_req(m, &measure)) { t->err = RG_E_REPLY_MISMATCH; return; }
        rg_k2k_ticket tk;
        unsigned char* p = rg_k2k_claim(t, 5u, k, measure.pos, &tk);
        if (!p) return;
        rg_wr w = {p, 0u, measure.pos};
        rg_enc_Hop2_go_req(m, &w);
        rg_k2k_publish(t, &tk, 5u, 0u, k, measure.pos, forward, false);
      }
      /* ---- helpers and handlers ---------------------------------------------------------------------- */
      /* Hop2.go (grains.ts:200) */
      RG_HD static int rg_h_Hop2_go(rg_turn* t, rg_Hop2_state* s, rg_Hop2_go_req* m, rg_Hop2_go_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->seen = rg_tou32(RG_ADD((double)s->seen, 1.0));
        {
          rg_Hop2_go_req _m0;
          rg_zero(&_m0, sizeof(_m0));
          bool rg_mis = false;
          _m0.x = rg_chk_i32(&rg_mis, RG_ADD((double)m->x, 1.0));
          _m0.trail = rg_chk_u32(&rg_mis, RG_ADD(RG_MUL((double)m->trail, 10.0), 2.0));
          if (rg_mis && !t->err) {
            long long rg_k;
            t->err = rg_key_of(RG_ADD((double)t->key, 1.0), &rg_k) ? RG_E_REPLY_MISMATCH : RG_E_INVALID_KEY;
          }
          if (!t->err) rg_send_Hop3_go(t, RG_ADD((double)t->key, 1.0), &_m0, true);
        }
        if (RG_UNLIKELY(t->err)) return t->err;
        return RG_FORWARDED;
      }
      /* Hop2.seen (grains.ts:205) */
      RG_HD static int rg_h_Hop2_seen(rg_turn* t, rg_Hop2_state* s, rg_Hop2_seen_req* m, rg_Hop2_seen_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        r->seen = s->seen;
        return RG_OK;
      }

      /* ---- K2K senders ---------------------------------------------------------------------------------- */
      /* ---- helpers and handlers ---------------------------------------------------------------------- */
      /* Hop3.go (grains.ts:217) */
      RG_HD static int rg_h_Hop3_go(rg_turn* t, rg_Hop3_state* s, rg_Hop3_go_req* m, rg_Hop3_go_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->seen = rg_tou32(RG_ADD((double)s->seen, 1.0));
        {
          bool rg_mis = false;
          r->x = rg_chk_i32(&rg_mis, RG_MUL((double)m->x, 3.0));
          r->trail = rg_chk_u32(&rg_mis, RG_ADD(RG_MUL((double)m->trail, 10.0), 3.0));
          r->by = 3u;
          if (rg_mis && !t->err) t->err = RG_E_REPLY_MISMATCH;
          if (RG_UNLIKELY(t->err)) return t->err;
          return RG_OK;
        }
      }

      /* ---- K2K senders ---------------------------------------------------------------------------------- */
      RG_HD static void rg_send_Leaf_work(rg_turn* t, double key, const rg_Leaf_work_req* m, bool forward) {
        long long k;
        if (!rg_key_of(key, &k)) { t->err = RG_E_INVALID_KEY; return; }
        rg_wr measure = {0, 0u, 0xffffffffu};
        if (!rg_enc_Leaf_work_req(m, &measure)) { t->err = RG_E_REPLY_MISMATCH; return; }
        rg_k2k_ticket tk;
        unsigned char* p = rg_k2k_claim(t, 7u, k, measure.pos, &tk);
        if (!p) return;
        rg_wr w = {p, 0u, measure.pos};
        rg_enc_Leaf_work_req(m, &w);
        rg_k2k_publish(t, &tk, 7u, 0u, k, measure.pos, forward, false);
      }
      /* ---- helpers and handlers ---------------------------------------------------------------------- */
      /* Coordinator.scatter (grains.ts:235) */
      RG_HD static int rg_h_Coordinator_scatter(rg_turn* t, rg_Coordinator_state* s, rg_Coordinator_scatter_req* m, rg_Coordinator_scatter_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        {
          double v_i = 0.0;
          for (; (v_i < (double)m->n); v_i = RG_ADD(v_i, 1.0)) {
            if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
            {
              rg_Leaf_work_req _m0;
              rg_zero(&_m0, sizeof(_m0));
              bool rg_mis = false;
              _m0.coord = rg_chk_i32(&rg_mis, (double)t->key);
              _m0.value = rg_chk_i32(&rg_mis, RG_ADD((double)m->value, v_i));
              if (rg_mis && !t->err) {
                long long rg_k;
                t->err = rg_key_of(v_i, &rg_k) ? RG_E_REPLY_MISMATCH : RG_E_INVALID_KEY;
              }
              if (!t->err) rg_send_Leaf_work(t, v_i, &_m0, false);
            }
            if (RG_UNLIKELY(t->err)) return t->err;
          }
        }
        s->expected = rg_tou32(RG_ADD((double)s->expected, (double)m->n));
        r->expected = s->expected;
        return RG_OK;
      }
      /* Coordinator.gather (grains.ts:241) */
      RG_HD static int rg_h_Coordinator_gather(rg_turn* t, rg_Coordinator_state* s, rg_Coordinator_gather_req* m, unsigned char* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->count = rg_tou32(RG_ADD((double)s->count, 1.0));
        s->sum = RG_ADD(s->sum, (double)m->value);
        return RG_OK;
      }
      /* Coordinator.result (grains.ts:246) */
      RG_HD static int rg_h_Coordinator_result(rg_turn* t, rg_Coordinator_state* s, rg_Coordinator_result_req* m, rg_Coordinator_result_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        r->expected = s->expected;
        r->count = s->count;
        r->sum = s->sum;
        return RG_OK;
      }

      /* ---- K2K senders ---------------------------------------------------------------------------------- */
      RG_HD static void rg_send_Coordinator_gather(rg_turn* t, double key, const rg_Coordinator_gather_req* m, bool forward) {
        long long k;
        if (!rg_key_of(key, &k)) { t->err = RG_E_INVALID_KEY; return; }
        rg_wr measure = {0, 0u, 0xffffffffu};
        if (!rg_enc_Coordinator_gather_req(m, &measure)) { t->err = RG_E_REPLY_MISMATCH; return; }
        rg_k2k_ticket tk;
        unsigned char* p = rg_k2k_claim(t, 6u, k, measure.pos, &tk);
        if (!p) return;
        rg_wr w = {p, 0u, measure.pos};
        rg_enc_Coordinator_gather_req(m, &w);
        rg_k2k_publish(t, &tk, 6u, 1u, k, measure.pos, forward, false);
      }
      /* ---- helpers and handlers ---------------------------------------------------------------------- */
      /* Leaf.work (grains.ts:261) */
      RG_HD static int rg_h_Leaf_work(rg_turn* t, rg_Leaf_state* s, rg_Leaf_work_req* m, unsigned char* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->total = RG_ADD(s->total, (double)m->value);
        s->hits = rg_tou32(RG_ADD((double)s->hits, 1.0));
        {
          rg_Coordinator_gather_req _m0;
          rg_zero(&_m0, sizeof(_m0));
          bool rg_mis = false;
          _m0.from = rg_chk_i32(&rg_mis, (double)t->key);
          _m0.value = rg_chk_i32(&rg_mis, RG_MUL((double)m->value, 2.0));
          if (rg_mis && !t->err) {
            long long rg_k;
            t->err = rg_key_of((double)m->coord, &rg_k) ? RG_E_REPLY_MISMATCH : RG_E_INVALID_KEY;
          }
          if (!t->err) rg_send_Coordinator_gather(t, (double)m->coord, &_m0, false);
        }
        if (RG_UNLIKELY(t->err)) return t->err;
        return RG_OK;
      }
      /* Leaf.get (grains.ts:267) */
      RG_HD static int rg_h_Leaf_get(rg_turn* t, rg_Leaf_state* s, rg_Leaf_get_req* m, rg_Leaf_get_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        r->total = s->total;
        r->hits = s->hits;
        return RG_OK;
      }

      /* ---- K2K senders ---------------------------------------------------------------------------------- */
      RG_HD static void rg_send_Named_inc(rg_turn* t, long long k, const rg_Named_inc_req* m, bool forward) {
        rg_wr measure = {0, 0u, 0xffffffffu};
        if (!rg_enc_Named_inc_req(m, &measure)) { t->err = RG_E_REPLY_MISMATCH; return; }
        rg_k2k_ticket tk;
        unsigned char* p = rg_k2k_claim(t, 8u, k, measure.pos, &tk);
        if (!p) return;
        rg_wr w = {p, 0u, measure.pos};
        rg_enc_Named_inc_req(m, &w);
        rg_k2k_publish(t, &tk, 8u, 0u, k, measure.pos, forward, true);
      }
      /* ---- helpers and handlers ---------------------------------------------------------------------- */
      /* Named.inc (grains.ts:284) */
      RG_HD static int rg_h_Named_inc(rg_turn* t, rg_Named_state* s, rg_Named_inc_req* m, rg_Named_inc_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->value = rg_toi32(RG_ADD((double)s->value, (double)m->by));
        s->calls = rg_tou32(RG_ADD((double)s->calls, 1.0));
        r->value = s->value;
        r->calls = s->calls;
        return RG_OK;
      }
      /* Named.viaSelf (grains.ts:290) */
      RG_HD static int rg_h_Named_viaSelf(rg_turn* t, rg_Named_state* s, rg_Named_viaSelf_req* m, rg_Named_viaSelf_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        {
          rg_Named_inc_req _m0;
          rg_zero(&_m0, sizeof(_m0));
          bool rg_mis = false;
          _m0.by = rg_chk_i32(&rg_mis, RG_MUL((double)m->by, 2.0));
          if (rg_mis && !t->err) t->err = RG_E_REPLY_MISMATCH;
          if (!t->err) rg_send_Named_inc(t, t->key, &_m0, true);
        }
        if (RG_UNLIKELY(t->err)) return t->err;
        return RG_FORWARDED;
      }

      /* ---- K2K senders ---------------------------------------------------------------------------------- */
      /* ---- helpers and handlers ---------------------------------------------------------------------- */
      /* Unregistered.ping (grains.ts:303) */
      RG_HD static int rg_h_Unregistered_ping(rg_turn* t, rg_Unregistered_state* s, rg_Unregistered_ping_req* m, rg_Unregistered_ping_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        r->n = s->n;
        return RG_OK;
      }

      /* ---- K2K senders ---------------------------------------------------------------------------------- */
      RG_HD static void rg_send_Small_echo(rg_turn* t, double key, const rg_Small_echo_req* m, bool forward) {
        long long k;
        if (!rg_key_of(key, &k)) { t->err = RG_E_INVALID_KEY; return; }
        rg_wr measure = {0, 0u, 0xffffffffu};
        if (!rg_enc_Small_echo_req(m, &measure)) { t->err = RG_E_REPLY_MISMATCH; return; }
        rg_k2k_ticket tk;
        unsigned char* p = rg_k2k_claim(t, 10u, k, measure.pos, &tk);
        if (!p) return;
        rg_wr w = {p, 0u, measure.pos};
        rg_enc_Small_echo_req(m, &w);
        rg_k2k_publish(t, &tk, 10u, 0u, k, measure.pos, forward, false);
      }
      RG_HD static void rg_send_Small_store(rg_turn* t, double key, const rg_Small_store_req* m, bool forward) {
        long long k;
        if (!rg_key_of(key, &k)) { t->err = RG_E_INVALID_KEY; return; }
        rg_wr measure = {0, 0u, 0xffffffffu};
        if (!rg_enc_Small_store_req(m, &measure)) { t->err = RG_E_REPLY_MISMATCH; return; }
        rg_k2k_ticket tk;
        unsigned char* p = rg_k2k_claim(t, 10u, k, measure.pos, &tk);
        if (!p) return;
        rg_wr w = {p, 0u, measure.pos};
        rg_enc_Small_store_req(m, &w);
        rg_k2k_publish(t, &tk, 10u, 2u, k, measure.pos, forward, false);
      }
      /* ---- helpers and handlers ---------------------------------------------------------------------- */
      struct rg_env_Small_store_0 {
        rg_Small_state* s;
        rg_Small_store_req* m;
      };
      /* Small.store: the body of the loop at line 349, one iteration (element-parallel) */
      RG_HD static void rg_lp_Small_store_0(rg_turn* t, const rg_env_Small_store_0* e, rg_Small_state* s, rg_Small_store_req* m, double* red, double v_i, unsigned int u_i) {
        (void)t; (void)e; (void)s; (void)m;
        (void)red; (void)v_i; (void)u_i;
        s->bytes[u_i] = m->bytes[u_i];
      }
      #if defined(__CUDACC__) || defined(RG_HOST_COOP)
      static_assert(sizeof(rg_env_Small_store_0) <= RG_COOP_ENV_BYTES, "element-parallel loop: captured values fit rg_coop.env (parallel.ts checks)");
      __device__ static void rg_rch_Small_store_0(const rg_coop* co, unsigned int lane, unsigned int from, unsigned int to) {
        rg_turn lt = co->turn;
        const rg_env_Small_store_0* e_ = (const rg_env_Small_store_0*)co->env;
        const double lo_ = co->lo;
        const unsigned int ulo = lo_ >= 0.0 ? (unsigned int)lo_ : 0u;
        unsigned int k = from + lane;
        for (; k + 96u < to; k += 128u) {
          rg_lp_Small_store_0(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)(k), ulo + k);
          rg_lp_Small_store_0(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 32u)), ulo + (k + 32u));
          rg_lp_Small_store_0(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 64u)), ulo + (k + 64u));
          rg_lp_Small_store_0(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 96u)), ulo + (k + 96u));
        }
        for (; k < to; k += 32u) rg_lp_Small_store_0(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)(k), ulo + k);
      }
      __device__ static void rg_run_Small_store_0(rg_coop* co, unsigned int lane) {
        rg_rch_Small_store_0(co, lane, 0u, co->n);
        if (lane == 0u) { co->failAt = 0xffffffffu; co->iters = co->n; }
      }
      #endif
      struct rg_env_Small_store_1 {
        rg_Small_state* s;
        rg_Small_store_req* m;
      };
      /* Small.store: the body of the loop at line 350, one iteration (element-parallel) */
      RG_HD static void rg_lp_Small_store_1(rg_turn* t, const rg_env_Small_store_1* e, rg_Small_state* s, rg_Small_store_req* m, double* red, double v_i, unsigned int u_i) {
        (void)t; (void)e; (void)s; (void)m;
        (void)red; (void)v_i; (void)u_i;
        s->i8s[u_i] = m->i8s[u_i];
        s->u16s[u_i] = m->u16s[u_i];
      }
      #if defined(__CUDACC__) || defined(RG_HOST_COOP)
      static_assert(sizeof(rg_env_Small_store_1) <= RG_COOP_ENV_BYTES, "element-parallel loop: captured values fit rg_coop.env (parallel.ts checks)");
      __device__ static void rg_rch_Small_store_1(const rg_coop* co, unsigned int lane, unsigned int from, unsigned int to) {
        rg_turn lt = co->turn;
        const rg_env_Small_store_1* e_ = (const rg_env_Small_store_1*)co->env;
        const double lo_ = co->lo;
        const unsigned int ulo = lo_ >= 0.0 ? (unsigned int)lo_ : 0u;
        unsigned int k = from + lane;
        for (; k + 96u < to; k += 128u) {
          rg_lp_Small_store_1(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)(k), ulo + k);
          rg_lp_Small_store_1(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 32u)), ulo + (k + 32u));
          rg_lp_Small_store_1(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 64u)), ulo + (k + 64u));
          rg_lp_Small_store_1(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 96u)), ulo + (k + 96u));
        }
        for (; k < to; k += 32u) rg_lp_Small_store_1(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)(k), ulo + k);
      }
      __device__ static void rg_run_Small_store_1(rg_coop* co, unsigned int lane) {
        rg_rch_Small_store_1(co, lane, 0u, co->n);
        if (lane == 0u) { co->failAt = 0xffffffffu; co->iters = co->n; }
      }
      #endif
      struct rg_env_Small_store_2 {
        rg_Small_state* s;
        rg_Small_store_req* m;
      };
      /* Small.store: the body of the loop at line 354, one iteration (element-parallel) */
      RG_HD static void rg_lp_Small_store_2(rg_turn* t, const rg_env_Small_store_2* e, rg_Small_state* s, rg_Small_store_req* m, double* red, double v_i, unsigned int u_i) {
        (void)t; (void)e; (void)s; (void)m;
        (void)red; (void)v_i; (void)u_i;
        s->i16s[u_i] = m->i16s[u_i];
      }
      #if defined(__CUDACC__) || defined(RG_HOST_COOP)
      static_assert(sizeof(rg_env_Small_store_2) <= RG_COOP_ENV_BYTES, "element-parallel loop: captured values fit rg_coop.env (parallel.ts checks)");
      __device__ static void rg_rch_Small_store_2(const rg_coop* co, unsigned int lane, unsigned int from, unsigned int to) {
        rg_turn lt = co->turn;
        const rg_env_Small_store_2* e_ = (const rg_env_Small_store_2*)co->env;
        const double lo_ = co->lo;
        const unsigned int ulo = lo_ >= 0.0 ? (unsigned int)lo_ : 0u;
        unsigned int k = from + lane;
        for (; k + 96u < to; k += 128u) {
          rg_lp_Small_store_2(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)(k), ulo + k);
          rg_lp_Small_store_2(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 32u)), ulo + (k + 32u));
          rg_lp_Small_store_2(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 64u)), ulo + (k + 64u));
          rg_lp_Small_store_2(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 96u)), ulo + (k + 96u));
        }
        for (; k < to; k += 32u) rg_lp_Small_store_2(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)(k), ulo + k);
      }
      __device__ static void rg_run_Small_store_2(rg_coop* co, unsigned int lane) {
        rg_rch_Small_store_2(co, lane, 0u, co->n);
        if (lane == 0u) { co->failAt = 0xffffffffu; co->iters = co->n; }
      }
      #endif
      struct rg_env_Small_add_3 {
        rg_Small_state* s;
        rg_Small_add_req* m;
      };
      /* Small.add: the body of the loop at line 385, one iteration (element-parallel) */
      RG_HD static void rg_lp_Small_add_3(rg_turn* t, const rg_env_Small_add_3* e, rg_Small_state* s, rg_Small_add_req* m, double* red, double v_i, unsigned int u_i) {
        (void)t; (void)e; (void)s; (void)m;
        (void)red; (void)v_i; (void)u_i;
        s->bytes[u_i] = rg_wrap_u8(rg_toi32(RG_ADD((double)s->bytes[u_i], m->by)));
      }
      #if defined(__CUDACC__) || defined(RG_HOST_COOP)
      static_assert(sizeof(rg_env_Small_add_3) <= RG_COOP_ENV_BYTES, "element-parallel loop: captured values fit rg_coop.env (parallel.ts checks)");
      __device__ static void rg_rch_Small_add_3(const rg_coop* co, unsigned int lane, unsigned int from, unsigned int to) {
        rg_turn lt = co->turn;
        const rg_env_Small_add_3* e_ = (const rg_env_Small_add_3*)co->env;
        const double lo_ = co->lo;
        const unsigned int ulo = lo_ >= 0.0 ? (unsigned int)lo_ : 0u;
        unsigned int k = from + lane;
        for (; k + 96u < to; k += 128u) {
          rg_lp_Small_add_3(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)(k), ulo + k);
          rg_lp_Small_add_3(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 32u)), ulo + (k + 32u));
          rg_lp_Small_add_3(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 64u)), ulo + (k + 64u));
          rg_lp_Small_add_3(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 96u)), ulo + (k + 96u));
        }
        for (; k < to; k += 32u) rg_lp_Small_add_3(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)(k), ulo + k);
      }
      __device__ static void rg_run_Small_add_3(rg_coop* co, unsigned int lane) {
        rg_rch_Small_add_3(co, lane, 0u, co->n);
        if (lane == 0u) { co->failAt = 0xffffffffu; co->iters = co->n; }
      }
      #endif
      struct rg_env_Small_add_4 {
        rg_Small_state* s;
        rg_Small_add_req* m;
      };
      /* Small.add: the body of the loop at line 386, one iteration (element-parallel) */
      RG_HD static void rg_lp_Small_add_4(rg_turn* t, const rg_env_Small_add_4* e, rg_Small_state* s, rg_Small_add_req* m, double* red, double v_i, unsigned int u_i) {
        (void)t; (void)e; (void)s; (void)m;
        (void)red; (void)v_i; (void)u_i;
        s->i8s[u_i] = rg_wrap_i8(rg_toi32(RG_SUB((double)s->i8s[u_i], m->by)));
        s->u16s[u_i] = rg_wrap_u16(rg_toi32(RG_ADD((double)s->u16s[u_i], RG_MUL(m->by, 3.0))));
      }
      #if defined(__CUDACC__) || defined(RG_HOST_COOP)
      static_assert(sizeof(rg_env_Small_add_4) <= RG_COOP_ENV_BYTES, "element-parallel loop: captured values fit rg_coop.env (parallel.ts checks)");
      __device__ static void rg_rch_Small_add_4(const rg_coop* co, unsigned int lane, unsigned int from, unsigned int to) {
        rg_turn lt = co->turn;
        const rg_env_Small_add_4* e_ = (const rg_env_Small_add_4*)co->env;
        const double lo_ = co->lo;
        const unsigned int ulo = lo_ >= 0.0 ? (unsigned int)lo_ : 0u;
        unsigned int k = from + lane;
        for (; k + 96u < to; k += 128u) {
          rg_lp_Small_add_4(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)(k), ulo + k);
          rg_lp_Small_add_4(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 32u)), ulo + (k + 32u));
          rg_lp_Small_add_4(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 64u)), ulo + (k + 64u));
          rg_lp_Small_add_4(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 96u)), ulo + (k + 96u));
        }
        for (; k < to; k += 32u) rg_lp_Small_add_4(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)(k), ulo + k);
      }
      __device__ static void rg_run_Small_add_4(rg_coop* co, unsigned int lane) {
        rg_rch_Small_add_4(co, lane, 0u, co->n);
        if (lane == 0u) { co->failAt = 0xffffffffu; co->iters = co->n; }
      }
      #endif
      struct rg_env_Small_add_5 {
        rg_Small_state* s;
        rg_Small_add_req* m;
      };
      /* Small.add: the body of the loop at line 390, one iteration (element-parallel) */
      RG_HD static void rg_lp_Small_add_5(rg_turn* t, const rg_env_Small_add_5* e, rg_Small_state* s, rg_Small_add_req* m, double* red, double v_i, unsigned int u_i) {
        (void)t; (void)e; (void)s; (void)m;
        (void)red; (void)v_i; (void)u_i;
        s->i16s[u_i] = rg_wrap_i16(rg_toi32(RG_MUL((double)s->i16s[u_i], m->by)));
      }
      #if defined(__CUDACC__) || defined(RG_HOST_COOP)
      static_assert(sizeof(rg_env_Small_add_5) <= RG_COOP_ENV_BYTES, "element-parallel loop: captured values fit rg_coop.env (parallel.ts checks)");
      __device__ static void rg_rch_Small_add_5(const rg_coop* co, unsigned int lane, unsigned int from, unsigned int to) {
        rg_turn lt = co->turn;
        const rg_env_Small_add_5* e_ = (const rg_env_Small_add_5*)co->env;
        const double lo_ = co->lo;
        const unsigned int ulo = lo_ >= 0.0 ? (unsigned int)lo_ : 0u;
        unsigned int k = from + lane;
        for (; k + 96u < to; k += 128u) {
          rg_lp_Small_add_5(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)(k), ulo + k);
          rg_lp_Small_add_5(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 32u)), ulo + (k + 32u));
          rg_lp_Small_add_5(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 64u)), ulo + (k + 64u));
          rg_lp_Small_add_5(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)((k + 96u)), ulo + (k + 96u));
        }
        for (; k < to; k += 32u) rg_lp_Small_add_5(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)(k), ulo + k);
      }
      __device__ static void rg_run_Small_add_5(rg_coop* co, unsigned int lane) {
        rg_rch_Small_add_5(co, lane, 0u, co->n);
        if (lane == 0u) { co->failAt = 0xffffffffu; co->iters = co->n; }
      }
      #endif
      struct rg_env_Small_blob_6 {
        rg_Small_state* s;
        rg_Small_blob_req* m;
      };
      /* Small.blob: the body of the loop at line 421, one iteration (element-parallel) */
      RG_HD static void rg_lp_Small_blob_6(rg_turn* t, const rg_env_Small_blob_6* e, rg_Small_state* s, rg_Small_blob_req* m, double* red, double v_i, unsigned int u_i) {
        (void)t; (void)e; (void)s; (void)m;
        (void)red; (void)v_i; (void)u_i;
        red[0] = RG_ADD(red[0], (double)m->data.items[u_i]);
      }
      #if defined(__CUDACC__) || defined(RG_HOST_COOP)
      static_assert(sizeof(rg_env_Small_blob_6) <= RG_COOP_ENV_BYTES, "element-parallel loop: captured values fit rg_coop.env (parallel.ts checks)");
      __device__ static void rg_run_Small_blob_6(rg_coop* co, unsigned int lane) {
        rg_turn lt = co->turn;
        const rg_env_Small_blob_6* e_ = (const rg_env_Small_blob_6*)co->env;
        const unsigned int n_ = co->n;
        const double lo_ = co->lo;
        const unsigned int ulo = lo_ >= 0.0 ? (unsigned int)lo_ : 0u;
        double red[1] = {-0.0};
        unsigned int k = lane;
        for (; k + 96u < n_; k += 128u) {
          rg_lp_Small_blob_6(&lt, e_, e_->s, e_->m, red, lo_ + (double)(k), ulo + k);
          rg_lp_Small_blob_6(&lt, e_, e_->s, e_->m, red, lo_ + (double)((k + 32u)), ulo + (k + 32u));
          rg_lp_Small_blob_6(&lt, e_, e_->s, e_->m, red, lo_ + (double)((k + 64u)), ulo + (k + 64u));
          rg_lp_Small_blob_6(&lt, e_, e_->s, e_->m, red, lo_ + (double)((k + 96u)), ulo + (k + 96u));
        }
        for (; k < n_; k += 32u) rg_lp_Small_blob_6(&lt, e_, e_->s, e_->m, red, lo_ + (double)(k), ulo + k);
        if (lane == 0u) { co->failAt = 0xffffffffu; co->iters = n_; }
        for (unsigned int o = 16u; o != 0u; o >>= 1) red[0] = RG_ADD(red[0], __shfl_xor_sync(0xffffffffu, red[0], o));
        if (lane == 0u) co->red[0] = red[0];
      }
      #endif
      /* Small.echo (grains.ts:336) */
      RG_HD static int rg_h_Small_echo(rg_turn* t, rg_Small_state* s, rg_Small_echo_req* m, rg_Small_echo_req* r) {
        (void)t; (void)s; (void)m; (void)r;
        r->u8 = m->u8;
        r->i8 = m->i8;
        r->u16 = m->u16;
        r->i16 = m->i16;
        rg_copy_t(t, &r->bytes, &m->bytes, sizeof(r->bytes));
        rg_copy_t(t, &r->i8s, &m->i8s, sizeof(r->i8s));
        rg_copy_t(t, &r->u16s, &m->u16s, sizeof(r->u16s));
        rg_copy_t(t, &r->i16s, &m->i16s, sizeof(r->i16s));
        rg_copy_t(t, &r->bv, &m->bv, rg_minu((unsigned int)sizeof(r->bv), (unsigned int)((const unsigned char*)&(m->bv).items[(m->bv).length] - (const unsigned char*)&(m->bv))));
        rg_copy_t(t, &r->sv, &m->sv, rg_minu((unsigned int)sizeof(r->sv), (unsigned int)((const unsigned char*)&(m->sv).items[(m->sv).length] - (const unsigned char*)&(m->sv))));
        return RG_OK;
      }
      /* Small.via (grains.ts:340) */
      RG_HD static int rg_h_Small_via(rg_turn* t, rg_Small_state* s, rg_Small_via_req* m, rg_Small_echo_req* r) {
        (void)t; (void)s; (void)m; (void)r;
        {
          rg_Small_echo_req _m0;
          rg_zero(&_m0, sizeof(_m0));
          _m0.u8 = m->u8;
          _m0.i8 = m->i8;
          _m0.u16 = m->u16;
          _m0.i16 = m->i16;
          rg_copy(&_m0.bytes, &m->bytes, sizeof(_m0.bytes));
          rg_copy(&_m0.i8s, &m->i8s, sizeof(_m0.i8s));
          rg_copy(&_m0.u16s, &m->u16s, sizeof(_m0.u16s));
          rg_copy(&_m0.i16s, &m->i16s, sizeof(_m0.i16s));
          rg_copy(&_m0.bv, &m->bv, rg_minu((unsigned int)sizeof(_m0.bv), (unsigned int)((const unsigned char*)&(m->bv).items[(m->bv).length] - (const unsigned char*)&(m->bv))));
          rg_copy(&_m0.sv, &m->sv, rg_minu((unsigned int)sizeof(_m0.sv), (unsigned int)((const unsigned char*)&(m->sv).items[(m->sv).length] - (const unsigned char*)&(m->sv))));
          if (!t->err) rg_send_Small_echo(t, (double)m->to, &_m0, true);
        }
        if (RG_UNLIKELY(t->err)) return t->err;
        return RG_FORWARDED;
      }
      /* Small.store (grains.ts:344) */
      RG_HD static int rg_h_Small_store(rg_turn* t, rg_Small_state* s, rg_Small_store_req* m, unsigned char* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->u8 = m->u8;
        s->i8 = m->i8;
        s->u16 = m->u16;
        s->i16 = m->i16;
        {
          const double _lo2 = 0.0;
          const double _hi3 = 8.0;
          (void)_lo2; (void)_hi3;
          #if defined(__CUDA_ARCH__) || defined(RG_HOST_COOP)
          if (t->co && _lo2 == trunc(_lo2) && _lo2 >= -2147483648.0 && _hi3 <= 2147483648.0 && _hi3 - _lo2 >= (double)RG_COOP_MIN_ITERS && ceil(_hi3 - _lo2) <= (double)(t->budget - t->iters) && _lo2 >= 0.0 && _hi3 <= (double)(8)) {
            rg_env_Small_store_0* _e4 = (rg_env_Small_store_0*)t->co->env;
            _e4->s = s;
            _e4->m = m;
            rg_coop_loop(t, 0u, _lo2, (unsigned int)ceil(_hi3 - _lo2));
            if (RG_UNLIKELY(t->err)) return t->err;
          } else
          #endif
          {
            {
              double v_i = 0.0;
              for (; (v_i < 8.0); v_i = RG_ADD(v_i, 1.0)) {
                if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
                {
                  unsigned char* _p0 = &s->bytes[rg_idx(t, v_i, 8)];
                  const unsigned char _v1 = m->bytes[rg_idx(t, v_i, 8)];
                  if (!t->err) *_p0 = _v1;
                }
                if (RG_UNLIKELY(t->err)) return t->err;
              }
            }
          }
        }
        {
          const double _lo9 = 0.0;
          const double _hi10 = 4.0;
          (void)_lo9; (void)_hi10;
          #if defined(__CUDA_ARCH__) || defined(RG_HOST_COOP)
          if (t->co && _lo9 == trunc(_lo9) && _lo9 >= -2147483648.0 && _hi10 <= 2147483648.0 && _hi10 - _lo9 >= (double)RG_COOP_MIN_ITERS && ceil(_hi10 - _lo9) <= (double)(t->budget - t->iters) && _lo9 >= 0.0 && _hi10 <= (double)(4)) {
            rg_env_Small_store_1* _e11 = (rg_env_Small_store_1*)t->co->env;
            _e11->s = s;
            _e11->m = m;
            rg_coop_loop(t, 1u, _lo9, (unsigned int)ceil(_hi10 - _lo9));
            if (RG_UNLIKELY(t->err)) return t->err;
          } else
          #endif
          {
            {
              double v_i = 0.0;
              for (; (v_i < 4.0); v_i = RG_ADD(v_i, 1.0)) {
                if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
                {
                  signed char* _p5 = &s->i8s[rg_idx(t, v_i, 4)];
                  const signed char _v6 = m->i8s[rg_idx(t, v_i, 4)];
                  if (!t->err) *_p5 = _v6;
                }
                if (RG_UNLIKELY(t->err)) return t->err;
                {
                  unsigned short* _p7 = &s->u16s[rg_idx(t, v_i, 4)];
                  const unsigned short _v8 = m->u16s[rg_idx(t, v_i, 4)];
                  if (!t->err) *_p7 = _v8;
                }
                if (RG_UNLIKELY(t->err)) return t->err;
              }
            }
          }
        }
        {
          const double _lo14 = 0.0;
          const double _hi15 = 3.0;
          (void)_lo14; (void)_hi15;
          #if defined(__CUDA_ARCH__) || defined(RG_HOST_COOP)
          if (t->co && _lo14 == trunc(_lo14) && _lo14 >= -2147483648.0 && _hi15 <= 2147483648.0 && _hi15 - _lo14 >= (double)RG_COOP_MIN_ITERS && ceil(_hi15 - _lo14) <= (double)(t->budget - t->iters) && _lo14 >= 0.0 && _hi15 <= (double)(3)) {
            rg_env_Small_store_2* _e16 = (rg_env_Small_store_2*)t->co->env;
            _e16->s = s;
            _e16->m = m;
            rg_coop_loop(t, 2u, _lo14, (unsigned int)ceil(_hi15 - _lo14));
            if (RG_UNLIKELY(t->err)) return t->err;
          } else
          #endif
          {
            {
              double v_i = 0.0;
              for (; (v_i < 3.0); v_i = RG_ADD(v_i, 1.0)) {
                if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
                {
                  short* _p12 = &s->i16s[rg_idx(t, v_i, 3)];
                  const short _v13 = m->i16s[rg_idx(t, v_i, 3)];
                  if (!t->err) *_p12 = _v13;
                }
                if (RG_UNLIKELY(t->err)) return t->err;
              }
            }
          }
        }
        s->count = rg_tou32(RG_ADD((double)s->count, 1.0));
        return RG_OK;
      }
      /* Small.send (grains.ts:358) */
      RG_HD static int rg_h_Small_send(rg_turn* t, rg_Small_state* s, rg_Small_send_req* m, rg_Small_send_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        {
          rg_Small_store_req _m0;
          rg_zero(&_m0, sizeof(_m0));
          _m0.u8 = m->u8;
          _m0.i8 = m->i8;
          _m0.u16 = m->u16;
          _m0.i16 = m->i16;
          rg_copy(&_m0.bytes, &m->bytes, sizeof(_m0.bytes));
          rg_copy(&_m0.i8s, &m->i8s, sizeof(_m0.i8s));
          rg_copy(&_m0.u16s, &m->u16s, sizeof(_m0.u16s));
          rg_copy(&_m0.i16s, &m->i16s, sizeof(_m0.i16s));
          if (!t->err) rg_send_Small_store(t, (double)m->to, &_m0, false);
        }
        if (RG_UNLIKELY(t->err)) return t->err;
        r->sent = 1u;
        return RG_OK;
      }
      /* Small.load (grains.ts:363) */
      RG_HD static int rg_h_Small_load(rg_turn* t, rg_Small_state* s, rg_Small_load_req* m, rg_Small_load_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        r->u8 = s->u8;
        r->i8 = s->i8;
        r->u16 = s->u16;
        r->i16 = s->i16;
        rg_copy_t(t, &r->bytes, &s->bytes, sizeof(r->bytes));
        rg_copy_t(t, &r->i8s, &s->i8s, sizeof(r->i8s));
        rg_copy_t(t, &r->u16s, &s->u16s, sizeof(r->u16s));
        rg_copy_t(t, &r->i16s, &s->i16s, sizeof(r->i16s));
        r->log[0] = s->log.items[0];
        r->log[1] = s->log.items[1];
        r->log[2] = s->log.items[2];
        r->log[3] = s->log.items[3];
        r->log[4] = s->log.items[4];
        r->log[5] = s->log.items[5];
        r->log[6] = s->log.items[6];
        r->log[7] = s->log.items[7];
        r->logged = s->log.length;
        r->count = s->count;
        return RG_OK;
      }
      /* Small.add (grains.ts:380) */
      RG_HD static int rg_h_Small_add(rg_turn* t, rg_Small_state* s, rg_Small_add_req* m, rg_Small_store_req* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->u8 = rg_wrap_u8(rg_toi32(RG_ADD((double)s->u8, m->by)));
        s->i8 = rg_wrap_i8(rg_toi32(RG_ADD((double)s->i8, m->by)));
        s->u16 = rg_wrap_u16(rg_toi32(RG_SUB((double)s->u16, m->by)));
        s->i16 = rg_wrap_i16(rg_toi32(RG_ADD((double)s->i16, m->by)));
        {
          const double _lo2 = 0.0;
          const double _hi3 = 8.0;
          (void)_lo2; (void)_hi3;
          #if defined(__CUDA_ARCH__) || defined(RG_HOST_COOP)
          if (t->co && _lo2 == trunc(_lo2) && _lo2 >= -2147483648.0 && _hi3 <= 2147483648.0 && _hi3 - _lo2 >= (double)RG_COOP_MIN_ITERS && ceil(_hi3 - _lo2) <= (double)(t->budget - t->iters) && _lo2 >= 0.0 && _hi3 <= (double)(8)) {
            rg_env_Small_add_3* _e4 = (rg_env_Small_add_3*)t->co->env;
            _e4->s = s;
            _e4->m = m;
            rg_coop_loop(t, 3u, _lo2, (unsigned int)ceil(_hi3 - _lo2));
            if (RG_UNLIKELY(t->err)) return t->err;
          } else
          #endif
          {
            {
              double v_i = 0.0;
              for (; (v_i < 8.0); v_i = RG_ADD(v_i, 1.0)) {
                if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
                {
                  unsigned char* _p0 = &s->bytes[rg_idx(t, v_i, 8)];
                  const unsigned char _v1 = rg_wrap_u8(rg_toi32(RG_ADD((double)s->bytes[rg_idx(t, v_i, 8)], m->by)));
                  if (!t->err) *_p0 = _v1;
                }
                if (RG_UNLIKELY(t->err)) return t->err;
              }
            }
          }
        }
        {
          const double _lo9 = 0.0;
          const double _hi10 = 4.0;
          (void)_lo9; (void)_hi10;
          #if defined(__CUDA_ARCH__) || defined(RG_HOST_COOP)
          if (t->co && _lo9 == trunc(_lo9) && _lo9 >= -2147483648.0 && _hi10 <= 2147483648.0 && _hi10 - _lo9 >= (double)RG_COOP_MIN_ITERS && ceil(_hi10 - _lo9) <= (double)(t->budget - t->iters) && _lo9 >= 0.0 && _hi10 <= (double)(4)) {
            rg_env_Small_add_4* _e11 = (rg_env_Small_add_4*)t->co->env;
            _e11->s = s;
            _e11->m = m;
            rg_coop_loop(t, 4u, _lo9, (unsigned int)ceil(_hi10 - _lo9));
            if (RG_UNLIKELY(t->err)) return t->err;
          } else
          #endif
          {
            {
              double v_i = 0.0;
              for (; (v_i < 4.0); v_i = RG_ADD(v_i, 1.0)) {
                if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
                {
                  signed char* _p5 = &s->i8s[rg_idx(t, v_i, 4)];
                  const signed char _v6 = rg_wrap_i8(rg_toi32(RG_SUB((double)s->i8s[rg_idx(t, v_i, 4)], m->by)));
                  if (!t->err) *_p5 = _v6;
                }
                if (RG_UNLIKELY(t->err)) return t->err;
                {
                  unsigned short* _p7 = &s->u16s[rg_idx(t, v_i, 4)];
                  const unsigned short _v8 = rg_wrap_u16(rg_toi32(RG_ADD((double)s->u16s[rg_idx(t, v_i, 4)], RG_MUL(m->by, 3.0))));
                  if (!t->err) *_p7 = _v8;
                }
                if (RG_UNLIKELY(t->err)) return t->err;
              }
            }
          }
        }
        {
          const double _lo14 = 0.0;
          const double _hi15 = 3.0;
          (void)_lo14; (void)_hi15;
          #if defined(__CUDA_ARCH__) || defined(RG_HOST_COOP)
          if (t->co && _lo14 == trunc(_lo14) && _lo14 >= -2147483648.0 && _hi15 <= 2147483648.0 && _hi15 - _lo14 >= (double)RG_COOP_MIN_ITERS && ceil(_hi15 - _lo14) <= (double)(t->budget - t->iters) && _lo14 >= 0.0 && _hi15 <= (double)(3)) {
            rg_env_Small_add_5* _e16 = (rg_env_Small_add_5*)t->co->env;
            _e16->s = s;
            _e16->m = m;
            rg_coop_loop(t, 5u, _lo14, (unsigned int)ceil(_hi15 - _lo14));
            if (RG_UNLIKELY(t->err)) return t->err;
          } else
          #endif
          {
            {
              double v_i = 0.0;
              for (; (v_i < 3.0); v_i = RG_ADD(v_i, 1.0)) {
                if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
                {
                  short* _p12 = &s->i16s[rg_idx(t, v_i, 3)];
                  const short _v13 = rg_wrap_i16(rg_toi32(RG_MUL((double)s->i16s[rg_idx(t, v_i, 3)], m->by)));
                  if (!t->err) *_p12 = _v13;
                }
                if (RG_UNLIKELY(t->err)) return t->err;
              }
            }
          }
        }
        if (((double)s->log.length < 8.0)) {
          {
            unsigned char* _p17 = &s->log.items[rg_idxu(t, s->log.length, 8)];
            const unsigned char _v18 = rg_wrap_u8(rg_toi32(m->by));
            if (!t->err) *_p17 = _v18;
          }
          if (RG_UNLIKELY(t->err)) return t->err;
          s->log.length = rg_tou32(RG_ADD((double)s->log.length, 1.0));
        }
        r->u8 = s->u8;
        r->i8 = s->i8;
        r->u16 = s->u16;
        r->i16 = s->i16;
        rg_copy_t(t, &r->bytes, &s->bytes, sizeof(r->bytes));
        rg_copy_t(t, &r->i8s, &s->i8s, sizeof(r->i8s));
        rg_copy_t(t, &r->u16s, &s->u16s, sizeof(r->u16s));
        rg_copy_t(t, &r->i16s, &s->i16s, sizeof(r->i16s));
        return RG_OK;
      }
      /* Small.twiddle (grains.ts:398) */
      RG_HD static int rg_h_Small_twiddle(rg_turn* t, rg_Small_state* s, rg_Small_twiddle_req* m, rg_Small_twiddle_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        const unsigned char v_before = s->u8;
        s->u8 = rg_wrap_u8((~s->u8));
        s->i8 = rg_wrap_i8(rg_toi32(RG_ADD((double)(s->i8 >> (1u & 31u)), (double)m->k)));
        s->u16 = rg_wrap_u16(((int)((unsigned int)s->u16 << (4u & 31u)) | m->k));
        s->i16 = rg_wrap_i16((s->i16 ^ m->k));
        {
          unsigned char* _p0 = &s->bytes[rg_idxi(t, (m->k & 7), 8)];
          const unsigned char _v1 = rg_wrap_u8(rg_toi32(RG_ADD((double)s->bytes[rg_idxi(t, (m->k & 7), 8)], 1.0)));
          if (!t->err) *_p0 = _v1;
        }
        if (RG_UNLIKELY(t->err)) return t->err;
        r->u8 = s->u8;
        r->i8 = s->i8;
        r->u16 = s->u16;
        r->i16 = s->i16;
        r->lt = (v_before < s->u8);
        r->eq = (s->u16 == s->i16);
        return RG_OK;
      }
      /* Small.set (grains.ts:408) */
      RG_HD static int rg_h_Small_set(rg_turn* t, rg_Small_state* s, rg_Small_set_req* m, unsigned char* r) {
        (void)t; (void)s; (void)m; (void)r;
        s->u8 = m->u8;
        s->i8 = m->i8;
        s->u16 = m->u16;
        s->i16 = m->i16;
        return RG_OK;
      }
      /* Small.narrow (grains.ts:415) */
      RG_HD static int rg_h_Small_narrow(rg_turn* t, rg_Small_state* s, rg_Small_narrow_req* m, rg_Small_narrow_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        {
          bool rg_mis = false;
          r->u8 = rg_chk_u8(&rg_mis, m->u8);
          r->i8 = rg_chk_i8(&rg_mis, m->i8);
          r->u16 = rg_chk_u16(&rg_mis, m->u16);
          r->i16 = rg_chk_i16(&rg_mis, m->i16);
          if (rg_mis && !t->err) t->err = RG_E_REPLY_MISMATCH;
          if (RG_UNLIKELY(t->err)) return t->err;
          return RG_OK;
        }
      }
      /* Small.blob (grains.ts:419) */
      RG_HD static int rg_h_Small_blob(rg_turn* t, rg_Small_state* s, rg_Small_blob_req* m, rg_Small_blob_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        double v_sum = 0.0;
        {
          const double _lo0 = 0.0;
          const double _hi1 = (double)m->data.length;
          (void)_lo0; (void)_hi1;
          #if defined(__CUDA_ARCH__) || defined(RG_HOST_COOP)
          if (t->co && _lo0 == trunc(_lo0) && _lo0 >= -2147483648.0 && _hi1 <= 2147483648.0 && _hi1 - _lo0 >= (double)RG_COOP_MIN_ITERS && ceil(_hi1 - _lo0) <= (double)(t->budget - t->iters) && _lo0 >= 0.0 && _hi1 <= (double)(m->data.length) && v_sum == trunc(v_sum) && fabs(v_sum) <= 4503599627370496.0 && _hi1 - _lo0 <= 1048576.0) {
            rg_env_Small_blob_6* _e2 = (rg_env_Small_blob_6*)t->co->env;
            _e2->s = s;
            _e2->m = m;
            rg_coop_loop(t, 6u, _lo0, (unsigned int)ceil(_hi1 - _lo0));
            if (RG_UNLIKELY(t->err)) return t->err;
            v_sum = RG_ADD(v_sum, t->co->red[0]);
          } else
          #endif
          {
            {
              double v_i = 0.0;
              for (; (v_i < (double)m->data.length); v_i = RG_ADD(v_i, 1.0)) {
                if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
                v_sum = RG_ADD(v_sum, (double)m->data.items[rg_idx(t, v_i, m->data.length)]);
                if (RG_UNLIKELY(t->err)) return t->err;
              }
            }
          }
        }
        r->n = m->data.length;
        r->sum = v_sum;
        rg_copy_t(t, &r->data, &m->data, rg_minu((unsigned int)sizeof(r->data), (unsigned int)((const unsigned char*)&(m->data).items[(m->data).length] - (const unsigned char*)&(m->data))));
        return RG_OK;
      }
      "
    `);
  });
});
