import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  RING,
  Ring,
  RingConsumer,
  RingError,
  RingProducer,
  SLOT as SLOT_FIELDS,
  SLOT_HEADER_SIZE,
  ringBytes,
} from '../src/entries/internal.ts';

const SLOT = 64;

function makeRing(capacity: number, start = 0): Ring {
  const sab = new SharedArrayBuffer(128 + ringBytes(capacity, SLOT));
  const ring = Ring.format(sab, 128, capacity, SLOT);
  // Start both indices anywhere (near 2^32 exercises wrap-around of the u32 counters).
  ring.words[RING.head] = start | 0;
  ring.words[RING.tail] = start | 0;
  // The slots as a ring that really reached `start` holds them: each published and consumed one lap before. A fresh
  // slot's seq 0 is what the consumer waits for at position 2^32 - 1 (seq = position + 1 wraps to 0).
  for (let k = 1; k <= capacity; k++) {
    const p = (start - k) >>> 0;
    Atomics.store(ring.i32, (ring.slotAt(p) + SLOT_FIELDS.seq) >> 2, (p + 1) | 0);
  }
  return ring;
}

const payloadAt = (ring: Ring, slot: number) => ring.dv.getUint32(slot + SLOT_HEADER_SIZE, true);

describe('Ring.format', () => {
  it('rejects non-power-of-two capacities, bad slot sizes, unaligned offsets and small buffers', () => {
    const sab = new SharedArrayBuffer(1 << 16);
    expect(() => Ring.format(sab, 0, 3, 64)).toThrow(RingError);
    expect(() => Ring.format(sab, 0, 4, 60)).toThrow(RingError);
    expect(() => Ring.format(sab, 0, 4, 32)).toThrow(RingError);
    expect(() => Ring.format(sab, 64, 4, 64)).toThrow(RingError);
    expect(() => Ring.format(sab, 0, 1024, 64)).toThrow(RingError);
    expect(() => new Ring(new SharedArrayBuffer(1024), 0)).toThrow(/no formatted ring/);
  });
});

type Cmd = { op: 'claim' } | { op: 'publish' } | { op: 'peek' } | { op: 'release' };

describe('Ring: single producer / single consumer against a model', () => {
  it('property: random interleavings of claim/publish/peek/release behave like a bounded FIFO', () => {
    const cmd = fc.constantFrom<Cmd>({ op: 'claim' }, { op: 'publish' }, { op: 'peek' }, { op: 'release' });
    fc.assert(
      fc.property(
        fc.constantFrom(2, 4, 8),
        fc.constantFrom(0, 0xfffffff0, 0x7ffffffa),
        fc.array(cmd, { maxLength: 300 }),
        (capacity, start, cmds) => {
          const ring = makeRing(capacity, start);
          const prod = new RingProducer(ring);
          const cons = new RingConsumer(ring);
          const model: number[] = [];
          let next = 1;
          let claimed = -1; // slot claimed and not yet published
          let peeked = -1;
          for (const c of cmds) {
            switch (c.op) {
              case 'claim': {
                const slot = prod.claim();
                if (model.length >= capacity) expect(slot).toBe(-1);
                else {
                  expect(slot).toBeGreaterThanOrEqual(0);
                  // A single producer's claim reserves nothing: claiming again gives the same slot.
                  if (claimed >= 0) expect(slot).toBe(claimed);
                  // Never the slot the consumer is reading.
                  if (peeked >= 0) expect(slot).not.toBe(peeked);
                  claimed = slot;
                }
                break;
              }
              case 'publish':
                if (claimed < 0) break;
                ring.dv.setUint32(claimed + SLOT_HEADER_SIZE, next, true);
                prod.publish(claimed);
                model.push(next++);
                claimed = -1;
                break;
              case 'peek': {
                const slot = cons.peek();
                if (model.length === 0) expect(slot).toBe(-1);
                else {
                  expect(slot).toBeGreaterThanOrEqual(0);
                  expect(payloadAt(ring, slot)).toBe(model[0]);
                  peeked = slot;
                }
                break;
              }
              case 'release':
                if (peeked < 0) break;
                cons.release();
                model.shift();
                peeked = -1;
                break;
            }
            expect(ring.depth()).toBe(model.length);
          }
          // Drain: everything published comes out, in order, nothing else.
          const out: number[] = [];
          if (peeked >= 0) {
            out.push(payloadAt(ring, peeked));
            cons.release();
          }
          for (let s = cons.peek(); s >= 0; s = cons.peek()) {
            out.push(payloadAt(ring, s));
            cons.release();
          }
          expect(out).toEqual(model);
          expect(ring.depth()).toBe(0);
        },
      ),
      { numRuns: 400, seed: 3 },
    );
  });

  it('an unpublished claim is invisible to the consumer', () => {
    const ring = makeRing(4);
    const prod = new RingProducer(ring);
    const cons = new RingConsumer(ring);
    const slot = prod.claim();
    ring.dv.setUint32(slot + SLOT_HEADER_SIZE, 99, true);
    expect(cons.peek()).toBe(-1);
    prod.publish(slot);
    expect(cons.peek()).toBe(slot);
  });

  it(
    'a batch (publishSeq per slot, flushHead once): the consumer sees each slot at once, observers see head ' +
      'at the flush, and claims never reuse a slot',
    () => {
      const ring = makeRing(8, 0xfffffffe);
      const prod = new RingProducer(ring);
      const cons = new RingConsumer(ring);
      const slots: number[] = [];
      for (let i = 0; i < 3; i++) {
        const slot = prod.claim();
        ring.dv.setUint32(slot + SLOT_HEADER_SIZE, 10 + i, true);
        prod.publishSeq(slot);
        slots.push(slot);
      }
      expect(new Set(slots).size).toBe(3);
      expect(ring.depth()).toBe(0);
      expect(payloadAt(ring, cons.peek())).toBe(10);
      prod.flushHead();
      expect(ring.depth()).toBe(3);
      // A single publish after a batch continues from the batch's head.
      const slot = prod.claim();
      expect(slots).not.toContain(slot);
      ring.dv.setUint32(slot + SLOT_HEADER_SIZE, 13, true);
      prod.publish(slot);
      expect(ring.depth()).toBe(4);
      const got: number[] = [];
      for (let c = cons.peek(); c >= 0; c = cons.peek()) {
        got.push(payloadAt(ring, c));
        cons.release();
      }
      expect(got).toEqual([10, 11, 12, 13]);
      // Full: a batch stops at capacity.
      let n = 0;
      for (let c = prod.claim(); c >= 0; c = prod.claim()) {
        prod.publishSeq(c);
        n++;
      }
      prod.flushHead();
      expect(n).toBe(8);
      expect(ring.depth()).toBe(8);
    },
  );
});

