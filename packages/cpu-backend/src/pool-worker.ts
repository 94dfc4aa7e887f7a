import { receiveMessageOnPort, workerData, type MessagePort } from 'node:worker_threads';
import { loadGrainClasses, type GrainDef } from '@ringgrain/core/backend';
import type { LaneReader, LaneReaderSpec } from '@ringgrain/core/store';
import { Dispatcher } from './dispatcher.ts';
import { loadedGrain, type LoadedGrain } from './grain-load.ts';
import type { PeerInfo } from './memory.ts';
import { SpinPolicy } from './spin-policy.ts';
import {
  REMOTE_FIELDS,
  SPIN_MIN_MS,
  THREAD_EXITING,
  THREAD_STAT,
  type FromThread,
  type LaneInit,
  type StateOut,
  type ThreadInit,
  type ToThread,
} from './protocol.ts';

/**
 * A pool thread: consumes one lane of every CPU kernel (pool.ts), one Dispatcher per lane, round robin.
 * The loop never yields to the event loop while it runs, so control messages arrive on a port polled
 * with receiveMessageOnPort; adding a lane (an async module import) leaves the loop for a moment.
 * When every lane is idle it spins a while (adaptive: spin-policy.ts), then parks on the thread's doorbell
 * with its parked flag set, so producers ring it.
 */
const { init, port } = workerData as { init: ThreadInit; port: MessagePort };
const doorbell = new Int32Array(init.doorbell.buffer);
const bell = init.doorbell.index;
const parkedFlag = init.doorbell.parked!;
// The host's first news of this thread's end (protocol.ts THREAD_EXITING).
process.on('exit', (code) => Atomics.store(doorbell, bell + THREAD_EXITING, (code | 0) + 1));
/** The idle spin window (adaptive: spin-policy.ts). */
const spin = new SpinPolicy(Math.min(SPIN_MIN_MS, init.spinMaxMs), init.spinMaxMs);
/** While spinning idle, the port is read this often (ms) rather than every pass (receiveMessageOnPort is not free). */
const IDLE_POLL_MS = 0.02;
const stats = { parks: 0, woken: 0, wokenSoon: 0 };
const lanes = new Map<number, Dispatcher>();
/**
 * Lanes that acknowledged STOP: they take no messages but still answer state requests until removed
 * (write-behind's final flush).
 */
const stopped = new Map<number, Dispatcher>();
let peers: PeerInfo[] = [];
const adds: Array<Extract<ToThread, { type: 'add' }>> = [];

/**
 * Cross-silo K2K sends of the current pass (protocol.ts 'remoteSends'): posted as one message per pass
 * (or per REMOTE_BATCH sends), not one per send: a structured clone and a host callback (with its
 * microtask checkpoint) per send was the cost of every cross-silo K2K send. Numbers in a typed array, each
 * payload as the schema bytes the send encoded (the host routes them as they are), both transferred:
 * posting a flat array of values and payload objects cost a value by value clone each way and an encode
 * again at the host. Any other post flushes them first, so the host sees everything in the order the
 * thread made it.
 */
const REMOTE_BATCH = 4096;
const remote = new Float64Array(REMOTE_BATCH * REMOTE_FIELDS);
let remoteCount = 0;
let remoteMethods: string[] = [];
const remoteMethodIndex = new Map<string, number>();
let remoteKeys: string[] = [];
let remoteBytes = new Uint8Array(64 * 1024);
let remoteEnd = 0;

function flushRemote(): void {
  // Copies of just what the pass used, transferred; the batch buffers stay for the next pass.
  const sends = remote.slice(0, remoteCount * REMOTE_FIELDS);
  const bytes = remoteBytes.slice(0, remoteEnd);
  const m = { type: 'remoteSends', sends, methods: remoteMethods, keys: remoteKeys, bytes } satisfies FromThread;
  remoteCount = remoteEnd = 0;
  remoteMethods = [];
  remoteMethodIndex.clear();
  remoteKeys = [];
  port.postMessage(m, [sends.buffer as ArrayBuffer, bytes.buffer as ArrayBuffer]);
}

