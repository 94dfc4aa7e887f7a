/**
 * The K2K batch claim (k2k-outbox.ts flushOutbox, issue 37): a sender claims slots in another thread's K2K
 * ring with one CAS on the head it saw last, and a guess that other senders made stale fails and is
 * retried at the head the CAS returned. Two senders interleave into one ring here, on one thread, so
 * every stale guess happens in a known order: nothing is overwritten, every message lands once, and each
 * sender's messages stay in its order (FIFO per sender → actor), also across a full ring.
 */
import { RING, Ring, RingConsumer, SLOT, type KernelOptions } from '@ringgrain/core/backend';
import { describe, expect, it } from 'vitest';
import { K2KOut } from '../src/k2k-outbox.ts';
import { allocateKernelBuffers, peerInfo, type Doorbell } from '../src/memory.ts';

const SLOT_SIZE = 64;
const CAPACITY = 8;
const TARGET_LANE = 2;

function setup() {
  const options = { slotSize: SLOT_SIZE, ringCapacity: CAPACITY, replyCapacity: 2 } as KernelOptions;
  const buffers = allocateKernelBuffers(options, 3);
  const bells = new SharedArrayBuffer(3 * 128);
  const doorbells: Doorbell[] = [0, 1, 2].map((i) => ({ buffer: bells, index: i * 32, parked: i * 32 + 1 }));
  const peer = peerInfo(7, buffers, doorbells);
  const sender = (lane: number) => {
    const out = new K2KOut(lane, SLOT_SIZE, 4 + lane, { received: 0, k2kReceived: 0, rejected: 0 });
    out.setPeers([peer]);
    return out;
  };
  const ring = new Ring(buffers.sab, buffers.lanes[TARGET_LANE]!.k2k.offset);
  const consumer = new RingConsumer(ring);
  /** One message: the seq word (written by the claim), then who sent it and its number. */
  const send = (out: K2KOut, from: number, n: number) => {
    const end = out.peers.get(7)!.lanes[TARGET_LANE]!;
    out.send(end, Int32Array.of(0, from, n, 0), 0, 4);
  };
  /** Every published message from the tail on, as `from:n`, released. */
  const take = () => {
    const got: string[] = [];
    for (let slot = consumer.peek(); slot >= 0; slot = consumer.peek()) {
      const w = slot >> 2;
      got.push(`${ring.i32[w + 1]}:${ring.i32[w + 2]}`);
      consumer.release();
    }
    return got;
  };
  const head = () => Atomics.load(ring.words, RING.head) >>> 0;
  return { sender, send, take, head, ring };
}

describe('K2K batch claim: one CAS on the head last seen', () => {
  it('interleaved senders with stale guesses: every message once, each sender in order', () => {
    const { sender, send, take, head } = setup();
    const a = sender(0);
    const b = sender(1);
    send(a, 0, 1);
    send(a, 0, 2);
    send(a, 0, 3);
    a.flush();
    send(b, 1, 1);
    send(b, 1, 2);
    b.flush(); // b's guess (0) is stale: the CAS fails and returns 3
    send(a, 0, 4);
    a.flush(); // a's guess (3) is stale: head is 5
    expect(head()).toBe(6);
    expect(take()).toEqual(['0:1', '0:2', '0:3', '1:1', '1:2', '0:4']);
  });

  it('a full ring: the rest is held in order, written once there is room; a guess behind the tail is retried', () => {
    const { sender, send, take, head, ring } = setup();
    const a = sender(0);
    const b = sender(1);
    for (let i = 1; i <= 6; i++) send(b, 1, i);
    b.flush();
    expect(take()).toHaveLength(6); // tail at 6; b's guess stays at 6
    for (let i = 1; i <= 10; i++) send(a, 0, i);
    a.flush(); // a's guess (0) is behind the tail: the head is read; 8 fit (6..13), 2 are held
    expect(a.pending).toBe(2);
    expect(head()).toBe(14);
    expect(take()).toEqual(['0:1', '0:2', '0:3', '0:4', '0:5', '0:6', '0:7', '0:8']);
    send(a, 0, 11); // behind what is held: joins the queue, in order
    expect(a.pending).toBe(3);
    a.flush(); // room again: the held ones go, in order
    expect(a.pending).toBe(0);
    send(b, 1, 7);
    b.flush(); // b's guess (6) is behind the tail (14)
    expect(take()).toEqual(['0:9', '0:10', '0:11', '1:7']);
    expect(head()).toBe(18);
    // Each slot's seq is its index + 1 (what the consumer waits on), so none was written twice.
    for (let i = 14; i < 18; i++) expect(Atomics.load(ring.i32, (ring.slotAt(i) + SLOT.seq) >> 2)).toBe(i + 1);
  });
});
