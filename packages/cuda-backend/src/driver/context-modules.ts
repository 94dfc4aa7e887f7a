/** A CudaContext's modules, their functions and globals, and kernel launches. */
import { CuFunctionAttribute } from './constants.ts';
import type { ContextCore } from './context-core.ts';
import type {
  CudaFunction,
  CudaModule,
  Dim3,
  FunctionAttributes,
  LaunchConfig,
  ModuleGlobal,
} from './context-types.ts';
import { CudaUsageError } from './errors.ts';
import { KernelParamBlock } from './kernel-args.ts';
import type { KernelArg } from './kernel-args.ts';

export class ContextModules {
  /** Native memory the launch arguments are written to (one block: launches are synchronous calls). */
  private readonly params = new KernelParamBlock();

  constructor(private readonly core: ContextCore) {}

  load(image: Uint8Array): CudaModule {
    const c = this.core;
    if (image.byteLength === 0) throw new CudaUsageError('RG_CUDA_EMPTY_IMAGE', 'loadModule got an empty image');
    c.makeCurrent();
    c.check('cuModuleLoadData', c.driver.api.cuModuleLoadData(c.out64, image));
    const handle = c.out64[0] ?? 0n;
    c.modules.add(handle);
    return { handle };
  }

  unload(mod: CudaModule): void {
    const c = this.core;
    c.owned(c.modules, mod.handle, 'module');
    c.makeCurrent();
    c.check('cuModuleUnload', c.driver.api.cuModuleUnload(mod.handle));
    c.modules.delete(mod.handle);
  }

  getFunction(mod: CudaModule, name: string): CudaFunction {
    const c = this.core;
    c.owned(c.modules, mod.handle, 'module');
    c.makeCurrent();
    c.check('cuModuleGetFunction', c.driver.api.cuModuleGetFunction(c.out64, mod.handle, name));
    return { handle: c.out64[0] ?? 0n, name, module: mod };
  }

  getGlobal(mod: CudaModule, name: string): ModuleGlobal {
    const c = this.core;
    c.owned(c.modules, mod.handle, 'module');
    c.makeCurrent();
    c.check('cuModuleGetGlobal_v2', c.driver.api.cuModuleGetGlobal_v2(c.out64, c.out64b, mod.handle, name));
    return { devPtr: c.out64[0] ?? 0n, bytes: Number(c.out64b[0] ?? 0n), module: mod };
  }

  /** Launches refuse any stream this context did not create (never the legacy default stream). */
  launch(fn: CudaFunction, config: LaunchConfig, args: readonly KernelArg[]): void {
    const c = this.core;
    c.owned(c.modules, fn.module.handle, 'function (its module)');
    c.owned(c.streams, config.stream.handle, 'stream');
    const [gx, gy, gz] = dim3(config.grid, 'grid');
    const [bx, by, bz] = dim3(config.block, 'block');
    const shmem = config.sharedMemBytes ?? 0;
    if (!Number.isInteger(shmem) || shmem < 0)
      throw new CudaUsageError('RG_CUDA_BAD_LAUNCH', `sharedMemBytes must be a non-negative integer, got ${shmem}`);
    c.makeCurrent();
    const params = this.params.write(args);
    c.check(
      `cuLaunchKernel(${fn.name})`,
      c.driver.api.cuLaunchKernel(fn.handle, gx, gy, gz, bx, by, bz, shmem, config.stream.handle, params, null),
    );
  }

  maxActiveBlocksPerMultiprocessor(fn: CudaFunction, blockSize: number, dynamicSharedMemBytes: number): number {
    const c = this.core;
    c.owned(c.modules, fn.module.handle, 'function (its module)');
    c.makeCurrent();
    c.check(
      'cuOccupancyMaxActiveBlocksPerMultiprocessor',
      c.driver.api.cuOccupancyMaxActiveBlocksPerMultiprocessor(c.out32, fn.handle, blockSize, dynamicSharedMemBytes),
    );
    return c.out32[0] ?? 0;
  }

  functionAttribute(fn: CudaFunction, attrib: number): number {
    const c = this.core;
    c.owned(c.modules, fn.module.handle, 'function (its module)');
    c.makeCurrent();
    c.check('cuFuncGetAttribute', c.driver.api.cuFuncGetAttribute(c.out32, attrib, fn.handle));
    return c.out32[0] ?? 0;
  }

  functionAttributes(fn: CudaFunction): FunctionAttributes {
    const A = CuFunctionAttribute;
    return {
      maxThreadsPerBlock: this.functionAttribute(fn, A.MAX_THREADS_PER_BLOCK),
      sharedSizeBytes: this.functionAttribute(fn, A.SHARED_SIZE_BYTES),
      constSizeBytes: this.functionAttribute(fn, A.CONST_SIZE_BYTES),
      localSizeBytes: this.functionAttribute(fn, A.LOCAL_SIZE_BYTES),
      numRegs: this.functionAttribute(fn, A.NUM_REGS),
      ptxVersion: this.functionAttribute(fn, A.PTX_VERSION),
      binaryVersion: this.functionAttribute(fn, A.BINARY_VERSION),
    };
  }

  /** The launch argument block's native memory (at dispose, after the modules are unloaded). */
  free(): void {
    this.params.free();
  }
}

function dim3(d: number | Dim3, what: string): Dim3 {
  const v: Dim3 = typeof d === 'number' ? [d, 1, 1] : d;
  for (const x of v) {
    if (!Number.isInteger(x) || x < 1 || x > 0x7fff_ffff) {
      throw new CudaUsageError(
        'RG_CUDA_BAD_LAUNCH',
        `${what} dimensions must be positive integers, got [${v.join(', ')}]`,
      );
    }
  }
  return v;
}
