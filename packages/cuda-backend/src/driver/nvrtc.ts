/**
 * NVRTC: CUDA C++ source → cubin (for `sm_XX`, loaded without driver JIT) or PTX (for `compute_XX`,
 * the fallback when NVRTC does not know the device's real architecture; the driver JITs it, slowly).
 */
import { bindNvrtcApi } from './nvrtc-api.ts';
import type { NvrtcApi } from './nvrtc-api.ts';
import { NVRTC_RESULT_NAMES, NVRTC_SUCCESS } from './constants.ts';
import { CudaUnavailableError, CudaUsageError, NvrtcError } from './errors.ts';
import { openNvrtc } from './library.ts';
import type { DiscoveryEnv } from './library.ts';

export interface NvrtcOutput {
  /** "cubin" for -arch=sm_XX, "ptx" for -arch=compute_XX. */
  readonly kind: 'cubin' | 'ptx';
  /** The image for cuModuleLoadData (PTX is NUL-terminated, as the driver requires). */
  readonly image: Uint8Array;
  /** Compiler log (warnings) of a successful compile; often empty. */
  readonly log: string;
  readonly options: readonly string[];
}

export interface NvrtcCompileOptions {
  /** "sm_90" → cubin; "compute_90" → PTX. */
  readonly arch: string;
  /** Program name, shown in compiler messages (e.g. "Account.cu"). */
  readonly name?: string;
  /** More options, e.g. ["-lineinfo", "--std=c++17"]. Must not contain -arch. */
  readonly extraOpts?: readonly string[];
}

const ARCH_RE = /^(sm|compute)_\d{2,3}[af]?$/;

export class Nvrtc {
  readonly api: NvrtcApi;
  readonly libPath: string;
  readonly version: { readonly major: number; readonly minor: number };

  private constructor(api: NvrtcApi, libPath: string) {
    this.api = api;
    this.libPath = libPath;
    const major = new Int32Array(1);
    const minor = new Int32Array(1);
    this.check('nvrtcVersion', api.nvrtcVersion(major, minor));
    this.version = { major: major[0] ?? 0, minor: minor[0] ?? 0 };
  }

  static open(env: DiscoveryEnv = process.env): Nvrtc {
    const lib = openNvrtc(env);
    let api: NvrtcApi;
    try {
      api = bindNvrtcApi(lib.handle);
    } catch (e) {
      lib.handle.unload();
      throw new CudaUnavailableError(
        `${lib.path} lacks an NVRTC symbol this backend needs (NVRTC older than 11.1?): ${String(e)}`,
        { cause: e },
      );
    }
    return new Nvrtc(api, lib.path);
  }

  get versionString(): string {
    return `${this.version.major}.${this.version.minor}`;
  }

  private check(
    call: string,
    result: number,
    detail: { log?: string; programName?: string; options?: readonly string[] } = {},
  ): void {
    if (result === NVRTC_SUCCESS) return;
    const name = NVRTC_RESULT_NAMES[result] ?? `NVRTC_ERROR_${result}`;
    let log = detail.log;
    if (log === undefined || log === '') {
      // Non-compilation failures have no log; nvrtcGetErrorString at least gives prose.
      try {
        log = this.api.nvrtcGetErrorString(result);
      } catch {
        log = '';
      }
    }
    throw new NvrtcError(call, result, name, { ...detail, log });
  }

  /** Compile `source`. A failed compilation throws NvrtcError whose `.log` is the full compiler log. */
  compile(source: string, opts: NvrtcCompileOptions): NvrtcOutput {
    const p = this.program(source, opts);
    try {
      return this.finish(p, this.api.nvrtcCompileProgram(p.prog, p.options.length, p.options));
    } finally {
      // Destroy even after a failed compile; a destroy failure must not mask the compile error.
      this.api.nvrtcDestroyProgram(p.handle);
    }
  }

  /**
   * compile on a worker thread, so that several programs (a system's grain classes) compile at once instead of one
   * after the other; the calling thread stays free meanwhile.
   */
  async compileAsync(source: string, opts: NvrtcCompileOptions): Promise<NvrtcOutput> {
    const p = this.program(source, opts);
    try {
      return this.finish(p, await this.api.nvrtcCompileProgramAsync(p.prog, p.options.length, p.options));
    } finally {
      this.api.nvrtcDestroyProgram(p.handle);
    }
  }

