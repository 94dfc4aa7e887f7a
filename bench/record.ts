/** What every benchmark record says about where it ran: the commit and the machine. */
import { execSync } from 'node:child_process';
import os from 'node:os';

/** The commit measured: RG_COMMIT when set (the GPU machine has no .git), else HEAD, else 'unknown'. */
export function commitOf(): string {
  try {
    return (
      process.env['RG_COMMIT'] ??
      execSync('git rev-parse --short HEAD', { stdio: ['ignore', 'pipe', 'ignore'] })
        .toString()
        .trim()
    );
  } catch {
    return 'unknown';
  }
}

/** The CPU model (or architecture) and platform. */
export function machineOf(): string {
  return `${os.cpus()[0]?.model ?? os.arch()} (${os.platform()})`;
}
