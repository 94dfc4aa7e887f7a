import { defineGrain, t } from '@ringgrain/core';
import type { AnyGrainClass } from '@ringgrain/core/types';
import { describe, expect, it } from 'vitest';
import { CodegenError, generateKernel } from '../src/index.ts';
import * as F from './fixtures/rejected.ts';

function fail(cls: AnyGrainClass, grains = [cls.grain]): CodegenError {
  try {
    generateKernel(cls.grain, { grains });
  } catch (e) {
    if (e instanceof CodegenError) return e;
    throw e;
  }
  throw new Error(`${cls.grain.name} was translated but should have been rejected`);
}

describe('constructs outside the subset are rejected with grain, method, location and a fix', () => {
  it('closure over a mutable outer variable', () => {
    const e = fail(F.Closure);
    expect(e.code).toBe('CODEGEN_UNSUPPORTED');
    expect(e.site).toMatchObject({ grain: 'Closure', method: 'go', file: 'rejected.ts' });
    expect(e.message).toMatchInlineSnapshot(`
      "Closure.go (rejected.ts:23:5): reference to outer variable outer is not supported in code translated to CUDA
        hint: handlers see only their parameters, their locals, module-level \`const NAME = <number>\` and module-level function helpers; pass the value in the message or keep it in the state"
    `);
  });
  it('spread', () => expect(fail(F.Spread).message).toMatchInlineSnapshot(`
    "Spread.go (rejected.ts:30:14): spread is not supported in code translated to CUDA
      hint: write each field out: { a: x.a, b: x.b }"
  `));
  it('dynamic property access on a struct', () => expect(fail(F.DynamicAccess).message).toMatchInlineSnapshot(`
    "DynamicAccess.go (rejected.ts:35:17): dynamic property access on a state struct is not supported in code translated to CUDA
      hint: only arrays can be indexed; name struct fields with a dot"
  `));
  it('strings outside method names', () => expect(fail(F.StringUse).message).toMatchInlineSnapshot(`
    "StringUse.go (rejected.ts:40:19): string is not supported in code translated to CUDA
      hint: strings exist only as method names of ctx.send/ctx.forward"
  `));
  it('try/catch', () => expect(fail(F.TryCatch).message).toMatchInlineSnapshot(`
    "TryCatch.go (rejected.ts:46:5): try/catch is not supported in code translated to CUDA
      hint: handlers cannot catch on the GPU; check the condition before the operation instead"
  `));
  it('async handler', () => expect(fail(F.AsyncHandler).message).toMatchInlineSnapshot(`
    "AsyncHandler.go (rejected.ts:55:3): async function is not supported in code translated to CUDA
      hint: handlers are synchronous turns; drop \`async\`"
  `));
  it('await', () => {
    const grain = defineGrain({
      name: 'AwaitUse',
      module: new URL('./fixtures/await.src.txt', import.meta.url).href,
      state: t.struct({ n: t.f64 }),
      methods: { go: { request: t.struct({}), reply: t.struct({ v: t.f64 }) } },
    });
    expect(fail({ grain } as unknown as AnyGrainClass).message).toMatchInlineSnapshot(`
      "AwaitUse.go (await.src.txt:4:15): await is not supported in code translated to CUDA
        hint: handlers are synchronous turns; send a one-way message with ctx.send instead"
    `);
  });
  it('recursion', () => expect(fail(F.Recursion).message).toMatchInlineSnapshot(`
    "Recursion.fact (rejected.ts:15:27): recursion is not supported in code translated to CUDA (fact → fact)
      hint: write the recursion as a loop"
  `));
  it('allocation with new', () => expect(fail(F.Allocation).message).toMatchInlineSnapshot(`
    "Allocation.go (rejected.ts:66:15): new is not supported in code translated to CUDA
      hint: no allocation on the GPU; use fixed arrays in the state or message schema (t.array / t.vec)"
  `));
  it('array literal', () => expect(fail(F.ArrayLiteral).message).toMatchInlineSnapshot(`
    "ArrayLiteral.go (rejected.ts:72:15): array literal is not supported in code translated to CUDA
      hint: no allocation on the GPU: an array literal is translated only as the value of a t.array / t.vec field in a reply or a ctx.send/ctx.forward payload; elsewhere use fixed arrays in the state or message schema"
  `));
  it('unsupported Math function', () => expect(fail(F.BadMath).message).toMatchInlineSnapshot(`
    "BadMath.go (rejected.ts:78:17): Math.random is not supported in code translated to CUDA
      hint: Math.random has no CUDA translation; supported: abs, sqrt, cbrt, floor, ceil, trunc, round, sign, fround, exp, expm1, log, log2, log10, log1p, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, asinh, acosh, atanh, atan2, pow, hypot, min, max, imul, clz32"
  `));
  it('arrow function', () => expect(fail(F.ArrowFn).message).toMatchInlineSnapshot(`
    "ArrowFn.go (rejected.ts:83:15): arrow function is not supported in code translated to CUDA
      hint: closures are not translated; move the logic into a module-level \`function\` helper that takes numbers"
  `));
  it('truthiness of a number', () => {
    const e = fail(F.Truthiness);
    expect(e.code).toBe('CODEGEN_TYPE');
    expect(e.message).toMatchInlineSnapshot(`
      "Truthiness.go (rejected.ts:89:9): if condition needs a boolean, got number (f64)
        hint: compare explicitly, e.g. x !== 0 (JS truthiness is not translated)"
    `);
  });
  it('loose equality', () => expect(fail(F.LooseEquality).message).toMatchInlineSnapshot(`
    "LooseEquality.go (rejected.ts:95:21): == is not supported in code translated to CUDA
      hint: use === (no coercion)"
  `));
  it('reply literal that does not match the reply schema', () =>
    expect(fail(F.MissingReplyField).message).toMatchInlineSnapshot(`
    "MissingReplyField.go (rejected.ts:100:14): the reply has no field "value" (schema {v:f64})
      hint: write exactly the fields v"
  `));
  it('for..of', () => expect(fail(F.ForOf).message).toMatchInlineSnapshot(`
    "ForOf.go (rejected.ts:106:5): for..of is not supported in code translated to CUDA
      hint: write an index loop: for (let i = 0; i < xs.length; i++)"
  `));
  it('helper without parameter types', () => expect(fail(F.UntypedHelper).message).toMatchInlineSnapshot(`
    "UntypedHelper.untyped (rejected.ts:17:18): helper parameter without a number or boolean type is not supported in code translated to CUDA
      hint: annotate it: x: number"
  `));
  it('local holding a struct view', () => expect(fail(F.StructLocal).message).toMatchInlineSnapshot(`
    "StructLocal.go (rejected.ts:117:9): local holding a state struct is not supported in code translated to CUDA
      hint: declare it with const: a const local names the struct (const p = m.pts[i]); let locals hold numbers or booleans"
  `));
  it('switch', () => expect(fail(F.Switch).message).toMatchInlineSnapshot(`
    "Switch.go (rejected.ts:138:5): switch is not supported in code translated to CUDA
      hint: write if / else if chains"
  `));
  it('throw of a value other than an Error', () => expect(fail(F.ThrowValue).message).toMatchInlineSnapshot(`
    "ThrowValue.go (rejected.ts:147:24): throw of a value other than new Error(...) is not supported in code translated to CUDA
      hint: throw new Error('a constant message') ends the turn with that message on both backends; other thrown values are not translated"
  `));
  it('throw of an Error whose message is not a constant', () =>
    expect(fail(F.ThrowDynamicMessage).message).toMatchInlineSnapshot(`
    "ThrowDynamicMessage.go (rejected.ts:153:34): Error message that is not a constant string is not supported in code translated to CUDA
      hint: write the message as one string literal, throw new Error('amount must be positive'), and return values in the reply instead"
  `));
  it('throw of another error class', () => expect(fail(F.ThrowOtherClass).message).toMatchInlineSnapshot(`
    "ThrowOtherClass.go (rejected.ts:159:24): throw new RangeError(...) is not supported in code translated to CUDA
      hint: throw new Error('a constant message') ends the turn with that message on both backends; other thrown values are not translated"
  `));
  it('local holding an array view', () => expect(fail(F.ArrayLocal).message).toMatchInlineSnapshot(`
    "ArrayLocal.go (rejected.ts:165:11): local holding a state array is not supported in code translated to CUDA
      hint: locals hold numbers or booleans, and const locals may name a struct; read arrays through their full path"
  `));
  it('array literal with the wrong number of elements for a t.array', () => {
    const e = fail(F.ArrayLength);
    expect(e.code).toBe('CODEGEN_TYPE');
    expect(e.site).toMatchObject({ grain: 'ArrayLength', method: 'go', file: 'rejected.ts' });
    expect(e.message).toMatchInlineSnapshot(`
      "ArrayLength.go (rejected.ts:178:18): the reply field xs is f64[3] but the array literal has 2 element(s)
        hint: write exactly 3 element(s): a t.array has a fixed length"
    `);
  });
  it('array literal longer than a t.vec', () => expect(fail(F.VecTooLong).message).toMatchInlineSnapshot(`
    "VecTooLong.go (rejected.ts:183:34): the reply field v is u32[..2] but the array literal has 3 elements
      hint: write at most 2 element(s), or raise the vec's maximum length in the schema"
  `));
  it('array literal assigned to a state array (JS throws: the view has no setter)', () =>
    expect(fail(F.ArrayToState).message).toMatchInlineSnapshot(`
    "ArrayToState.go (rejected.ts:188:5): assignment of an array literal to a state array is not supported in code translated to CUDA
      hint: state arrays are live views without a setter in JS (the CPU backend throws TypeError: "Cannot set property … which has only a getter"); store the elements one by one: s.xs[0] = a; s.xs[1] = b (a t.vec: s.v.items[i] = a; then s.v.length = n)"
  `));
  it('array literal for a scalar field', () => expect(fail(F.ArrayForScalar).message).toMatchInlineSnapshot(`
    "ArrayForScalar.go (rejected.ts:194:17): the reply field v is f64, not an array
      hint: array literals fill t.array / t.vec fields only"
  `));
  it('K2K to a string-keyed grain by a key other than ctx.key', () => {
    const e = fail(F.Keyed);
    expect(e.code).toBe('CODEGEN_K2K');
    expect(e.message).toMatchInlineSnapshot(`
      "Keyed.go (rejected.ts:207:31): ctx.forward to Keyed, a grain with string keys, by a key other than ctx.key
        hint: a string key reaches the GPU as its host-interned id, unique only within its grain class, so a string-keyed grain is addressed only by its own ctx.key from a handler of the same class: ctx.forward(Keyed, ctx.key, ...); give the target integer keys to reach it from elsewhere"
    `);
  });
  it('K2K to a string-keyed grain from another class', () =>
    expect(fail(F.SendToKeyed, [F.SendToKeyed.grain, F.Keyed.grain]).message).toMatchInlineSnapshot(`
    "SendToKeyed.go (rejected.ts:217:14): ctx.send to Keyed, a grain with string keys, from another grain class (SendToKeyed)
      hint: a string key reaches the GPU as its host-interned id, unique only within its grain class, so a string-keyed grain is addressed only by its own ctx.key from a handler of the same class: ctx.send(Keyed, ctx.key, ...); give the target integer keys to reach it from elsewhere"
  `));
  it('ctx.key of a string-keyed grain outside a K2K key', () =>
    expect(fail(F.KeyedKeyUse).message).toMatchInlineSnapshot(`
    "KeyedKeyUse.go (rejected.ts:212:17): property key of ctx is not supported in code translated to CUDA
      hint: a string key exists on the GPU only as its host-interned id: ctx.key may only be the key of ctx.send/ctx.forward to KeyedKeyUse itself; pass other uses in the message"
  `));
  it('ctx.forward to a method whose reply schema differs', () => {
    const e = fail(F.ForwardMismatch, [F.ForwardMismatch.grain, F.Other.grain]);
    expect(e.code).toBe('CODEGEN_K2K');
    expect(e.message).toMatchInlineSnapshot(`
      "ForwardMismatch.go (rejected.ts:123:12): ctx.forward to Other.other whose reply ({w:u32}) differs from ForwardMismatch.go's ({v:f64})
        hint: forward only to a method that replies with the same schema"
    `);
  });
  it('ctx.send to a grain class not in the grains list', () => {
    const e = fail(F.ForwardMismatch);
    expect(e.code).toBe('CODEGEN_K2K');
    expect(e.message).toMatchInlineSnapshot(`
      "ForwardMismatch.go (rejected.ts:123:24): grain class Other is not among the grains placed with ForwardMismatch (generateKernel's grains)
        hint: place both classes on the same backend (K2K on the GPU never goes through the host), and pass every placed GrainDef in grains"
    `);
  });
});

