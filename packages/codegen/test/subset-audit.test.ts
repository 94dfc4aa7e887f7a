import { describe, expect, it } from 'vitest';
import { differential, type Case } from './diff-lib.ts';
import { generateKernel } from '../src/index.ts';
import * as F from './fixtures/subset-audit.ts';
import { Flow, Kinds, Ops } from './fixtures/subset-audit.ts';
import { CodegenError } from '../src/index.ts';
import type { Ranges } from './random.ts';
import { HAVE_GXX, HAVE_NVCC, nvccCompile } from './toolchain.ts';

const SMALL: Ranges = { float: 1e4, int: 1e6 };
const all = (cls: any, ranges: Ranges, tweak?: (m: any) => void): Case[] =>
  cls.grain.methods.map((m: any) => ({ method: m.name, ranges, tweak }));

describe.skipIf(!HAVE_GXX)('subset audit: documented constructs, JS handler vs generated C', () => {
  it('Kinds: compound assignments and ++/-- on every integer kind, fields, array elements, a struct local', () => {
    const r = differential(
      Kinds,
      [Kinds.grain],
      [...all(Kinds, SMALL), ...all(Kinds, { float: 3, int: 40 }), ...all(Kinds, { float: 5e9, int: 5e9 })],
      600,
      201,
    );
    expect(r.replies + r.mismatches).toBe(400);
    expect(r.replies).toBeGreaterThan(300);
  });
  it('Ops: %, >>> and shifts on negatives and floats, literals, NaN comparisons, chained ?:', () => {
    const r = differential(
      Ops,
      [Ops.grain],
      [...all(Ops, SMALL), ...all(Ops, { float: 3, int: 5 }), ...all(Ops, { float: 5e9, int: 5e9 })],
      600,
      202,
    );
    expect(r.replies).toBe(600);
    const cmp = differential(Ops, [Ops.grain], [{ method: 'cmp', ranges: { float: 2, int: 3 } }], 300, 203);
    expect(cmp.exactReplies).toBe(300);
  });
  it('Flow: helpers calling helpers, loops, bool fields, ctx.now/key, K2K', () => {
    const cases: Case[] = [
      { method: 'helpers', ranges: SMALL },
      { method: 'helpers', ranges: { float: 3, int: 60 } },
      { method: 'loops', ranges: SMALL },
      { method: 'loops', ranges: { float: 1, int: 9 } },
      { method: 'toggle', ranges: SMALL },
      { method: 'ping', ranges: { float: 100, int: 1000 } },
      { method: 'ask', ranges: { float: 100, int: 2000 } },
    ];
    const r = differential(Flow, [Flow.grain], cases, 700, 204);
    expect(r.sends).toBeGreaterThan(100);
    expect(r.replies).toBeGreaterThan(400);
  });
  it('Flow.guard: || and && over throwing helpers end the turn with the first message JS throws', () => {
    const r = differential(Flow, [Flow.grain], [{ method: 'guard', ranges: { float: 100, int: 1 } }], 400, 205);
    expect(r.throws).toBeGreaterThan(50);
    expect(r.replies).toBeGreaterThan(200);
  });
  it("Flow.order: operands that can both throw (+, Math.max, helper arguments, <) throw the left one's message", () => {
    const r = differential(Flow, [Flow.grain], [{ method: 'order', ranges: { float: 100, int: 300 } }], 400, 206);
    expect(r.throws).toBeGreaterThan(40);
    expect(r.replies).toBeGreaterThan(200);
  });
  it(
    "Flow.fields: a reply and a K2K payload written in another order than the schema's evaluate in source order",
    () => {
      const r = differential(Flow, [Flow.grain], [{ method: 'fields', ranges: { float: 100, int: 300 } }], 400, 207);
      expect(r.throws).toBeGreaterThan(40);
      expect(r.sends).toBeGreaterThan(100);
    },
  );
  it('Flow.late: a helper loop evaluated after an operand that threw keeps the throw, not TURN_BUDGET', () => {
    // a < -50: numA throws in JS; C evaluates spinTo after it, 200,000 iterations past the 100,000 budget.
    const tweak = (m: any) => {
      if (m.n % 2 === 0) m.a = -51 - (Math.abs(m.n) % 100);
      m.n = m.a < -50 ? 200_000 : Math.abs(m.n) % 1000;
    };
    const r = differential(
      Flow,
      [Flow.grain],
      [{ method: 'late', ranges: { float: 100, int: 1000 }, tweak }],
      200,
      208,
    );
    expect(r.throws).toBeGreaterThan(60);
    expect(r.replies).toBeGreaterThan(40);
  });
  it.skipIf(!HAVE_NVCC)('the fixture units build for sm_90 with nvcc', () => {
    for (const cls of [Kinds, Ops, Flow]) {
      const b = nvccCompile(generateKernel(cls.grain, { grains: [cls.grain] }).source, 'sm_90');
      expect(b.ok, b.log).toBe(true);
    }
    // Three cubins through nvcc's optimiser and ptxas in the long rounds: minutes on a busy 2-core machine
    // with a cold build cache (60 s was too short for one CI run there).
  }, 480_000);
});

