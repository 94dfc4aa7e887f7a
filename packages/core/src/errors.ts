/**
 * Every error Ringgrain throws carries a stable `code`, a `hint` saying what to do, and the `cause`
 * when one exists, so callers can branch on codes and people can act on messages.
 */
export interface ErrorOptions {
  hint?: string;
  cause?: unknown;
}

export class RinggrainError extends Error {
  readonly code: string;
  readonly hint: string | undefined;

  constructor(code: string, message: string, opts: ErrorOptions = {}) {
    super(
      opts.hint ? `${message}\n  hint: ${opts.hint}` : message,
      opts.cause === undefined ? undefined : { cause: opts.cause },
    );
    this.name = new.target.name;
    this.code = code;
    this.hint = opts.hint;
  }
}

/** A schema definition itself is invalid (e.g. an array length of 0). */
export class SchemaDefinitionError extends RinggrainError {
  constructor(message: string, opts: ErrorOptions = {}) {
    super('SCHEMA_DEFINITION', message, opts);
  }
}

/** A payload does not match its schema; `path` is the zod issue path. */
export class SchemaValidationError extends RinggrainError {
  readonly path: ReadonlyArray<PropertyKey>;
  /** What is wrong at `path`, without the where and the path (a handler's reply error words it itself). */
  readonly detail: string;
  constructor(where: string, path: ReadonlyArray<PropertyKey>, detail: string, opts: ErrorOptions = {}) {
    const at = path.length ? path.map(String).join('.') : '(root)';
    super('SCHEMA_VALIDATION', `${where}: invalid payload at "${at}": ${detail}`, {
      hint: "send a payload that matches the method's request schema",
      ...opts,
    });
    this.path = path;
    this.detail = detail;
  }
}

/**
 * An ask's `into` (caller-owned arrays the reply's numeric array fields are decoded into) does not fit:
 * a field the reply does not have as a numeric array, an array of another kind (at the call), or one
 * shorter than the reply's (the ask rejects; the actor's turn ran).
 */
export class ReplyTargetError extends RinggrainError {
  readonly field: string;
  constructor(field: string, detail: string, opts: ErrorOptions = {}) {
    super('REPLY_TARGET', `reply into caller arrays: ${detail}`, {
      hint:
        "pass in `into` only the reply's numeric array fields, each as its kind's typed array (f32: " +
        'Float32Array, …) long enough for the longest reply',
      ...opts,
    });
    this.field = field;
  }
}

/** Bytes taken from a ring are not a valid message for the schema (malformed or hostile input). */
export class DecodeError extends RinggrainError {
  constructor(message: string, opts: ErrorOptions = {}) {
    super('DECODE', message, {
      hint: 'only write to rings through the typed API; the message was rejected and counted',
      ...opts,
    });
  }
}

export class PayloadTooLargeError extends RinggrainError {
  /** `headerBytes`: the slot header the payload shares its slot with (protocol.ts SLOT_HEADER_SIZE). */
  constructor(where: string, needed: number, capacity: number, headerBytes: number) {
    super('PAYLOAD_TOO_LARGE', `${where}: encoded payload needs ${needed} bytes but a slot holds ${capacity}`, {
      hint:
        `raise slotSize to at least ${Math.ceil((needed + headerBytes) / 16) * 16} (header included, a ` +
        `multiple of 16) in the grain's placement options, or send smaller messages`,
    });
  }
}

export class UnknownGrainError extends RinggrainError {
  constructor(name: string) {
    super('UNKNOWN_GRAIN', `grain class "${name}" is not registered with this system`, {
      hint: 'call system.register(GrainClass, { placement }) before sending to it',
    });
  }
}

export class UnknownMethodError extends RinggrainError {
  constructor(grain: string, method: string | number) {
    super('UNKNOWN_METHOD', `grain "${grain}" has no method ${JSON.stringify(method)}`, {
      hint: "use one of the methods declared in the grain's spec",
    });
  }
}