describe('RingProducer held runs (claimHeld / releaseHeld)', () => {
  it(
    'property: held slots stay invisible until released, count against capacity, and form one FIFO with ' +
      'claim, reserve and publishSeq across the u32 wrap',
    () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 0, max: 0xffffffff }),
          fc.array(fc.constantFrom('held', 'release', 'claim', 'reserve', 'take', 'flush'), { maxLength: 200 }),
          (start, ops) => {
            const cap = 8;
            const ring = makeRing(cap, start);
            const prod = new RingProducer(ring);
            const cons = new RingConsumer(ring);
            let written = 0; // payload of the next message
            let visible = 0; // published
            let taken = 0;
            for (const op of ops) {
              if (op === 'held') {
                const s = prod.claimHeld();
                if (written - taken >= cap) {
                  expect(s).toBe(-1);
                  continue;
                }
                ring.dv.setUint32(s + SLOT_HEADER_SIZE, written++, true);
              } else if (op === 'release' || op === 'flush') {
                if (op === 'release') prod.releaseHeld();
                else prod.flushHead();
                visible = written;
              } else if (op === 'claim') {
                const s = prod.claim(); // publishes what is held first
                visible = written;
                if (s < 0) continue;
                ring.dv.setUint32(s + SLOT_HEADER_SIZE, written++, true);
                prod.publish(s);
                visible = written;
              } else if (op === 'reserve') {
                const n = prod.reserve(2);
                visible = written;
                for (let i = 0; i < n; i++) {
                  const s = prod.claimNext();
                  ring.dv.setUint32(s + SLOT_HEADER_SIZE, written++, true);
                  prod.publishReserved(s);
                }
                visible = written;
              } else {
                const c = cons.peek();
                if (taken === visible) {
                  expect(c).toBe(-1);
                  continue;
                }
                expect(payloadAt(ring, c)).toBe(taken++);
                cons.release();
              }
              // The producer's depth counts what it holds or has not flushed into head.
              expect(prod.depth()).toBe(written - taken);
              if (op === 'flush') expect(ring.depth()).toBe(written - taken);
            }
          },
        ),
      );
    },
  );

  it('a held slot whose write failed is given back: the next claim reuses it', () => {
    const ring = makeRing(4);
    const prod = new RingProducer(ring);
    const a = prod.claimHeld();
    prod.dropHeld(); // what the system does when the encoder throws
    expect(prod.claimHeld()).toBe(a);
    expect(prod.depth()).toBe(1);
  });
});

