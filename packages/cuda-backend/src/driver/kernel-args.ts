/**
 * Kernel arguments for cuLaunchKernel.
 *
 * `kernelParams` is an array of pointers TO the argument values (not the values), and the driver
 * reads through those pointers during the call. Both arrays therefore live in native memory from
 * koffi.alloc — stable addresses that no garbage collection can move — and are reused launch after
 * launch (launches are synchronous calls on one thread, so one block per context suffices).
 */
import koffi from 'koffi';
import { CudaUsageError } from './errors.ts';

export type KernelArg =
  | { readonly kind: 'u32' | 'i32' | 'f32' | 'f64'; readonly value: number }
  | { readonly kind: 'u64' | 'i64' | 'ptr'; readonly value: bigint };

const U32_MAX = 0xffff_ffff;
const U64_MAX = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;

function need(ok: boolean, what: string, value: unknown): void {
  if (!ok)
    throw new CudaUsageError('RG_CUDA_BAD_KERNEL_ARG', `kernel argument ${what} is out of range: ${String(value)}`);
}

/** Argument constructors; each validates its range so that nothing is silently truncated. */
export const arg = {
  u32(value: number): KernelArg {
    need(Number.isInteger(value) && value >= 0 && value <= U32_MAX, 'u32', value);
    return { kind: 'u32', value };
  },
  i32(value: number): KernelArg {
    need(Number.isInteger(value) && value >= -0x8000_0000 && value <= 0x7fff_ffff, 'i32', value);
    return { kind: 'i32', value };
  },
  f32(value: number): KernelArg {
    return { kind: 'f32', value };
  },
  f64(value: number): KernelArg {
    return { kind: 'f64', value };
  },
  u64(value: bigint | number): KernelArg {
    const v = BigInt(value);
    need(v >= 0n && v <= U64_MAX, 'u64', value);
    return { kind: 'u64', value: v };
  },
  i64(value: bigint | number): KernelArg {
    const v = BigInt(value);
    need(v >= I64_MIN && v <= I64_MAX, 'i64', value);
    return { kind: 'i64', value: v };
  },
  /** A device pointer (CUdeviceptr, or the devPtr of mapped pinned host memory). */
  ptr(value: bigint): KernelArg {
    need(value >= 0n && value <= U64_MAX, 'ptr', value);
    return { kind: 'ptr', value };
  },
} as const;

/** Native storage for up to `capacity` arguments plus the pointer array handed to cuLaunchKernel. */
export class KernelParamBlock {
  readonly capacity: number;
  private values: bigint | null;
  private pointers: bigint | null;
  private readonly valueView: DataView;
  private readonly pointerView: DataView;

  constructor(capacity = 64) {
    this.capacity = capacity;
    // 8 bytes per argument: every supported type fits and stays naturally aligned.
    const values = koffi.alloc('uint64_t', capacity) as bigint;
    const pointers = koffi.alloc('uint64_t', capacity) as bigint;
    this.values = values;
    this.pointers = pointers;
    this.valueView = new DataView(koffi.view(values, capacity * 8));
    this.pointerView = new DataView(koffi.view(pointers, capacity * 8));
    for (let i = 0; i < capacity; i++) this.pointerView.setBigUint64(i * 8, values + BigInt(i * 8), true);
  }

  /** Write `args` and return the `void **kernelParams` pointer (null for a kernel with no arguments). */
  write(args: readonly KernelArg[]): bigint | null {
    if (this.pointers === null) throw new CudaUsageError('RG_CUDA_DISPOSED', 'kernel parameter block used after free');
    if (args.length > this.capacity) {
      throw new CudaUsageError(
        'RG_CUDA_BAD_KERNEL_ARG',
        `${args.length} kernel arguments; at most ${this.capacity} are supported`,
      );
    }
    if (args.length === 0) return null;
    const v = this.valueView;
    for (let i = 0; i < args.length; i++) {
      const a = args[i] as KernelArg;
      const off = i * 8;
      switch (a.kind) {
        case 'u32':
          v.setUint32(off, a.value, true);
          break;
        case 'i32':
          v.setInt32(off, a.value, true);
          break;
        case 'f32':
          v.setFloat32(off, a.value, true);
          break;
        case 'f64':
          v.setFloat64(off, a.value, true);
          break;
        case 'u64':
        case 'ptr':
          v.setBigUint64(off, a.value, true);
          break;
        case 'i64':
          v.setBigInt64(off, a.value, true);
          break;
      }
    }
    return this.pointers;
  }

  free(): void {
    if (this.values !== null) koffi.free(this.values);
    if (this.pointers !== null) koffi.free(this.pointers);
    this.values = null;
    this.pointers = null;
  }
}