/** One cross-silo K2K send into the batch; `bytes`: its payload's schema bytes (copied: a view of scratch). */
function remoteSend(
  kernelId: number,
  target: number,
  method: string,
  key: number | string,
  bytes: Uint8Array,
  corr: number,
): void {
  if (remoteEnd + bytes.length > remoteBytes.length) {
    if (remoteCount) flushRemote();
    if (bytes.length > remoteBytes.length) remoteBytes = new Uint8Array(bytes.length * 2);
  }
  const n = bytes.length;
  const rb = remoteBytes;
  if (n <= 64) for (let i = 0; i < n; i++) rb[remoteEnd + i] = bytes[i]!;
  else rb.set(bytes, remoteEnd);
  remoteEnd += n;
  let mi = remoteMethodIndex.get(method);
  if (mi === undefined) {
    remoteMethodIndex.set(method, (mi = remoteMethods.length));
    remoteMethods.push(method);
  }
  const at = remoteCount * REMOTE_FIELDS;
  remote[at] = kernelId;
  remote[at + 1] = target;
  remote[at + 2] = mi;
  if (typeof key === 'string') {
    remote[at + 3] = Number.NaN;
    remoteKeys.push(key);
  } else remote[at + 3] = key;
  remote[at + 4] = remoteEnd;
  remote[at + 5] = corr;
  if (++remoteCount === REMOTE_BATCH) flushRemote();
}

function post(m: FromThread): void {
  if (remoteCount) flushRemote();
  port.postMessage(m);
}

/**
 * Reads the port; returns whether something needs the event loop (an add). Reading stops at an add, so
 * the messages after it (a newer peer list) apply after it, in the order they were sent.
 */
function poll(): boolean {
  if (adds.length) return true;
  for (let m = receiveMessageOnPort(port); m; m = receiveMessageOnPort(port)) {
    const msg = m.message as ToThread;
    if (msg.type === 'add') {
      adds.push(msg);
      return true;
    }
    if (msg.type === 'peers') {
      peers = msg.peers;
      for (const d of lanes.values()) d.setPeers(peers);
    } else if (msg.type === 'remove') {
      lanes.delete(msg.kernelId);
      relist();
      stopped.delete(msg.kernelId);
      post({ type: 'removed', kernelId: msg.kernelId });
    } else if (msg.type === 'inspect') {
      post({
        type: 'inspect',
        id: msg.id,
        value: (lanes.get(msg.kernelId) ?? stopped.get(msg.kernelId))?.inspect(msg.key),
      });
    } else if (msg.type === 'state') {
      // Queued: it runs between turns (this poll may be inside a handler's K2K send).
      (lanes.get(msg.kernelId) ?? stopped.get(msg.kernelId))?.queueOp(msg.op);
    }
  }
  return false;
}

async function loadLane(l: LaneInit, lanePeers: PeerInfo[]): Promise<Dispatcher> {
  const defsById: Array<GrainDef | undefined> = [];
  let self: LoadedGrain | undefined;
  for (const [id, g] of l.grains.entries()) {
    if (!g) {
      defsById.push(undefined);
      continue;
    }
    // The module may also be a whole program (grain and system in one file): loadGrainClasses keeps its
    // system from starting here and takes the class it registered. Imports are cached per thread.
    const [cls] = await loadGrainClasses(g.module, { names: [g.name] });
    defsById.push(cls!.grain as GrainDef);
    if (id === l.grainId)
      self = loadedGrain(cls!, (method) => new Error(`class ${g.name} has no handler method "${method}"`));
  }
  if (!self) throw new Error(`grain id ${l.grainId} is not in the plan`);
  const kernelId = l.kernelId;
  const ll = l.persistence?.laneLoad;
  // A reader that cannot open here leaves every load to the host (the same outcome, one hop slower).
  const reader = ll && (await openLaneReader(ll.reader).catch(() => undefined));
  const laneLoad = ll && reader && { reader, guard: ll.guard };
  const persistence = l.persistence && {
    ...l.persistence,
    laneLoad,
    emit: (out: StateOut) => post({ type: 'state', kernelId, out }),
  };
  // The K2K sender hands the payload's bytes (a view of its scratch slot, valid during the call).
  const laneRemoteSend = l.remoteSends
    ? (target: number, method: string, key: number | string, payload: unknown, corr: number) =>
        remoteSend(kernelId, target, method, key, payload as Uint8Array, corr)
    : undefined;
  const d = new Dispatcher({
    ...l,
    self,
    defsById,
    replySignal: init.replySignal,
    peers: lanePeers,
    persistence,
    remoteSend: laneRemoteSend,
    remoteBytes: true,
  });
  d.pollControl = () => void poll();
  return d;
}

