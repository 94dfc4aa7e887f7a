/**
 * The pieces of IsolatedCudaBackend that need no GPU: the ring arena allocator, and a shared mapping that
 * two processes see (what the application process writes, the GPU host process reads, and back).
 */
import { fork } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { Arena } from '../src/isolated/arena.ts';
import { ArenaFullError } from '../src/isolated/errors.ts';
import { existsSync, readdirSync, statfsSync } from 'node:fs';
import { SharedMemoryError } from '../src/isolated/errors.ts';
import { channelSend, exitAfter } from '../src/isolated/host-channel.ts';
import { createShared } from '../src/isolated/shm.ts';

describe('ring arena', () => {
  it('allocates aligned blocks first-fit, merges freed neighbours, and says when it is full', () => {
    const a = new Arena(1024, 128);
    const x = a.alloc(100); // 128
    const y = a.alloc(300); // 384
    const z = a.alloc(128);
    expect([x, y, z]).toEqual([0, 128, 512]);
    expect(a.inUse()).toBe(640);
    a.release(y);
    expect(a.alloc(200)).toBe(128); // first fit, inside y's old block
    a.release(128);
    a.release(x);
    a.release(z);
    expect(a.freeRanges()).toEqual([{ offset: 0, bytes: 1024 }]);
    a.alloc(1024);
    expect(() => a.alloc(1)).toThrow(ArenaFullError);
    expect(() => a.release(64)).toThrow(RangeError);
  });
});

describe.skipIf(process.platform !== 'linux')('shared mapping between two processes (/dev/shm + mmap)', () => {
  it('a word written by one process is read by the other, both ways; the file has no name from the start', async () => {
    const m = createShared(4096);
    try {
      // Unlinked at creation: a process killed at any point leaves nothing in /dev/shm.
      expect(existsSync(m.path)).toBe(false);
      const words = new Int32Array(m.buffer);
      Atomics.store(words, 0, 12345);
      const child = fork(new URL('./fixtures/shm-child.mjs', import.meta.url), [String(m.bytes)], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc', m.fd],
      });
      m.closeFd();
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code).toBe(0);
      expect(Atomics.load(words, 1)).toBe(12345 + 1); // the child read word 0 and wrote word 1
    } finally {
      m.closeFd();
      m.unmap();
    }
  });

  it('more than /dev/shm holds fails at creation with SharedMemoryError, leaking no descriptor and no file', () => {
    // Without the reservation (posix_fallocate) ftruncate made a sparse file and the first touch past
    // /dev/shm's room died with SIGBUS.
    const fs = statfsSync('/dev/shm');
    const tooBig = Math.ceil((fs.blocks * fs.bsize) / 4096) * 4096 + (1 << 20);
    const fds = () => readdirSync('/proc/self/fd').length;
    const mine = () => readdirSync('/dev/shm').filter((f) => f.startsWith(`ringgrain-${process.pid}-`));
    const before = fds();
    const e = (() => {
      try {
        createShared(tooBig).unmap();
      } catch (x) {
        return x;
      }
      return undefined;
    })();
    expect(e).toBeInstanceOf(SharedMemoryError);
    expect(e).toMatchObject({ code: 'GPU_HOST_SHARED_MEMORY', hint: expect.stringMatching(/shm-size|arenaBytes/) });
    expect((e as Error).message).toMatch(/ENOSPC|EFBIG|no space/i);
    expect(fds()).toBe(before);
    expect(mine()).toEqual([]);
  });
});

describe('the GPU host\'s channel to its application', () => {
  it('a send once the application is gone is dropped: no throw, no error event (ERR_IPC_CHANNEL_CLOSED)', () => {
    const sent: unknown[] = [];
    const gone = { connected: false, send: (m: unknown) => sent.push(m) > 0 };
    channelSend(gone)({ op: 'ready' });
    expect(sent).toEqual([]);
    const closing = {
      connected: true,
      send: (_m: unknown, cb?: (e: Error | null) => void) => {
        // What Node does on a channel that closed under it: the error goes to the callback (else an 'error' event).
        cb?.(Object.assign(new Error('Channel closed'), { code: 'ERR_IPC_CHANNEL_CLOSED' }));
        return false;
      },
    };
    expect(() => channelSend(closing)({ op: 'reply' })).not.toThrow();
    const throwing = { connected: true, send: () => { throw new Error('closed'); } };
    expect(() => channelSend(throwing)({ op: 'reply' })).not.toThrow();
  });

  it('the host\'s shutdown on disconnect is bounded: a teardown that never settles still exits (code 1)', async () => {
    const codes: number[] = [];
    await new Promise<void>((resolve) =>
      exitAfter(
        () => new Promise(() => undefined),
        (c) => {
          codes.push(c);
          resolve();
        },
        50,
      ),
    );
    expect(codes).toEqual([1]);
    await new Promise<void>((resolve) => exitAfter(async () => undefined, (c) => { codes.push(c); resolve(); }, 50));
    await new Promise((r) => setTimeout(r, 80)); // the deadline of a teardown that settled must not fire too
    expect(codes).toEqual([1, 0]);
  });
});
