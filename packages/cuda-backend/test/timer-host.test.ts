import { TIMER_HOST_BYTES, TimerHostBlock } from '@ringgrain/codegen';
import { offsetOf } from '@ringgrain/core/backend';
import { describe, expect, it } from 'vitest';
import { TimerHost } from '../src/timer-host.ts';

/**
 * The host's end of the timer block against a buffer standing in for the mapped host memory: what the
 * host writes is where the kernel reads it (TimerHostBlock offsets), and what the kernel writes reads back.
 */
describe('TimerHost (timer-host.ts)', () => {
  const at = 256; // the block's offset in the region (the backend places it after the reply ring)
  const fresh = (clock: 'host' | 'kernel') => {
    const buffer = new ArrayBuffer(at + TIMER_HOST_BYTES);
    const th = new TimerHost(buffer, at, { clock });
    const dv = new DataView(buffer, at);
    /** What the control warp writes when it publishes. */
    const kernelPublishes = (v: { caughtEpoch?: number; ticks: number; tickErrors: number; armed: number }) => {
      dv.setUint32(offsetOf(TimerHostBlock, 'ticks'), v.ticks >>> 0, true);
      dv.setUint32(offsetOf(TimerHostBlock, 'tickErrors'), v.tickErrors, true);
      dv.setInt32(offsetOf(TimerHostBlock, 'armed'), v.armed, true);
      if (v.caughtEpoch !== undefined) dv.setUint32(offsetOf(TimerHostBlock, 'caughtEpoch'), v.caughtEpoch >>> 0, true);
      dv.setUint32(
        offsetOf(TimerHostBlock, 'publishes'),
        dv.getUint32(offsetOf(TimerHostBlock, 'publishes'), true) + 1,
        true,
      );
    };
    return { th, dv, kernelPublishes };
  };

  it(
    'init writes the clock source and the origin where the control warp reads them, and clears the kernel line',
    () => {
      const { th, dv, kernelPublishes } = fresh('host');
      kernelPublishes({ caughtEpoch: 9, ticks: 5, tickErrors: 1, armed: 3 });
      th.init(1_700_000_000_123.5);
      expect(dv.getUint32(offsetOf(TimerHostBlock, 'clock'), true)).toBe(1);
      expect(dv.getFloat64(offsetOf(TimerHostBlock, 'originMs'), true)).toBe(1_700_000_000_123.5);
      expect(th.stats()).toEqual({ ticks: 0, tickErrors: 0, armed: 0 });
      expect(th.publishes).toBe(0);
      const k = fresh('kernel');
      k.th.init(5);
      expect(k.dv.getUint32(offsetOf(TimerHostBlock, 'clock'), true)).toBe(0);
    },
  );

  it('publish: the time under an even sequence word, one epoch per publication', () => {
    const { th, dv } = fresh('host');
    th.init();
    th.publish(1234.25);
    expect(dv.getUint32(offsetOf(TimerHostBlock, 'seq'), true)).toBe(2);
    expect(dv.getFloat64(offsetOf(TimerHostBlock, 'time'), true)).toBe(1234.25);
    th.publish(1300);
    expect(th.epoch).toBe(2);
    expect(dv.getFloat64(offsetOf(TimerHostBlock, 'time'), true)).toBe(1300);
  });

  it('caughtUp: true before any publication, then once the kernel names that epoch (or a later one)', () => {
    const { th, kernelPublishes } = fresh('host');
    th.init();
    expect(th.caughtUp()).toBe(true);
    th.publish(100);
    expect(th.caughtUp()).toBe(false);
    kernelPublishes({ caughtEpoch: 0, ticks: 0, tickErrors: 0, armed: 1 });
    expect(th.caughtUp()).toBe(false);
    kernelPublishes({ caughtEpoch: 1, ticks: 1, tickErrors: 0, armed: 1 });
    expect(th.caughtUp()).toBe(true);
    th.publish(200);
    th.publish(300);
    kernelPublishes({ caughtEpoch: 2, ticks: 2, tickErrors: 0, armed: 1 });
    expect(th.caughtUp()).toBe(false);
    kernelPublishes({ caughtEpoch: 3, ticks: 3, tickErrors: 0, armed: 1 });
    expect(th.caughtUp()).toBe(true);
  });

  it("with the kernel's own clock there is nothing to catch up with", () => {
    const { th } = fresh('kernel');
    th.init();
    th.publish(5);
    expect(th.caughtUp()).toBe(true);
  });

  it('stats: the figures the control warp wrote (ticks wrap as u32, armed is signed)', () => {
    const { th, kernelPublishes } = fresh('kernel');
    th.init();
    kernelPublishes({ ticks: 2 ** 32 - 1, tickErrors: 7, armed: 1_000_000 });
    expect(th.stats()).toEqual({ ticks: 2 ** 32 - 1, tickErrors: 7, armed: 1_000_000 });
    expect(th.publishes).toBe(1);
  });
});