describe(
  'subset audit: constructs outside the documented subset fail with a CodegenError naming grain, method, ' +
    'place and a fix',
  () => {
    const expected: Record<string, RegExp> = {
      RDestructure: /destructuring is not supported/,
      RLabel: /labeled statement is not supported/,
      RNullish: /\?\? is not supported/,
      RPow: /exponent operator is not supported/,
      RPowAssign: /operator \*\*= is not supported.*\n  hint: write x = Math.pow\(x, y\)/,
      RAndAssign: /operator &&= is not supported.*\n  hint: write if \(x\) x = y/,
      RNumberIsInteger:
        /reference to outer variable Number.*\n  hint: Number\.\* is not in the subset: for Number\.isInteger\(x\) write x === Math\.trunc\(x\)/,
      RNumberConst: /reference to outer variable Number.*\n  hint: .*module-level `const NAME = 9007199254740991`/,
      RConstObject: /reference to outer variable CFG.*\n  hint: handlers see only their parameters/,
      REnumObject: /reference to outer variable Color/,
      RComputedConst: /reference to outer variable POW/,
      RMutualRecursion: /recursion is not supported .*\(ping → pong → ping\)/,
      RTemplateThrow: /Error message that is not a constant string/,
      RBoolVsNumber: /operator !== on boolean and number/,
      ROptionalChain: /optional chaining is not supported/,
      RParseInt: /call of parseInt is not supported/,
      RConsole: /reference to outer variable console.*\n  hint: a GPU turn cannot log/,
      RHypot3: /Math.hypot takes 2 argument\(s\), got 3/,
      RMinNoArgs: /Math.min takes at least 1 argument\(s\), got 0/,
      RIncInExpr: /increment in expression is not supported/,
      RBoolCompound: /operator \+ needs a number, got boolean/,
      RConstAssign: /assignment to const c is not supported/,
      RMethodCall: /method call .toFixed\(...\) is not supported/,
      RTruthyTernary: /condition of \?: needs a boolean, got number/,
      RStringKey: /dynamic property access on a msg struct is not supported/,
      RNumberCall: /call of Number is not supported/,
    };
    for (const [name, re] of Object.entries(expected)) {
      it(name, () => {
        const cls = (F as any)[name];
        let err: unknown;
        try {
          generateKernel(cls.grain, { grains: [cls.grain] });
        } catch (e) {
          err = e;
        }
        expect(err, `${name} was translated`).toBeInstanceOf(CodegenError);
        const e = err as CodegenError;
        expect(e.site).toMatchObject({ grain: name, file: 'subset-audit.ts' });
        expect(e.site!.line).toBeGreaterThan(300);
        expect(e.site!.column).toBeGreaterThan(0);
        expect(e.message).toMatch(re);
        expect(e.message).toMatch(new RegExp(`^${name}\\.(go|ping|pong) \\(subset-audit\\.ts:\\d+:\\d+\\): `));
        expect(e.message).toMatch(/\n  hint: \S/);
      });
    }
  },
);
