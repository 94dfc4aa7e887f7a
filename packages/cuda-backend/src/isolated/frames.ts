/**
 * Checks of the frames on the GPU host's IPC channel (protocol.ts): each side reads what arrives through
 * `readFromHost` / `readToHost` and acts only on a frame that passed, so a field of the wrong kind or a batch
 * whose lengths disagree is a GpuHostProtocolError naming the op and the field, never a state written from
 * half a frame. The channel's 'advanced' serialization keeps typed arrays typed, so rows stay Uint8Array.
 */
import type { ActorKey } from '@ringgrain/core/backend';
import { GpuHostProtocolError } from './errors.ts';
import type {
  FromHost,
  GrainRef,
  ToHost,
  WireBatch,
  WireError,
  WireEvicted,
  WakeFrame,
  WirePlan,
  WireUpload,
} from './protocol.ts';

type Obj = Record<string, unknown>;
type Direction = 'from the GPU host' | 'to the GPU host';

/** Reads fields of one frame, each failure naming the frame's direction, op and field. */
class Fields {
  constructor(
    private readonly dir: Direction,
    readonly op: string,
    private readonly o: Obj,
    private readonly at = '',
  ) {}

  fail(field: string, want: string): never {
    const got = shown(this.o[field]);
    throw new GpuHostProtocolError(this.dir, this.op, `${this.at}${field} must be ${want}, got ${got}`);
  }

  bad(detail: string): never {
    throw new GpuHostProtocolError(this.dir, this.op, `${this.at}${detail}`);
  }

  /** A whole number ≥ 0 (request numbers, kernel ids, lengths). */
  count(f: string): number {
    const v = this.o[f];
    return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : this.fail(f, 'a whole number ≥ 0');
  }

  /** Any number but NaN (a deactivation's `before` may be Infinity or Number.MAX_VALUE). */
  number(f: string): number {
    const v = this.o[f];
    return typeof v === 'number' && !Number.isNaN(v) ? v : this.fail(f, 'a number');
  }

  string(f: string): string {
    const v = this.o[f];
    return typeof v === 'string' ? v : this.fail(f, 'a string');
  }

  optionalString(f: string): string | undefined {
    return this.o[f] === undefined ? undefined : this.string(f);
  }

  boolean(f: string): boolean {
    const v = this.o[f];
    return typeof v === 'boolean' ? v : this.fail(f, 'true or false');
  }

  bytes(f: string): Uint8Array {
    const v = this.o[f];
    return v instanceof Uint8Array ? v : this.fail(f, 'a Uint8Array');
  }

  /** Actor keys: integers (the CUDA kernel's) or strings, in order. */
  keys(f: string): ActorKey[] {
    const v = this.o[f];
    if (!Array.isArray(v)) return this.fail(f, 'an array of actor keys');
    for (let i = 0; i < v.length; i++) {
      const k: unknown = v[i];
      if (!(typeof k === 'string' || (typeof k === 'number' && Number.isSafeInteger(k)))) {
        this.bad(`${f}[${i}] must be an integer or string key, got ${JSON.stringify(k)}`);
      }
    }
    return v as ActorKey[];
  }

  object(f: string): Fields {
    const v = this.o[f];
    return isObj(v) ? new Fields(this.dir, this.op, v, `${this.at}${f}.`) : this.fail(f, 'an object');
  }

  has(f: string): boolean {
    return this.o[f] !== undefined;
  }

  get raw(): Obj {
    return this.o;
  }
}

/** What a field held, for a message. */
function shown(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return v.constructor?.name ?? 'an object';
  return `${typeof v} ${JSON.stringify(v)}`;
}

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function kind(v: unknown): string {
  return v === null ? 'null' : typeof v;
}

function open(dir: Direction, raw: unknown): Fields {
  if (!isObj(raw)) throw new GpuHostProtocolError(dir, '?', `a frame must be an object, got ${kind(raw)}`);
  const op = raw['op'];
  if (typeof op !== 'string') {
    throw new GpuHostProtocolError(dir, '?', `a frame must name its op, got ${JSON.stringify(op)}`);
  }
  return new Fields(dir, op, raw);
}

/** Rows of `stride` bytes, one per key: the lengths must agree (a short row would be read past its end). */
function batch(x: Fields): WireBatch {
  const keys = x.keys('keys');
  const bytes = x.bytes('bytes');
  const stride = x.count('stride');
  const need = keys.length * stride;
  if (bytes.length < need) x.bad(`bytes holds ${bytes.length} bytes, ${keys.length} rows of ${stride} need ${need}`);
  return { keys, bytes, stride };
}

/** A reply's value as a readDirty batch (checked where the request was made: only the asker knows the op). */
export function readBatch(raw: unknown): WireBatch {
  const dir = 'from the GPU host';
  if (!isObj(raw)) {
    throw new GpuHostProtocolError(dir, 'reply readDirty', `the value must be a state batch, got ${kind(raw)}`);
  }
  return batch(new Fields(dir, 'reply readDirty', raw));
}

function evicted(x: Fields): WireEvicted {
  const b = batch(x);
  const dirty = x.bytes('dirty');
  if (dirty.length < b.keys.length) x.bad(`dirty holds ${dirty.length} marks for ${b.keys.length} rows`);
  return { ...b, dirty };
}

