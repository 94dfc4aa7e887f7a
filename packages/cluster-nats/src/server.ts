import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { NatsServerMissingError } from './errors.ts';

/** The nats-server binary: NATS_SERVER_BIN, else `nats-server` on PATH (or /usr/sbin), or undefined with why. */
export function findNatsServer(): { path: string; version: string } | { missing: string } {
  const candidates = [
    process.env['NATS_SERVER_BIN'],
    'nats-server',
    '/usr/sbin/nats-server',
    '/usr/bin/nats-server',
  ].filter((x): x is string => !!x);
  for (const c of candidates) {
    const r = spawnSync(c, ['--version'], { encoding: 'utf8' });
    if (r.status === 0) return { path: c, version: r.stdout.trim() };
  }
  return { missing: `no nats-server found (tried ${candidates.join(', ')})` };
}

export interface NatsServerOptions {
  /** 'userpass' (default): a random user and password; 'token': a random token. */
  auth?: 'userpass' | 'token';
  /** A JetStream store directory; default a fresh temp directory, removed at stop(). */
  storeDir?: string;
  /** Port on 127.0.0.1; default a free one the server picks. */
  port?: number;
  /**
   * How long to wait for the server to say it is ready (ms, default 30,000): on a loaded 2-core machine a
   * test file's server once printed nothing within 10 s.
   */
  startMs?: number;
}

export interface NatsServerHandle {
  readonly url: string;
  readonly port: number;
  readonly version: string;
  /** Credentials to pass to natsCluster(): { user, pass } or { token }. */
  readonly auth: { user: string; pass: string } | { token: string };
  readonly process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts a local nats-server with JetStream on 127.0.0.1, with credentials and a temp store (tests, the
 * example). Resolves once it accepts clients; `stop()` ends it and removes what it created.
 */
export async function startNatsServer(opts: NatsServerOptions = {}): Promise<NatsServerHandle> {
  const found = findNatsServer();
  if ('missing' in found) throw new NatsServerMissingError(found.missing);
  const dir = mkdtempSync(join(tmpdir(), 'ringgrain-nats-'));
  const store = opts.storeDir ?? join(dir, 'js');
  const auth =
    opts.auth === 'token'
      ? { token: randomBytes(16).toString('hex') }
      : { user: 'rg', pass: randomBytes(16).toString('hex') };
  // Credentials in a config file, not on the command line (ps would show them).
  const conf = join(dir, 'nats.conf');
  const authConf =
    'token' in auth
      ? `authorization { token: "${auth.token}" }`
      : `authorization { user: "${auth.user}", password: "${auth.pass}" }`;
  writeFileSync(conf, `${authConf}\njetstream { store_dir: "${store}" }\n`, { mode: 0o600 });
  const child = spawn(found.path, ['-a', '127.0.0.1', '-p', String(opts.port ?? -1), '-c', conf], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let log = '';
    const startMs = opts.startMs ?? 30_000;
    const timer = setTimeout(
      () => fail(new Error(`nats-server did not start within ${startMs / 1000} s:\n${log}`)),
      startMs,
    );
    const fail = (e: Error) => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(e);
    };
    child.on('error', fail);
    child.on('exit', (code) => fail(new Error(`nats-server exited (${code}):\n${log}`)));
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (s: string) => {
      log += s;
      const m = /Listening for client connections on [^\s]*:(\d+)/.exec(log);
      if (m && /Server is ready/.test(log)) {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        child.stderr!.removeAllListeners('data');
        child.stderr!.resume();
        resolve(Number(m[1]));
      }
    });
  });
  let stopped: Promise<void> | undefined;
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    version: found.version,
    auth,
    process: child,
    stop: () =>
      (stopped ??= new Promise<void>((resolve) => {
        const done = () => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        };
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once('exit', done);
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 3000).unref();
      })),
  };
}
