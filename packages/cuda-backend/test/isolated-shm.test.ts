/**
 * The pieces of IsolatedCudaBackend that need no GPU: the ring arena allocator, and a shared mapping that
 * two processes see (what the application process writes, the GPU host process reads, and back).
 */
import { fork } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { Arena } from '../src/isolated/arena.ts';
import { ArenaFullError } from '../src/isolated/errors.ts';
import { createShared, unlinkShared } from '../src/isolated/shm.ts';

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
  it('a word written by one process is read by the other, both ways', async () => {
    const m = createShared(4096);
    try {
      const words = new Int32Array(m.buffer);
      Atomics.store(words, 0, 12345);
      const child = fork(new URL('./fixtures/shm-child.mjs', import.meta.url), [m.path, String(m.bytes)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code).toBe(0);
      expect(Atomics.load(words, 1)).toBe(12345 + 1); // the child read word 0 and wrote word 1
    } finally {
      unlinkShared(m.path);
      m.unmap();
    }
  });
});