describe('Ring: several producers (claimShared) and one consumer', () => {
  type SCmd = { op: 'claim'; p: number } | { op: 'publish'; p: number } | { op: 'consume' };
  it('property: per-producer FIFO, claim order preserved, never past capacity, nothing lost', () => {
    const producers = 3;
    const cmd = fc.oneof(
      fc.integer({ min: 0, max: producers - 1 }).map((p): SCmd => ({ op: 'claim', p })),
      fc.integer({ min: 0, max: producers - 1 }).map((p): SCmd => ({ op: 'publish', p })),
      fc.constant<SCmd>({ op: 'consume' }),
    );
    fc.assert(
      fc.property(
        fc.constantFrom(2, 4, 8),
        fc.constantFrom(0, 0xfffffffc),
        fc.array(cmd, { maxLength: 300 }),
        (capacity, start, cmds) => {
          const ring = makeRing(capacity, start);
          const prods = Array.from({ length: producers }, () => new RingProducer(ring));
          const cons = new RingConsumer(ring);
          const pending: Array<number> = Array(producers).fill(-1); // claimed slot per producer
          const seqs = Array(producers).fill(0);
          // Claim order: each entry is {p, value, published}.
          const claims: Array<{ p: number; value: number; published: boolean }> = [];
          const consumed: number[] = [];
          for (const c of cmds) {
            if (c.op === 'claim') {
              if (pending[c.p]! >= 0) continue; // one open claim per producer (its contract)
              const slot = prods[c.p]!.claimShared();
              if (claims.length >= capacity) {
                expect(slot).toBe(-1);
                continue;
              }
              expect(slot).toBeGreaterThanOrEqual(0);
              const value = c.p * 1_000_000 + ++seqs[c.p];
              ring.dv.setUint32(slot + SLOT_HEADER_SIZE, value, true);
              pending[c.p] = slot;
              claims.push({ p: c.p, value, published: false });
            } else if (c.op === 'publish') {
              const slot = pending[c.p]!;
              if (slot < 0) continue;
              prods[c.p]!.publishShared(slot);
              pending[c.p] = -1;
              claims.find((x) => x.p === c.p && !x.published)!.published = true;
            } else {
              const slot = cons.peek();
              // The consumer sees a slot only when the oldest claim is published.
              if (claims.length === 0 || !claims[0]!.published) {
                expect(slot).toBe(-1);
                continue;
              }
              expect(payloadAt(ring, slot)).toBe(claims[0]!.value);
              consumed.push(claims.shift()!.value);
              cons.release();
            }
            expect(ring.depth()).toBe(claims.length);
          }
          // Per producer, values come out in the order they were claimed.
          for (let p = 0; p < producers; p++) {
            const mine = consumed.filter((v) => Math.floor(v / 1_000_000) === p).map((v) => v % 1_000_000);
            expect(mine).toEqual(mine.slice().sort((a, b) => a - b));
            expect(new Set(mine).size).toBe(mine.length);
          }
        },
      ),
      { numRuns: 400, seed: 8 },
    );
  });
});

describe('RingProducer chunked claims (reserve / claimNext / publishReserved)', () => {
  it(
    'property: chunks of any size, mixed with single claims, across the u32 wrap, form one FIFO and never ' +
      'pass the tail',
    () => {
      fc.assert(
        fc.property(
          fc.constantFrom(2, 4, 8),
          fc.constantFrom(0, 0xfffffff0, 0x7ffffffa),
          fc.array(
            fc.record({
              want: fc.integer({ min: 0, max: 12 }),
              single: fc.boolean(),
              take: fc.integer({ min: 0, max: 10 }),
            }),
            { maxLength: 80 },
          ),
          (capacity, start, steps) => {
            const ring = makeRing(capacity, start);
            const prod = new RingProducer(ring);
            const cons = new RingConsumer(ring);
            let next = 1;
            let expect_ = 1;
            let held = 0;
            for (const s of steps) {
              if (s.single) {
                const slot = prod.claim();
                if (held === capacity) expect(slot).toBe(-1);
                else {
                  ring.dv.setUint32(slot + SLOT_HEADER_SIZE, next++, true);
                  prod.publishSeq(slot);
                  held++;
                }
              } else {
                const got = prod.reserve(s.want);
                expect(got).toBe(Math.min(s.want, capacity - held));
                for (let i = 0; i < got; i++) {
                  const slot = prod.claimNext();
                  ring.dv.setUint32(slot + SLOT_HEADER_SIZE, next++, true);
                  prod.publishReserved(slot);
                  held++;
                }
              }
              prod.flushHead();
              expect(ring.depth()).toBe(held);
              for (let k = 0; k < s.take; k++) {
                const slot = cons.peek();
                if (held === 0) {
                  expect(slot).toBe(-1);
                  break;
                }
                expect(payloadAt(ring, slot)).toBe(expect_++);
                cons.release();
                held--;
              }
            }
          },
        ),
        { numRuns: 300 },
      );
    },
  );
});