  private program(
    source: string,
    opts: NvrtcCompileOptions,
  ): { prog: bigint; handle: BigUint64Array; options: string[]; kind: 'cubin' | 'ptx'; programName: string } {
    if (!ARCH_RE.test(opts.arch)) {
      throw new CudaUsageError('RG_NVRTC_BAD_ARCH', `arch "${opts.arch}" is not an NVRTC architecture`, {
        hint: 'pass the device arch, e.g. ctx.device.arch ("sm_90"), or "compute_90" for PTX',
      });
    }
    const extra = opts.extraOpts ?? [];
    if (extra.some((o) => /^(-arch|--gpu-architecture)\b/.test(o))) {
      throw new CudaUsageError(
        'RG_NVRTC_BAD_OPTION',
        'extraOpts must not contain -arch; pass the architecture as `arch`',
      );
    }
    const kind: 'cubin' | 'ptx' = opts.arch.startsWith('sm_') ? 'cubin' : 'ptx';
    const options = [`-arch=${opts.arch}`, ...extra];
    const programName = opts.name ?? 'ringgrain.cu';
    const handle = new BigUint64Array(1);
    this.check('nvrtcCreateProgram', this.api.nvrtcCreateProgram(handle, source, programName, 0, null, null), {
      programName,
    });
    return { prog: handle[0] ?? 0n, handle, options, kind, programName };
  }

  private finish(
    p: { prog: bigint; options: string[]; kind: 'cubin' | 'ptx'; programName: string },
    compileResult: number,
  ): NvrtcOutput {
    const log = this.programLog(p.prog);
    this.check('nvrtcCompileProgram', compileResult, { log, programName: p.programName, options: p.options });
    const image = p.kind === 'cubin' ? this.cubin(p.prog) : this.ptx(p.prog);
    return { kind: p.kind, image, log, options: p.options };
  }

  private programLog(prog: bigint): string {
    const size = new BigUint64Array(1);
    this.check('nvrtcGetProgramLogSize', this.api.nvrtcGetProgramLogSize(prog, size));
    const n = Number(size[0] ?? 0n);
    if (n <= 1) return '';
    const buf = new Uint8Array(n);
    this.check('nvrtcGetProgramLog', this.api.nvrtcGetProgramLog(prog, buf));
    return Buffer.from(buf.subarray(0, n - 1)).toString('utf8');
  }

  private cubin(prog: bigint): Uint8Array {
    const size = new BigUint64Array(1);
    this.check('nvrtcGetCUBINSize', this.api.nvrtcGetCUBINSize(prog, size));
    const n = Number(size[0] ?? 0n);
    if (n === 0) {
      throw new NvrtcError('nvrtcGetCUBINSize', 4, 'NVRTC_ERROR_INVALID_PROGRAM', {
        log: 'NVRTC produced no cubin',
        hint: 'a cubin needs a real architecture (-arch=sm_XX); use compute_XX to get PTX',
      });
    }
    const buf = new Uint8Array(n);
    this.check('nvrtcGetCUBIN', this.api.nvrtcGetCUBIN(prog, buf));
    return buf;
  }

  private ptx(prog: bigint): Uint8Array {
    const size = new BigUint64Array(1);
    this.check('nvrtcGetPTXSize', this.api.nvrtcGetPTXSize(prog, size));
    const n = Number(size[0] ?? 0n); // includes the terminating NUL
    const buf = new Uint8Array(n);
    this.check('nvrtcGetPTX', this.api.nvrtcGetPTX(prog, buf));
    return buf;
  }
}

let shared: Nvrtc | undefined;

/** The process-wide NVRTC (opened once). Passing `env` opens an uncached instance (tests). */
export function loadNvrtc(opts: { env?: DiscoveryEnv } = {}): Nvrtc {
  if (opts.env) return Nvrtc.open(opts.env);
  shared ??= Nvrtc.open(process.env);
  return shared;
}
