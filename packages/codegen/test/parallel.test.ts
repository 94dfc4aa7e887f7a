import { describe, expect, it } from 'vitest';
import { VectorAdd } from '../../../examples/vector-add/grains.ts';
import { Person, Ward } from '../../../examples/sir/grains.ts';
import { generateKernel } from '../src/index.ts';
import { explainLoops } from '../src/cli.ts';
import { Stats } from './fixtures/stats.ts';
import { Par } from './fixtures/parallel.ts';

/** A generated function's text, from its signature's line to its closing brace at column 0. */
function fn(source: string, name: string): string {
  const at = source.indexOf(`static void ${name}(`);
  const from = source.lastIndexOf('\n', at) + 1;
  return source.slice(from, source.indexOf('\n}\n', at) + 2);
}

describe('element-parallel loops: which loops the check accepts, and why the others stay sequential', () => {
  const par = generateKernel(Par.grain);
  const byMethod = new Map(par.loops.map((l) => [l.method, l]));

  it('accepts maps over message arrays, a state map and a gather, each with the reason', () => {
    for (const m of ['scale', 'blend', 'bump', 'gather']) {
      expect(byMethod.get(m)?.parallel, m).toBe(true);
      expect(byMethod.get(m)?.why).toContain('stores only into element i');
    }
  });

  it(
    'reduces integer sums, min and max on the lanes; keeps a floating-point sum, a shifted read and K2K sends ' +
      'sequential, saying why',
    () => {
      expect(byMethod.get('census')).toMatchObject({
        parallel: true,
        why: expect.stringContaining('reduces pos (sum), sum (sum), lo (min), hi (max)'),
      });
      expect(byMethod.get('total')).toMatchObject({
        parallel: false,
        why: expect.stringContaining('sums into sum values that are not integers'),
      });
      expect(byMethod.get('shift')).toMatchObject({
        parallel: false,
        why: expect.stringContaining('reads m.xs at another index'),
      });
      expect(byMethod.get('spread')).toMatchObject({
        parallel: false,
        why: expect.stringContaining('expression statement'),
      });
      expect(byMethod.has('peek')).toBe(false);
    },
  );

  it('rejects a while loop and a loop nested in a handler helper; notes only top-level handler loops', () => {
    const notes = generateKernel(Stats.grain).loops;
    expect(notes.map((n) => `${n.method}:${n.parallel}`)).toEqual(['add:false', 'move:false', 'spin:false']);
    expect(notes.find((n) => n.method === 'move')?.why).toContain('a while loop');
  });

  it('the examples: vector-add and SIR setup go parallel; SIR tick and the ward census (both send) do not', () => {
    expect(generateKernel(VectorAdd.grain).loops.map((l) => l.parallel)).toEqual([true]);
    const grains = [Person.grain, Ward.grain];
    expect(explainLoops('Person', generateKernel(Person.grain, { grains }).loops)).toMatch(
      /Person\.setup line \d+: element-parallel[^\n]*\nPerson\.tick line \d+: sequential: it has an expression statement/,
    );
    expect(generateKernel(Ward.grain, { grains }).loops[0]).toMatchObject({
      method: 'step',
      parallel: false,
      why: expect.stringContaining('expression statement'),
    });
  });

  it(
    'a body that cannot fail indexes with the unsigned iteration; the handler checks the lengths before going ' +
      'parallel',
    () => {
      expect(fn(par.source, 'rg_lp_Par_scale_0')).toMatchInlineSnapshot(`
      "RG_HD static void rg_lp_Par_scale_0(rg_turn* t, const rg_env_Par_scale_0* e, rg_Par_state* s, rg_Par_scale_req* m, double* red, double v_i, unsigned int u_i) {
        (void)t; (void)e; (void)s; (void)m;
        (void)red; (void)v_i; (void)u_i;
        m->xs.items[u_i] = RG_MUL(m->xs.items[u_i], m->k);
      }"
    `);
      const h = par.source.slice(
        par.source.indexOf('static int rg_h_Par_scale('),
        par.source.indexOf('static int rg_h_Par_blend('),
      );
      expect(h).toMatchInlineSnapshot(`
      "static int rg_h_Par_scale(rg_turn* t, rg_Par_state* s, rg_Par_scale_req* m, rg_Par_scale_rep* r) {
        (void)t; (void)s; (void)m; (void)r;
        {
          const double _lo2 = 0.0;
          const double _hi3 = (double)m->xs.length;
          (void)_lo2; (void)_hi3;
          #if defined(__CUDA_ARCH__) || defined(RG_HOST_COOP)
          if (t->co && _lo2 == trunc(_lo2) && _lo2 >= -2147483648.0 && _hi3 <= 2147483648.0 && _hi3 - _lo2 >= (double)RG_COOP_MIN_ITERS && ceil(_hi3 - _lo2) <= (double)(t->budget - t->iters) && _lo2 >= 0.0 && _hi3 <= (double)(m->xs.length)) {
            rg_env_Par_scale_0* _e4 = (rg_env_Par_scale_0*)t->co->env;
            _e4->s = s;
            _e4->m = m;
            rg_coop_loop(t, 0u, _lo2, (unsigned int)ceil(_hi3 - _lo2));
            if (RG_UNLIKELY(t->err)) return t->err;
          } else
          #endif
          {
            {
              double v_i = 0.0;
              for (; (v_i < (double)m->xs.length); v_i = RG_ADD(v_i, 1.0)) {
                if (RG_UNLIKELY(++t->iters > t->budget)) { if (!t->err) t->err = RG_E_TURN_BUDGET; return t->err; }
                {
                  double* _p0 = &m->xs.items[rg_idx(t, v_i, m->xs.length)];
                  const double _v1 = RG_MUL(m->xs.items[rg_idx(t, v_i, m->xs.length)], m->k);
                  if (!t->err) *_p0 = _v1;
                }
                if (RG_UNLIKELY(t->err)) return t->err;
              }
            }
          }
        }
        rg_copy_t(t, &r->ys, &m->xs, rg_minu((unsigned int)sizeof(r->ys), (unsigned int)((const unsigned char*)&(m->xs).items[(m->xs).length] - (const unsigned char*)&(m->xs))));
        return RG_OK;
      }
      /* Par.blend (parallel.ts:37) */
      RG_HD "
    `);
  });

  it(
    'a body that can fail keeps its checks (the gather index), and lanes agree on the first failing iteration; ' +
      'reductions combine with shuffles',
    () => {
      expect(fn(par.source, 'rg_run_Par_census_4')).toMatchInlineSnapshot(`
      "__device__ static void rg_run_Par_census_4(rg_coop* co, unsigned int lane) {
        rg_turn lt = co->turn;
        const rg_env_Par_census_4* e_ = (const rg_env_Par_census_4*)co->env;
        const unsigned int n_ = co->n;
        const double lo_ = co->lo;
        const unsigned int ulo = lo_ >= 0.0 ? (unsigned int)lo_ : 0u;
        double red[4] = {-0.0, -0.0, rg_inf(), -rg_inf()};
        unsigned int k = lane;
        for (; k + 96u < n_; k += 128u) {
          rg_lp_Par_census_4(&lt, e_, e_->s, e_->m, red, lo_ + (double)(k), ulo + k);
          rg_lp_Par_census_4(&lt, e_, e_->s, e_->m, red, lo_ + (double)((k + 32u)), ulo + (k + 32u));
          rg_lp_Par_census_4(&lt, e_, e_->s, e_->m, red, lo_ + (double)((k + 64u)), ulo + (k + 64u));
          rg_lp_Par_census_4(&lt, e_, e_->s, e_->m, red, lo_ + (double)((k + 96u)), ulo + (k + 96u));
        }
        for (; k < n_; k += 32u) rg_lp_Par_census_4(&lt, e_, e_->s, e_->m, red, lo_ + (double)(k), ulo + k);
        if (lane == 0u) { co->failAt = 0xffffffffu; co->iters = n_; }
        for (unsigned int o = 16u; o != 0u; o >>= 1) red[0] = RG_ADD(red[0], __shfl_xor_sync(0xffffffffu, red[0], o));
        if (lane == 0u) co->red[0] = red[0];
        for (unsigned int o = 16u; o != 0u; o >>= 1) red[1] = RG_ADD(red[1], __shfl_xor_sync(0xffffffffu, red[1], o));
        if (lane == 0u) co->red[1] = red[1];
        for (unsigned int o = 16u; o != 0u; o >>= 1) red[2] = rg_min(red[2], __shfl_xor_sync(0xffffffffu, red[2], o));
        if (lane == 0u) co->red[2] = red[2];
        for (unsigned int o = 16u; o != 0u; o >>= 1) red[3] = rg_max(red[3], __shfl_xor_sync(0xffffffffu, red[3], o));
        if (lane == 0u) co->red[3] = red[3];
      }"
    `);
    expect(fn(par.source, 'rg_lp_Par_gather_3')).toMatchInlineSnapshot(`
      "RG_HD static void rg_lp_Par_gather_3(rg_turn* t, const rg_env_Par_gather_3* e, rg_Par_state* s, rg_Par_gather_req* m, double* red, double v_i, unsigned int u_i) {
        (void)t; (void)e; (void)s; (void)m;
        (void)red; (void)v_i; (void)u_i;
        {
          const double _v0 = RG_ADD(m->xs.items[u_i], s->acc[rg_idxi(t, m->idx.items[u_i], 1024)]);
          if (!t->err) m->xs.items[u_i] = _v0;
        }
        if (RG_UNLIKELY(t->err)) return;
      }"
    `);
    expect(fn(par.source, 'rg_run_Par_gather_3')).toMatchInlineSnapshot(`
      "__device__ static void rg_run_Par_gather_3(rg_coop* co, unsigned int lane) {
        rg_turn lt = co->turn;
        const rg_env_Par_gather_3* e_ = (const rg_env_Par_gather_3*)co->env;
        const unsigned int n_ = co->n;
        const double lo_ = co->lo;
        const unsigned int ulo = lo_ >= 0.0 ? (unsigned int)lo_ : 0u;
        unsigned int fail = 0xffffffffu;
        for (unsigned int k = lane; k < n_; k += 32u) {
          lt.iters++;
          rg_lp_Par_gather_3(&lt, e_, e_->s, e_->m, (double*)0, lo_ + (double)(k), ulo + k);
          if (lt.err) { fail = k; break; }
        }
        unsigned int first = fail, iters = lt.iters;
        for (unsigned int o = 16u; o != 0u; o >>= 1) {
          first = min(first, __shfl_xor_sync(0xffffffffu, first, o));
          iters += __shfl_xor_sync(0xffffffffu, iters, o);
        }
        if (first != 0xffffffffu && fail == first) { co->err = lt.err; co->msg = lt.msg; }
        if (lane == 0u) { co->failAt = first; co->iters = iters; }
      }"
    `);
    expect(par.source).toContain('case 3u: rg_run_Par_gather_3(co, lane); break;');
  });

  it('captures the handler locals the body reads, by value', () => {
    expect(fn(par.source, 'rg_lp_Par_blend_1')).toContain('const double v_w2 = e->v_w2;');
    expect(par.source).toMatch(
      /struct rg_env_Par_blend_1 \{\n {2}rg_Par_state\* s;\n {2}rg_Par_blend_req\* m;\n {2}double v_w2;\n\};/,
    );
  });
});