/** A store's reader for this thread; readers of one store are shared by the thread's lanes. */
const readers = new Map<string, LaneReader>();
async function openLaneReader(spec: LaneReaderSpec): Promise<LaneReader> {
  const id = `${spec.module} ${JSON.stringify(spec.options)}`;
  let r = readers.get(id);
  if (!r) {
    const mod = (await import(spec.module)) as { openLaneReader: (options: unknown) => LaneReader };
    r = mod.openLaneReader(spec.options);
    readers.set(id, r);
  }
  return r;
}

/**
 * The running lanes as an array (the loop's passes iterate it: no iterator objects per pass); rebuilt when
 * `lanes` changes.
 */
let active: Dispatcher[] = [];
let activeIds: number[] = [];
function relist(): void {
  active = [...lanes.values()];
  activeIds = [...lanes.keys()];
}

/** Whether a lane (or a stopped lane's state request) has something a pass would take: loads only, no stores. */
function anyInput(): boolean {
  for (let i = 0; i < active.length; i++) if (active[i]!.hasInput()) return true;
  if (stopped.size) for (const d of stopped.values()) if (d.hasOps()) return true;
  return false;
}

/** Idle spin checks between two clock reads (a check is a few loads; the clock read costs more). */
const CHECKS_PER_CLOCK = 16;
/** Pause steps after each idle check that found nothing (CpuBackendOptions.spinPause). */
const PAUSE = init.spinPause ?? 0;
let paced = 1;
/**
 * JavaScript's stand-in for a pause instruction: `steps` dependent divisions, each waiting on the one
 * before (tens of cycles, two instructions), so the core's other hyperthread and its power budget go to
 * threads with work. `paced` converges to 0.01 (no subnormals); kept so the loop is not optimized away.
 */
function pace(steps: number): void {
  let x = paced;
  for (let i = 0; i < steps; i++) x = x / 1.0000001 + 1e-9;
  paced = x;
}

/** Runs the lanes until an add needs the event loop. */
function run(): void {
  let lastPoll = 0;
  let heldBefore = 0;
  let holdWait = HOLD_WAIT_MIN_MS;
  let stalledSince = 0;
  for (;;) {
    let did = 0;
    let holding = false;
    let held = 0;
    let gone = false;
    for (let i = 0; i < active.length; i++) {
      const d = active[i]!;
      const n = d.step();
      if (n < 0) {
        // STOP acknowledged: the lane takes no more messages (the host removes it; until then it only
        // answers state requests).
        lanes.delete(activeIds[i]!);
        stopped.set(activeIds[i]!, d);
        gone = true;
        continue;
      }
      did += n;
      holding ||= d.holdsOverflow;
      held += d.heldOverflow;
    }
    if (gone) relist();
    if (stopped.size) for (const d of stopped.values()) if (d.hasOps()) did += d.serviceOps() + 1;
    if (remoteCount) flushRemote();
    let now = performance.now();
    if (now - lastPoll > 1) {
      lastPoll = now;
      if (poll()) return;
    }
    // Held K2K overflow that moves (its target consumes) keeps the thread spinning, and so does overflow
    // stalled for less than HOLD_SPIN_MS (a busy target frees room soon). Overflow stalled longer (a
    // deactivated or stopped target, which rings no doorbell when it frees room) is retried from a timed
    // park whose wait doubles from HOLD_WAIT_MIN_MS to HOLD_WAIT_MAX_MS, instead of spinning a core until
    // the target runs again.
    const moved = held < heldBefore;
    heldBefore = held;
    if (did > 0 || moved) {
      stalledSince = 0;
      holdWait = HOLD_WAIT_MIN_MS;
      continue;
    }
    if (holding) {
      if (stalledSince === 0) stalledSince = now;
      if (now - stalledSince < HOLD_SPIN_MS) continue;
      park(holdWait);
      holdWait = Math.min(holdWait * 2, HOLD_WAIT_MAX_MS);
      continue;
    }
    stalledSince = 0;
    // Idle: spin on the lanes' input words (loads only: no counter stores, no ring writes, so a spinning
    // thread leaves the lines producers and the host use alone) until input shows up or the window
    // (adaptive: spin-policy.ts) runs out, then park. The port is read every IDLE_POLL_MS meanwhile.
    const idleSince = now;
    let lastPass = now;
    let found = false;
    for (;;) {
      for (let k = 0; k < CHECKS_PER_CLOCK && !found; k++) {
        found = anyInput();
        if (PAUSE !== 0 && !found) pace(PAUSE);
      }
      if (found) break;
      now = performance.now();
      spin.pass(now - lastPass, now);
      lastPass = now;
      if (now - lastPoll > IDLE_POLL_MS) {
        lastPoll = now;
        if (poll()) return;
      }
      if (now - idleSince >= spin.windowMs) break;
    }
    if (found) continue;
    park();
    lastPoll = 0;
  }
}

