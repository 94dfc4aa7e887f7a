/**
 * `bench/run.ts --host-path`: the host path of a message step by step, one thread, no workers (ns per
 * message, median of 5 runs after a warm-up). Each step the tellMany / tell work changed is measured in
 * its old and its new form side by side, so the table shows what each change bought:
 *   - tellMany rows: column validation; the closure row writer with a claim per slot (before) against
 *     the generated row loop with chunked claims (row-codegen.ts);
 *   - single sends: the general encoder with its header object (before) against the fixed image
 *     (tell-image.ts);
 *   - tellMany's host work per row in the column-image form (column-image.ts: the columns copied into one
 *     buffer, no slot per row) beside the row loop: what a backend that expands images on the device saves
 *     the host (the CPU backend's lanes take images: scripts/tellmany-probe.ts --compare times both paths end to end);
 *   - the consumer's take: peek + release per slot (before) against peek + skip with one tail
 *     publication per 64 (the CPU dispatcher's batch take).
 */
import { Grain, t } from '@ringgrain/core';
import type { GrainDef } from '@ringgrain/core/types';
import {
  HOST_SENDER,
  Ring,
  RingConsumer,
  RingProducer,
  SLOT,
  SlotWriter,
  laneOfKey,
  ringBytes,
} from '@ringgrain/core/backend';
import { validateColumns } from '../packages/core/src/bulk.ts';
import { compileRowWriter } from '../packages/core/src/row-writer.ts';
import { compileRowLoop } from '../packages/core/src/row-codegen.ts';
import { fixedWriter } from '../packages/core/src/tell-image.ts';
import { columnImageFields, packColumnImage } from '../packages/core/src/column-image.ts';
import { median } from './trials.ts';

class Acct extends Grain({
  name: 'Acct',
  module: import.meta.url,
  state: t.struct({ balance: t.f64 }),
  methods: { deposit: { request: t.struct({ amount: t.f64 }) } },
}) {
  deposit(s: { balance: number }, m: { amount: number }): void {
    s.balance += m.amount;
  }
}

const CAP = 1 << 16;
const SLOT_SIZE = 128;

/** ns per item of `fn(n)` over n items: median of 5 timed runs after 2 warm-ups. */
function perItem(n: number, fn: () => void): number {
  const runs: number[] = [];
  for (let r = 0; r < 7; r++) {
    const t0 = performance.now();
    fn();
    if (r >= 2) runs.push(((performance.now() - t0) * 1e6) / n);
  }
  return median(runs);
}

