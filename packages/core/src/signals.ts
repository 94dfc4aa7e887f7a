import type { Logger } from 'pino';

/** Exit codes after a signal: 128 + the signal's number, as a shell reports them. */
export const SIGNAL_EXIT_CODE = { SIGINT: 130, SIGTERM: 143 } as const;

export interface SignalShutdown {
  readonly logger: Logger;
  /** Longest the orderly shutdown may take before the process exits anyway. */
  readonly exitAfterMs: number;
  /** The orderly shutdown (terminate every kernel, free memory). */
  shutdown(): Promise<void>;
  /** What is still not freed, for the log line when the deadline passes. */
  leftBehind(): string[];
}

/**
 * SIGINT/SIGTERM: shut down in order, but exit within `exitAfterMs` whatever happens (a kernel that
 * never acknowledges STOP, a worker stuck in a handler, a driver call that does not return), after
 * logging what could not be freed. A second signal exits at once. Returns the uninstaller.
 */
export function installSignalShutdown(s: SignalShutdown): () => void {
  let exiting = false;
  const onSignal = (sig: NodeJS.Signals): void => {
    const code = sig === 'SIGINT' ? SIGNAL_EXIT_CODE.SIGINT : SIGNAL_EXIT_CODE.SIGTERM;
    if (exiting) {
      s.logger.error(
        { signal: sig },
        `${sig} again: exiting now with ${code}; not freed: ${s.leftBehind().join(', ') || 'nothing'}`,
      );
      process.exit(code);
    }
    exiting = true;
    s.logger.warn(
      { signal: sig },
      `${sig}: terminating every kernel (exit with ${code} within ${s.exitAfterMs} ms; a second signal exits at once)`,
    );
    const deadline = setTimeout(() => {
      const left = s.leftBehind();
      s.logger.error(
        { signal: sig, notFreed: left },
        `${sig}: shutdown did not finish within ${s.exitAfterMs} ms; exiting with ${code}; not ` +
          `freed: ${left.join(', ') || 'nothing'}`,
      );
      process.exit(code);
    }, s.exitAfterMs);
    s.shutdown()
      .catch((e: unknown) => s.logger.error({ err: e }, `${sig}: shutdown failed`))
      .finally(() => {
        clearTimeout(deadline);
        process.exit(code);
      });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // The orderly shutdown uninstalls handlers; once a signal started it, stay to catch the second one.
  return () => {
    if (exiting) return;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}