/** Held K2K overflow that has not moved for this long (ms) stops the spinning (see run). */
const HOLD_SPIN_MS = 2;
/** Milliseconds between retries of held K2K overflow that stopped moving (see run): the first, the most. */
const HOLD_WAIT_MIN_MS = 0.05;
const HOLD_WAIT_MAX_MS = 1;

/**
 * Sleeps on the doorbell; producers (the host, other threads' K2K sends) see the thread's parked flag
 * after publishing and ring it. The flag is set before every lane is looked at once more, and producers
 * publish before they load it (both sequentially consistent): either the look finds the message or its
 * producer finds the flag.
 */
function park(maxWaitMs?: number): void {
  const seen = Atomics.load(doorbell, bell);
  Atomics.store(doorbell, parkedFlag, 1);
  let ready = false;
  // With held overflow (maxWaitMs given) the wait is the retry: only other work cuts it short.
  for (const d of lanes.values()) ready ||= maxWaitMs === undefined ? d.hasWork() : d.hasInput();
  for (const d of stopped.values()) ready ||= d.hasOps();
  // A lane with timers by its own clock wakes itself when the next tick is due.
  let waitMs = maxWaitMs ?? 1000;
  for (const d of lanes.values()) waitMs = Math.min(waitMs, d.timerWaitMs());
  if (!ready && waitMs > 0 && !poll()) {
    const t0 = performance.now();
    const r = Atomics.wait(doorbell, bell, seen, waitMs);
    const slept = performance.now() - t0;
    stats.parks++;
    if (r !== 'timed-out') stats.woken++;
    if (r !== 'timed-out' && slept < spin.maxMs) stats.wokenSoon++;
    // The held-overflow retry park (maxWaitMs given) says nothing about how soon work comes.
    if (maxWaitMs === undefined) spin.parked(r !== 'timed-out', slept, t0 + slept);
    Atomics.store(doorbell, bell + THREAD_STAT.parks, stats.parks);
    Atomics.store(doorbell, bell + THREAD_STAT.woken, stats.woken);
    Atomics.store(doorbell, bell + THREAD_STAT.wokenSoon, stats.wokenSoon);
    Atomics.store(doorbell, bell + THREAD_STAT.spinUs, Math.round(spin.windowMs * 1000));
    Atomics.store(doorbell, bell + THREAD_STAT.preempted, spin.preempted);
  }
  Atomics.store(doorbell, parkedFlag, 0);
}

async function main(): Promise<void> {
  post({ type: 'ready' });
  for (;;) {
    run();
    if (remoteCount) flushRemote();
    while (adds.length) {
      const { lane, peers: given } = adds.shift()!;
      peers = given;
      try {
        const d = await loadLane(lane, peers);
        d.begin(lane.resume === true);
        lanes.set(lane.kernelId, d);
        relist();
        for (const other of lanes.values()) other.setPeers(peers);
        post({ type: 'added', kernelId: lane.kernelId });
      } catch (e) {
        const err = e as { message?: string; code?: string };
        post({
          type: 'fatal',
          kernelId: lane.kernelId,
          message: err?.message ?? String(e),
          ...(err?.code ? { code: err.code } : {}),
        });
      }
    }
  }
}

main().catch((e: unknown) => {
  // Nothing above throws out of main; if it does, the thread ends and the host sees the exit.
  console.error(e);
  process.exit(1);
});
