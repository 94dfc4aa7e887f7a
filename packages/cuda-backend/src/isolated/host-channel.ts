/**
 * The GPU host process's side of its IPC channel: messages to a parent that may be gone, and an exit
 * that does not wait forever for the backend's teardown.
 */

/** What the host needs of `process` (a fake one in tests). */
export interface Channel {
  readonly connected?: boolean;
  send?(message: unknown, callback?: (error: Error | null) => void): boolean;
}

/**
 * A send that never throws and never emits an 'error': once the application is gone (the channel
 * closed, ERR_IPC_CHANNEL_CLOSED) there is nobody to tell, and the host is already shutting down.
 */
export function channelSend(channel: Channel): (message: unknown) => void {
  return (message) => {
    if (!channel.connected || !channel.send) return;
    try {
      channel.send(message, () => undefined);
    } catch {
      // closed between the check and the send: same as above
    }
  };
}

/** How long the host's teardown may take once the application went away, before it exits anyway. */
export const DISCONNECT_EXIT_MS = 10_000;

/**
 * Runs `teardown`, then `exit(0)`; `exit(1)` after `ms` if it has not settled (a teardown stuck on the
 * driver must not leave a GPU process behind its application).
 */
export function exitAfter(
  teardown: () => Promise<unknown>,
  exit: (code: number) => void,
  ms = DISCONNECT_EXIT_MS,
): void {
  const timer = setTimeout(() => exit(1), ms);
  let run: Promise<unknown>;
  try {
    run = teardown();
  } catch (e) {
    run = Promise.reject(e);
  }
  run.then(
    () => {
      clearTimeout(timer);
      exit(0);
    },
    () => {
      clearTimeout(timer);
      exit(1);
    },
  );
}