export function hostPathSteps(): Record<string, number> {
  const def = Acct.grain as GrainDef;
  const method = def.methodByName.get('deposit')!;
  const ring = Ring.format(new SharedArrayBuffer(ringBytes(CAP, SLOT_SIZE)), 0, CAP, SLOT_SIZE, { zeroed: true });
  const producer = new RingProducer(ring);
  const consumer = new RingConsumer(ring);
  // Frees every slot (as a consumer would) between runs: only the producer's side is timed.
  const empty = () => {
    while (consumer.peek() >= 0) consumer.skip();
    consumer.publishTail();
  };
  const n = CAP;
  const key = new Int32Array(n).map((_, i) => 20_000 + (i & 1023));
  const amount = new Float64Array(n).fill(1);
  const cols = { key, amount } as Record<string, ArrayLike<unknown>>;
  const out: Record<string, number> = {};

  out['tellMany: validate columns (Int32Array key, Float64Array f64), per row'] = perItem(n, () =>
    validateColumns('Acct.deposit', method, false, cols),
  );

  const write = compileRowWriter(method, 0, key, cols, ring.payloadCapacity)!;
  out['tellMany rows BEFORE: closure row writer + claim/publishSeq per slot, per row'] = perItem(n, () => {
    for (let i = 0; i < n; i++) {
      const slot = producer.claim();
      write(ring.i32, ring.dv, slot, i, 1234.5);
      producer.publishSeq(slot);
    }
    producer.flushHead();
    empty();
  });
  const loop = compileRowLoop(method, 0, key, cols, ring.payloadCapacity, false)!;
  const colList = [amount];
  out['tellMany rows AFTER: generated row loop + chunked claim (reserve/claimNext/publishReserved), per row'] = perItem(
    n,
    () => {
      if (loop([producer], key, colList, 0, n, 1234.5, 0) !== n) throw new Error('row loop stopped early');
      empty();
    },
  );

  // Four lanes (the CUDA backend's default host lanes): each row's lane from its key, a claim per slot.
  const lanes = Array.from({ length: 4 }, () =>
    Ring.format(new SharedArrayBuffer(ringBytes(CAP, SLOT_SIZE)), 0, CAP, SLOT_SIZE, { zeroed: true }),
  );
  const laneProducers = lanes.map((r) => new RingProducer(r));
  const laneConsumers = lanes.map((r) => new RingConsumer(r));
  const emptyLanes = () => {
    for (const c of laneConsumers) {
      while (c.peek() >= 0) c.skip();
      c.publishTail();
    }
  };
  out['tellMany rows, 4 lanes BEFORE: closure row writer + laneOfKey + claim/publishSeq, per row'] = perItem(n, () => {
    for (let i = 0; i < n; i++) {
      const p = laneProducers[laneOfKey(key[i]!, 4)]!;
      const slot = p.claim();
      write(p.ring.i32, p.ring.dv, slot, i, 1234.5);
      p.publishSeq(slot);
    }
    for (const p of laneProducers) p.flushHead();
    emptyLanes();
  });
  out[
    'tellMany rows, 4 lanes AFTER: generated row loop (chunks of 256 rows sorted by lane, one reserve per ' +
      'lane), per row'
  ] = perItem(n, () => {
    if (loop(laneProducers, key, colList, 0, n, 1234.5, 0) !== n) throw new Error('row loop stopped early');
    emptyLanes();
  });

  const fields = columnImageFields(method, 0)!;
  out['tellMany column image: the columns packed into one image (no slot per row), per row'] = perItem(n, () => {
    if (packColumnImage(fields, { grainId: 0, method: method.id, key, cols, from: 0, to: n }).byteLength === 0)
      throw new Error('empty image');
  });
  out['tellMany: rows AFTER / column image, host ns per row ratio (x)'] =
    out['tellMany rows AFTER: generated row loop + chunked claim (reserve/claimNext/publishReserved), per row']! /
    out['tellMany column image: the columns packed into one image (no slot per row), per row']!;

  const writer = new SlotWriter();
  const payload = { amount: 1 };
  out['single tell BEFORE: general encoder (header object, compiled encoder) + claim/publish, per message'] = perItem(
    n,
    () => {
      for (let i = 0; i < n; i++) {
        const slot = producer.claim();
        writer.write(
          ring,
          slot,
          { method: method.id, flags: 0, corr: 0, keyLo: key[i]! >>> 0, keyHi: 0, sender: HOST_SENDER, grain: 0 },
          method.request,
          payload,
          'Acct',
          'deposit',
        );
        ring.dv.setFloat64(slot + SLOT.time, 1234.5, true);
        producer.publish(slot);
      }
      empty();
    },
  );
  const fixed = fixedWriter(method, 0, ring.payloadCapacity)!;
  out['single tell AFTER: fixed image (checked fields, patched words) + claim/publish, per message'] = perItem(
    n,
    () => {
      for (let i = 0; i < n; i++) {
        const slot = producer.claim();
        if (!fixed(ring.i32, ring.dv, ring.u8, slot, payload, key[i]!, 0, 1234.5))
          throw new Error('fixed image refused a valid payload');
        producer.publish(slot);
      }
      empty();
    },
  );

  // The consumer's take, on a full ring published once (the payload is not decoded here).
  const fill = () => {
    if (loop([producer], key, colList, 0, n, 1234.5, 0) !== n) throw new Error('row loop stopped early');
  };
  const takeRelease = () => {
    fill();
    const t0 = performance.now();
    for (let slot = consumer.peek(); slot >= 0; slot = consumer.peek()) consumer.release();
    return performance.now() - t0;
  };
  const takeBatch = () => {
    fill();
    const t0 = performance.now();
    for (;;) {
      let k = 0;
      for (; k < 64 && consumer.peek() >= 0; k++) consumer.skip();
      if (k === 0) break;
      consumer.publishTail();
    }
    return performance.now() - t0;
  };
  const timed = (f: () => number) => {
    const runs: number[] = [];
    for (let r = 0; r < 7; r++) {
      const ms = f();
      if (r >= 2) runs.push((ms * 1e6) / n);
    }
    return median(runs);
  };
  out['consumer take BEFORE: peek + release (tail store) per slot'] = timed(takeRelease);
  out['consumer take AFTER: peek + skip, tail published once per 64 (batch take)'] = timed(takeBatch);
  return out;
}
