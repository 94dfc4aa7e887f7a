import { RinggrainError } from '@ringgrain/core/backend';

/** The plan carries no grain class (it was rebuilt in another process): handlers cannot run here. */
export class InlineNoClassError extends RinggrainError {
  constructor(grain: string) {
    super(
      'INLINE_NO_CLASS',
      `grain "${grain}": the kernel plan carries no grain class, so its handlers cannot run on this thread`,
      {
        hint: 'create inline kernels through GrainSystem.register/start in the same process',
      },
    );
  }
}

/** A handler loop ran on the calling thread and threw outside a turn (the consumer itself failed). */
export class InlineConsumerError extends RinggrainError {
  constructor(grain: string, cause: unknown) {
    super(
      'INLINE_CONSUMER',
      `grain "${grain}": the inline consumer failed: ${(cause as Error)?.message ?? String(cause)}`,
      {
        hint:
          'this is a bug in the consumer, not in a handler (handler errors reject their ask); report it with ' +
          'the stack',
        cause,
      },
    );
  }
}

/** An InlineBackend option is out of range. */
export class InlineBackendOptionsError extends RinggrainError {
  constructor(detail: string) {
    super('INLINE_BACKEND_OPTIONS', `InlineBackend: ${detail}`, {
      hint: 'pass new InlineBackend({ sliceMs }) with sliceMs > 0, or leave it out for 2 ms',
    });
  }
}
