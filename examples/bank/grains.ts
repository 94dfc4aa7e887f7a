import { Grain, t, type TypesOf } from '@ringgrain/core';

const money = t.struct({ amount: t.f64 });
const balance = t.struct({ balance: t.f64 });

/** A bank account: deposits, withdrawals, and transfers that travel actor to actor inside the backend. */
export class Account extends Grain({
  name: 'Account',
  module: import.meta.url,
  state: t.struct({ balance: t.f64, ops: t.u32 }),
  methods: {
    deposit: { request: money, reply: balance },
    withdraw: { request: money, reply: t.struct({ ok: t.bool, balance: t.f64 }) },
    /** One-way: debit here, credit `to` by K2K. */
    transfer: { request: t.struct({ to: t.i32, amount: t.f64 }) },
    credit: { request: money },
    balance: { request: t.struct({}), reply: t.struct({ balance: t.f64, ops: t.u32 }) },
  },
}) {
  deposit(s: A['state'], m: A['req']['deposit']): A['reply']['deposit'] {
    s.balance += m.amount;
    s.ops += 1;
    return { balance: s.balance };
  }

  withdraw(s: A['state'], m: A['req']['withdraw']): A['reply']['withdraw'] {
    s.ops += 1;
    if (m.amount > s.balance) return { ok: false, balance: s.balance };
    s.balance -= m.amount;
    return { ok: true, balance: s.balance };
  }

  transfer(s: A['state'], m: A['req']['transfer'], ctx: A['ctx']): void {
    s.ops += 1;
    if (m.amount <= s.balance) {
      s.balance -= m.amount;
      ctx.send(Account, m.to, 'credit', { amount: m.amount });
    }
  }

  credit(s: A['state'], m: A['req']['credit']): void {
    s.balance += m.amount;
    s.ops += 1;
  }

  balance(s: A['state']): A['reply']['balance'] {
    return { balance: s.balance, ops: s.ops };
  }
}
type A = TypesOf<typeof Account>;
