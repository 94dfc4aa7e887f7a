/** Silo processes for the cluster tests: spawned with tsx, ready once they print READY, killed by the tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { NatsServerHandle } from '@ringgrain/cluster-nats';

export interface SiloProcess {
  readonly id: string;
  readonly child: ChildProcess;
  /** Its stdout after READY (EVICTED lines and the like). */
  output(): string;
  kill(signal: NodeJS.Signals): Promise<void>;
}

const script = fileURLToPath(new URL('./silo-process.ts', import.meta.url));

export function spawnSilo(
  server: NatsServerHandle,
  cluster: string,
  opts: Record<string, number> = {},
  grains: 'counter' | 'fixtures' = 'counter',
  env: Record<string, string> = {},
): Promise<SiloProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: {
      ...process.env,
      RG_NATS_URL: server.url,
      RG_NATS_AUTH: JSON.stringify(server.auth),
      RG_CLUSTER: cluster,
      RG_CLUSTER_OPTS: JSON.stringify(opts),
      RG_GRAINS: grains,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (err = (err + s).slice(-4000)));
  // A bound, not a timing: a silo's start (tsx, NATS, the store) took over 30 s on a 2-core machine with a load
  // average of 17 (a full suite beside other test runs); the same file passed alone in that load.
  const boundS = 90;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`silo process did not start within ${boundS} s:\n${err}`));
    }, boundS * 1000);
    child.on('exit', (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`silo process exited (${code ?? sig}) before READY:\n${err}`));
    });
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (s: string) => {
      out += s;
      const m = /READY (\S+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      resolve({
        id: m[1]!,
        child,
        output: () => out.slice(out.indexOf(m[0]) + m[0].length),
        kill: (signal) =>
          new Promise<void>((done) => {
            if (child.exitCode !== null || child.signalCode !== null) return done();
            child.once('exit', () => done());
            child.kill(signal);
          }),
      });
    });
  });
}
