/**
 * Every protocol constant the C side uses is generated from its TS source; this reads the `#define`s
 * back out of a generated unit and fails if one differs from (or is missing against) core protocol.ts
 * and codegen abi.ts.
 */
import { SLOT_HEADER_SIZE } from '@ringgrain/core';
import { COUNTERS, HOST_SENDER, KernelState, RING_HEADER_SIZE, SlotFlag, layoutOf } from '@ringgrain/core/backend';
import { describe, expect, it } from 'vitest';
import { Account } from '../../../examples/bank/grains.ts';
import {
  BULK_BOARDS,
  BULK_JOB_BYTES,
  BulkBoard,
  DeviceGlobals,
  OVERFLOW_NODE_HEADER,
  OverflowHeader,
  OverflowNode,
  TURN_ERRORS,
  generateKernel,
  makeAbi,
  overflowLayout,
} from '../src/index.ts';

const defines = new Map<string, number>();
for (const m of generateKernel(Account.grain).source.matchAll(/^#define (RG_[A-Z0-9_]+) (0x[0-9a-fA-F]+|\d+)u?$/gm))
  defines.set(m[1]!, Number(m[2]));

const camelToMacro = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase();

describe('C #defines equal their TS sources', () => {
  const want: Array<[string, number]> = [
    ...Object.entries(TURN_ERRORS).map(([k, v]): [string, number] => [`RG_E_${k}`, v]),
    ['RG_ASK', SlotFlag.ASK],
    ['RG_REPLY', SlotFlag.REPLY],
    ['RG_ERROR', SlotFlag.ERROR],
    ['RG_REJECTED', SlotFlag.REJECTED],
    ['RG_STRING_KEY', SlotFlag.STRING_KEY],
    ['RG_SKIP', SlotFlag.SKIP],
    ['RG_HOST_SENDER', HOST_SENDER],
    ['RG_HDR', SLOT_HEADER_SIZE],
    ['RG_RING_HDR', RING_HEADER_SIZE],
    ...(['IDLE', 'ACTIVE', 'PAUSED', 'STOP', 'STOPPED'] as const).map((k): [string, number] => [
      `RG_KS_${k}`,
      KernelState[k],
    ]),
    ...COUNTERS.map((c, i): [string, number] => [`RG_C_${camelToMacro(c)}`, i]),
    ['RG_NCOUNTERS', COUNTERS.length],
    ['RG_OV_HDR', layoutOf(OverflowHeader).size],
    ['RG_OV_NODE_HDR', OVERFLOW_NODE_HEADER],
    ['RG_BULK_BOARDS', BULK_BOARDS],
    ['RG_BULK_JOB_BYTES', BULK_JOB_BYTES],
  ];
  it.each(want)('%s = %d', (name, value) => {
    expect(defines.get(name), `${name} is not #defined in the generated unit`).toBeDefined();
    expect(defines.get(name)).toBe(value);
  });

  it('every RG_E_* of the unit has a TS source', () => {
    const cNames = [...defines.keys()].filter((k) => k.startsWith('RG_E_'));
    expect(cNames.sort()).toEqual(Object.keys(TURN_ERRORS).map((k) => `RG_E_${k}`).sort());
  });
});

describe('the K2K overflow pool layout (abi.ts) is what the C reads', () => {
  const source = generateKernel(Account.grain).source;
  it('a node header is link at 0, taken at 4, 16 bytes; the C asserts the same', () => {
    const l = layoutOf(OverflowNode);
    expect([
      l.size,
      l.fields?.find((f) => f.name === 'link')?.offset,
      l.fields?.find((f) => f.name === 'taken')?.offset,
    ]).toEqual([16, 0, 4]);
    expect(OVERFLOW_NODE_HEADER).toBe(16);
    expect(source).toContain(
      'static_assert(sizeof(rg_OverflowNode) == 16, "rg_OverflowNode: size differs from layoutOf");',
    );
    expect(source).toContain(
      'RG_OFFSET_ASSERT(rg_OverflowNode, taken, 4, "rg_OverflowNode.taken: offset differs from layoutOf");',
    );
  });
  it('nodes start 16-byte aligned after the header and the per-partition tails and counts', () => {
    const o = overflowLayout({ partitions: 3, slotSize: 256, nodes: 10 });
    expect(o).toEqual({ tails: 128, counts: 140, nodesAt: 160, nodeBytes: 272, bytes: 160 + 2720 });
  });
});

describe('the bulk job boards (abi.ts BulkBoard) are what the C reads, and the backend allocates them', () => {
  const source = generateKernel(Account.grain).source;
  const off = (name: string) => layoutOf(BulkBoard).fields?.find((f) => f.name === name)?.offset;
  it('next and limit are 8-aligned 64-bit words, the job a 16-aligned image that holds an rg_coop', () => {
    expect([off('nextLo'), off('limitLo'), off('done'), off('owner'), off('job')]).toEqual([0, 8, 16, 20, 128]);
    expect(layoutOf(BulkBoard).size).toBe(128 + BULK_JOB_BYTES);
    expect(source).toContain(
      `static_assert(sizeof(rg_BulkBoard) == ${128 + BULK_JOB_BYTES}, "rg_BulkBoard: size differs from layoutOf");`,
    );
    expect(source).toContain(
      'RG_OFFSET_ASSERT(rg_BulkBoard, job, 128, "rg_BulkBoard.job: offset differs from layoutOf");',
    );
    expect(source).toContain('static_assert(sizeof(rg_coop) <= RG_BULK_JOB_BYTES && sizeof(rg_coop) % 8u == 0u');
  });
  it('DeviceGlobals ends with the live-boards word and BULK_BOARDS boards, and sizes().globals counts them', () => {
    const boardsAt = layoutOf(DeviceGlobals).fields?.find((f) => f.name === 'boards')?.offset;
    expect(boardsAt).toBe(640);
    expect(layoutOf(DeviceGlobals).size).toBe(640 + BULK_BOARDS * layoutOf(BulkBoard).size);
    expect(source).toContain(
      `RG_OFFSET_ASSERT(rg_DeviceGlobals, boards, 640, "rg_DeviceGlobals.boards: offset differs from layoutOf");`,
    );
    const abi = makeAbi('X', 0, Account.grain.state, { bytes: 32, replyAt: 16, lanes: 1 });
    const g = abi.sizes({
      maxActors: 1,
      ringCapacity: 2,
      replyCapacity: 2,
      slotSize: 64,
      partitions: 3,
      queueCapacity: 2,
      lanes: 2,
    }).globals;
    expect(g).toBe(layoutOf(DeviceGlobals).size + 4 * 32 + 4 * 2);
  });
  it('DeviceGlobals.hooksOn sits beside metaOn (one line the host writes before launch), asserted in the C', () => {
    const at = (f: string) => layoutOf(DeviceGlobals).fields?.find((x) => x.name === f)?.offset;
    expect(at('hooksOn')).toBe((at('metaOn') ?? -1) + 4);
    expect(at('mode')).toBe(256);
    expect(source).toContain(
      `RG_OFFSET_ASSERT(rg_DeviceGlobals, hooksOn, ${at('hooksOn')}, "rg_DeviceGlobals.hooksOn: offset differs ` +
        `from layoutOf");`,
    );
  });
});