/** A value a caller passed, for a message: JSON where it has one (a bigint or a cycle has none: no TypeError here). */
/** A value in a message: JSON, except what JSON shows as null (NaN, ±Infinity) or cannot show (bigint). */
export function showValue(v: unknown): string {
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  if (v === undefined) return 'undefined';
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

export class InvalidKeyError extends RinggrainError {
  constructor(grain: string, key: unknown, expected: string) {
    super('INVALID_KEY', `grain "${grain}" got key ${showValue(key)}; expected ${expected}`, {
      hint:
        'integer keys must be safe integers; string keys are used when the spec says key: "string" ' +
        '(non-empty for a class with storage)',
    });
  }
}

export class InvalidTransitionError extends RinggrainError {
  constructor(grain: string, from: string, action: string) {
    super('INVALID_TRANSITION', `kernel "${grain}" cannot ${action} while ${from}`, {
      hint:
        'lifecycle: Created → Launched → Active ⇄ Deactivated → Terminated; a Terminated kernel can be ' +
        'launched again',
    });
  }
}

export class KernelTerminatedError extends RinggrainError {
  constructor(grain: string, detail = 'the kernel was terminated') {
    super('KERNEL_TERMINATED', `grain "${grain}": ${detail}`, {
      hint: 'launch the kernel again (system.launch) before sending to it',
    });
  }
}

export class KernelNotRunningError extends RinggrainError {
  constructor(grain: string, state: string) {
    super('KERNEL_NOT_RUNNING', `grain "${grain}" kernel is ${state}; messages need a launched kernel`, {
      hint: 'call system.start() or system.launch(Grain) first',
    });
  }
}

export class QueueFullError extends RinggrainError {
  constructor(grain: string, waitedMs: number) {
    super('QUEUE_FULL', `grain "${grain}": inbound ring stayed full for ${waitedMs} ms; the message was not sent`, {
      hint: 'the kernel is slower than its senders: await asks, raise ringCapacity, or raise queueFullTimeoutMs',
    });
  }
}

/** Sends waiting for a full ring reached their bound in bytes (SystemOptions.maxQueuedBytes): this one was not sent. */
export class QueueLimitError extends RinggrainError {
  readonly waiting: number;
  constructor(grain: string, waiting: number, bytes: number, maxBytes: number) {
    super(
      'QUEUE_LIMIT',
      `grain "${grain}": ${waiting} sends (${bytes} bytes) already wait for its full ring, the limit ` +
        `is ${maxBytes} bytes; the message was not sent`,
      {
        hint:
          "the sender outruns the kernel: await sends or asks so the loop yields to the kernel's pace, or " +
          'raise maxQueuedBytes in the system options; the waiting sends are kept and go in order',
      },
    );
    this.waiting = waiting;
  }
}

/** A GrainSystem option is out of range. */
export class SystemOptionsError extends RinggrainError {
  constructor(detail: string) {
    super('SYSTEM_OPTIONS', `GrainSystem: ${detail}`, {
      hint: "see SystemOptions for each option's range, or leave it out for its default",
    });
  }
}

/** The handler threw; the message is the handler's own message. */
export class HandlerError extends RinggrainError {
  readonly grain: string;
  readonly method: string;
  /** The handler's own message (what it threw), without the `Grain.method failed: ` this error's message adds. */
  readonly detail: string;
  constructor(grain: string, method: string, message: string) {
    super('HANDLER', `${grain}.${method} failed: ${message}`);
    this.grain = grain;
    this.method = method;
    this.detail = message;
  }
}

/** An actor could not be activated: every slot of its kernel's actor table is taken (not the handler's fault). */
export class StateTableFullError extends RinggrainError {
  readonly maxActors: number;
  constructor(grain: string, maxActors: number) {
    super('STATE_TABLE_FULL', `grain "${grain}": all ${maxActors} actor slots are taken`, {
      hint: "raise maxActors in the grain's placement options, or let idle actors go (storage idleMs)",
    });
    this.maxActors = maxActors;
  }
}

export class KernelFaultError extends RinggrainError {
  constructor(grain: string, detail: string, opts: ErrorOptions = {}) {
    super('KERNEL_FAULT', `grain "${grain}" kernel faulted: ${detail}`, {
      hint: 'the kernel was marked faulted; terminate it and launch it again',
      ...opts,
    });
  }
}

export class AskTimeoutError extends RinggrainError {
  constructor(grain: string, method: string, ms: number) {
    super('ASK_TIMEOUT', `${grain}.${method}: no reply within ${ms} ms`, {
      hint: "the handler may be stuck; raise askTimeoutMs or check the kernel's heartbeat",
    });
  }
}

export class BackendUnavailableError extends RinggrainError {
  constructor(
    backend: string,
    reason: string,
    hint = 'use placement "auto" to fall back to the CPU backend, or install the driver',
  ) {
    super('BACKEND_UNAVAILABLE', `backend "${backend}" is unavailable: ${reason}`, { hint });
  }
}

export class PlacementError extends RinggrainError {
  constructor(message: string, opts: ErrorOptions = {}) {
    super('PLACEMENT', message, opts);
  }
}

export class RingError extends RinggrainError {
  constructor(message: string, opts: ErrorOptions = {}) {
    super('RING', message, opts);
  }
}

/** system.idle() gave up: messages were still in flight after the timeout (what did not balance is named). */
/** askMany: some of its asks failed; the first failure (its row and error) is the cause. */
export class AskManyError extends RinggrainError {
  readonly row: number;
  readonly failedRows: number;
  constructor(where: string, row: number, failedRows: number, rows: number, cause: Error) {
    super(
      'ASK_MANY',
      `${where}: ${failedRows} of ${rows} asks failed; the first, row ${row}: ${cause.message.split('\n')[0]}`,
      {
        hint:
          'the cause says what failed (a handler error, a timeout, a full ring); the other rows were ' +
          'answered but are not returned',
        cause,
      },
    );
    this.row = row;
    this.failedRows = failedRows;
  }
}

export class IdleTimeoutError extends RinggrainError {
  readonly unbalanced: readonly string[];
  constructor(timeoutMs: number, unbalanced: readonly string[]) {
    super('IDLE_TIMEOUT', `system.idle(): still busy after ${timeoutMs} ms: ${unbalanced.join('; ')}`, {
      hint:
        'a handler may be sending forever (a K2K cycle) or a kernel is deactivated with messages waiting; ' +
        'raise timeoutMs or look at system.metrics()',
    });
    this.unbalanced = unbalanced;
  }
}
