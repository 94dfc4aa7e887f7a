/**
 * Raw koffi bindings to NVRTC (same conventions as cuda-api.ts: out-parameters are typed arrays
 * behind `void *`, nvrtcProgram is an opaque pointer, i.e. a BigInt).
 */
import type { LibraryHandle } from 'koffi';

export interface NvrtcApi {
  nvrtcVersion(major: Int32Array, minor: Int32Array): number;
  nvrtcGetErrorString(result: number): string;
  nvrtcCreateProgram(
    prog: BigUint64Array,
    src: string,
    name: string,
    numHeaders: number,
    headers: null,
    includeNames: null,
  ): number;
  nvrtcCompileProgram(prog: bigint, numOptions: number, options: readonly string[]): number;
  nvrtcGetProgramLogSize(prog: bigint, size: BigUint64Array): number;
  nvrtcGetProgramLog(prog: bigint, log: Uint8Array): number;
  nvrtcGetCUBINSize(prog: bigint, size: BigUint64Array): number;
  nvrtcGetCUBIN(prog: bigint, cubin: Uint8Array): number;
  nvrtcGetPTXSize(prog: bigint, size: BigUint64Array): number;
  nvrtcGetPTX(prog: bigint, ptx: Uint8Array): number;
  /** Takes a pointer to the program handle (nvrtcProgram *) and clears it. */
  nvrtcDestroyProgram(prog: BigUint64Array): number;
  /**
   * nvrtcCompileProgram on one of koffi's worker threads (libuv's pool): NVRTC is thread-safe, so programs compile side
   * by side.
   */
  nvrtcCompileProgramAsync(prog: bigint, numOptions: number, options: readonly string[]): Promise<number>;
}

const PROTOTYPES: Readonly<Record<Exclude<keyof NvrtcApi, 'nvrtcCompileProgramAsync'>, string>> = {
  nvrtcVersion: 'int nvrtcVersion(void *major, void *minor)',
  nvrtcGetErrorString: 'const char *nvrtcGetErrorString(int result)',
  nvrtcCreateProgram:
    'int nvrtcCreateProgram(void *prog, const char *src, const char *name, int numHeaders, void *headers, void ' +
    '*includeNames)',
  nvrtcCompileProgram: 'int nvrtcCompileProgram(void *prog, int numOptions, const char **options)',
  nvrtcGetProgramLogSize: 'int nvrtcGetProgramLogSize(void *prog, void *size)',
  nvrtcGetProgramLog: 'int nvrtcGetProgramLog(void *prog, void *log)',
  nvrtcGetCUBINSize: 'int nvrtcGetCUBINSize(void *prog, void *size)',
  nvrtcGetCUBIN: 'int nvrtcGetCUBIN(void *prog, void *cubin)',
  nvrtcGetPTXSize: 'int nvrtcGetPTXSize(void *prog, void *size)',
  nvrtcGetPTX: 'int nvrtcGetPTX(void *prog, void *ptx)',
  nvrtcDestroyProgram: 'int nvrtcDestroyProgram(void *prog)',
};

export function bindNvrtcApi(lib: LibraryHandle): NvrtcApi {
  const api: Record<string, unknown> = {};
  for (const [name, proto] of Object.entries(PROTOTYPES)) api[name] = lib.func(proto);
  const compile = api['nvrtcCompileProgram'] as { async(...args: unknown[]): void };
  api['nvrtcCompileProgramAsync'] = (prog: bigint, n: number, options: readonly string[]): Promise<number> =>
    new Promise((resolve, reject) =>
      compile.async(prog, n, options, (err: unknown, rc: number) => (err ? reject(err) : resolve(rc))),
    );
  return api as unknown as NvrtcApi;
}