describe('handlers the CPU backend would not find on an instance', () => {
  it('static method', () => expect(fail(F.StaticHandler).message).toMatchInlineSnapshot(`
    "StaticHandler.go (rejected.ts:261:3): static handler go is not supported in code translated to CUDA
      hint: the CPU backend calls handlers on an instance: drop \`static\`"
  `));
});

describe(
  'ctx.startTimer / ctx.stopTimer the GPU timer table cannot take: CODEGEN_TIMER with grain, method, ' +
    'location and a fix',
  () => {
    const cases: Array<[AnyGrainClass, string]> = [
      [
        F.TimerNameNotLiteral,
        "TimerNameNotLiteral.go (rejected.ts:231:20): ctx.startTimer needs the timer's name as a string literal " +
          '(the GPU table has one column per declared timer, chosen when the handler is translated)\n  hint: write ' +
          'one of a, b literally; branch with if/else to choose between timers',
      ],
      [
        F.TimerOptionsNotLiteral,
        'TimerOptionsNotLiteral.go (rejected.ts:237:25): ctx.startTimer needs its options as an object literal\n  ' +
          "hint: write ctx.startTimer('a', { periodMs: ..., dueMs: ... }) (either field may be left out); choose " +
          'between two option sets with if/else',
      ],
      [
        F.TimerUnknownOption,
        'TimerUnknownOption.go (rejected.ts:243:40): ctx.startTimer has no option "every"\n  hint: the options are ' +
          'periodMs and dueMs',
      ],
      [
        F.TimerInExpression,
        'TimerInExpression.go (rejected.ts:249:15): ctx.stopTimer inside an expression (it returns nothing)\n  ' +
          'hint: call ctx.stopTimer(...) as its own statement',
      ],
      [
        F.TimerStopWithOptions,
        'TimerStopWithOptions.go (rejected.ts:256:5): ctx.stopTimer takes (name), got 2 arguments\n  hint: write ' +
          "ctx.stopTimer('a')",
      ],
    ];
    for (const [cls, message] of cases) {
      it(cls.grain.name, () => {
        const e = fail(cls);
        expect(e.code).toBe('CODEGEN_TIMER');
        expect(e.site).toMatchObject({ grain: cls.grain.name, method: 'go', file: 'rejected.ts' });
        expect(e.message).toBe(message);
      });
    }
  },
);
