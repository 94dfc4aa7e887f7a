import { RinggrainError } from '@ringgrain/core';
import type { ErrorOptions } from '@ringgrain/core/errors';

/** The NATS server could not be reached, refused the credentials, or has no JetStream. */
export class NatsConnectError extends RinggrainError {
  constructor(servers: string, detail: string, opts: ErrorOptions = {}) {
    super('NATS_CONNECT', `cluster: cannot use NATS at ${servers}: ${detail}`, {
      hint:
        'start nats-server with JetStream (-js) and pass its URL and credentials (user/pass or token) to ' +
        'natsCluster()',
      ...opts,
    });
  }
}

/** A frame on this silo's subject that does not decode as a Ringgrain frame: refused and counted. */
export class MalformedFrameError extends RinggrainError {
  constructor(detail: string, opts: ErrorOptions = {}) {
    super('MALFORMED_FRAME', `cluster: a frame was refused: ${detail}`, {
      hint: 'only silos and clients of this cluster should publish to its subjects; check who holds its credentials',
      ...opts,
    });
  }
}

/** nats-server is not installed (or not on PATH / NATS_SERVER_BIN). */
export class NatsServerMissingError extends RinggrainError {
  constructor(detail: string) {
    super('NATS_SERVER_MISSING', `nats-server is not available: ${detail}`, {
      hint:
        'install it (Debian/Ubuntu: apt-get install -y nats-server) or set NATS_SERVER_BIN to its path; or ' +
        'pass --nats URL of a running server',
    });
  }
}