function upload(x: Fields): WireUpload {
  const b = batch(x);
  const found = x.bytes('found');
  if (found.length < b.keys.length) x.bad(`found holds ${found.length} flags for ${b.keys.length} rows`);
  const m = x.raw['mode'];
  const mode = m === 'load' || m === 'preload' ? m : x.fail('mode', "'load' or 'preload'");
  if (!x.has('failed')) return { ...b, found, mode };
  const f = x.object('failed');
  const failure = f.has('failure') ? f.count('failure') : undefined;
  const failed = { keys: f.keys('keys'), error: f.string('error'), ...(failure === undefined ? {} : { failure }) };
  return { ...b, found, mode, failed };
}

function wireError(x: Fields): WireError {
  return {
    name: x.string('name'),
    code: x.optionalString('code'),
    message: x.string('message'),
    hint: x.optionalString('hint'),
    stack: x.optionalString('stack'),
  };
}

function grainRef(x: Fields): GrainRef {
  return { module: x.string('module'), name: x.string('name') };
}

function plan(x: Fields): WirePlan {
  const grains = x.raw['grains'];
  if (!Array.isArray(grains)) x.fail('grains', 'an array of grain refs');
  const refs = grains.map((g: unknown, i) => {
    if (g === null) return null;
    if (!isObj(g)) return x.bad(`grains[${i}] must be a grain ref or null`);
    return grainRef(new Fields('to the GPU host', x.op, g, `plan.grains[${i}].`));
  });
  const o = x.object('options');
  // Numbers; their ranges are the backend's to check (CudaBackend's own errors say what each must be).
  const options = {
    slotSize: o.number('slotSize'),
    ringCapacity: o.number('ringCapacity'),
    replyCapacity: o.number('replyCapacity'),
    maxActors: o.number('maxActors'),
    turnBudget: o.number('turnBudget'),
  };
  let timers: WirePlan['timers'];
  if (x.has('timers')) {
    const t = x.object('timers');
    const clock = t.raw['clock'];
    timers = { clock: clock === 'kernel' || clock === 'host' ? clock : t.fail('clock', "'kernel' or 'host'") };
  }
  let persistence: WirePlan['persistence'];
  if (x.has('persistence')) {
    const p = x.object('persistence');
    const idleMs = p.raw['idleMs'] === null ? null : p.number('idleMs');
    persistence = { load: p.boolean('load'), idleMs };
  }
  // The options object travels whole (CudaBackend reads only the KernelOptions fields, checked above).
  return {
    grainId: x.count('grainId'),
    grain: grainRef(x.object('grain')),
    grains: refs,
    options: { ...(x.raw['options'] as Obj), ...options },
    ...(timers ? { timers } : {}),
    ...(persistence ? { persistence } : {}),
  };
}

/** A frame the GPU host received, checked; GpuHostProtocolError when it is malformed. */
export function readToHost(raw: unknown): ToHost | WakeFrame {
  const x = open('to the GPU host', raw);
  if (x.op === 'wake') return { op: 'wake', id: x.count('id') };
  const req = x.count('req');
  switch (x.op) {
    case 'create':
      return { op: 'create', req, id: x.count('id'), plan: plan(x.object('plan')) };
    case 'start':
    case 'dispose':
    case 'readDirty':
      return { op: x.op, req, id: x.count('id') };
    case 'inspect': {
      const key = x.raw['key'];
      const ok = typeof key === 'string' || typeof key === 'number';
      return { op: 'inspect', req, id: x.count('id'), key: ok ? key : x.fail('key', 'an actor key') };
    }
    case 'corruptRoute':
      return { op: 'corruptRoute', req, grainId: x.count('grainId') };
    case 'writeStates':
      return { op: 'writeStates', req, id: x.count('id'), upload: upload(x.object('upload')) };
    case 'deactivateIdle':
      return { op: 'deactivateIdle', req, id: x.count('id'), before: x.number('before'), now: x.number('now') };
    case 'shutdown':
      return { op: 'shutdown', req };
    default:
      return x.bad('unknown op');
  }
}

/** The request number of a frame that failed its check, when it has one (the asker is then told why). */
export function frameReq(raw: unknown): number | undefined {
  const req = isObj(raw) ? raw['req'] : undefined;
  return typeof req === 'number' && Number.isSafeInteger(req) ? req : undefined;
}

/** A frame the application received from its GPU host, checked; GpuHostProtocolError when it is malformed. */
export function readFromHost(raw: unknown): FromHost {
  const x = open('from the GPU host', raw);
  switch (x.op) {
    case 'ready':
      return { op: 'ready', pid: x.count('pid') };
    case 'reply': {
      const req = x.count('req');
      if (x.boolean('ok')) return { op: 'reply', req, ok: true, value: x.raw['value'] };
      return { op: 'reply', req, ok: false, error: wireError(x.object('error')) };
    }
    case 'fault':
      return { op: 'fault', id: x.count('id'), error: wireError(x.object('error')) };
    case 'load':
      return { op: 'load', id: x.count('id'), keys: x.keys('keys') };
    case 'evicted':
      return { op: 'evicted', id: x.count('id'), batch: evicted(x.object('batch')) };
    case 'laneLoaded': {
      const keys = x.keys('keys');
      const raw = x.raw['versions'];
      const versions = raw instanceof Float64Array ? raw : x.fail('versions', 'a Float64Array');
      if (versions.length !== keys.length) x.bad(`versions holds ${versions.length} versions for ${keys.length} keys`);
      return { op: 'laneLoaded', id: x.count('id'), keys, versions };
    }
    default:
      return x.bad('unknown op');
  }
}
