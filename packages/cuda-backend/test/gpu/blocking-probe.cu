// Which CUDA driver calls block while a persistent kernel runs in the same (primary) context?
// A spinner kernel polls a flag in mapped pinned memory; each driver call is timed with the spinner
// alive, and a watchdog thread releases the spinner after WATCHDOG_MS. A call that returns only after
// the watchdog fired "blocks"; such a call may never be made while a ring kernel lives.
//   nvcc -O2 -o /tmp/blocking-probe blocking-probe.cu -lcuda -lpthread && /tmp/blocking-probe
#include <cuda.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <atomic>

#define WATCHDOG_MS 1500
static volatile unsigned int* flag;  // host view of the mapped stop flag
static unsigned int* dflag;
static cudaStream_t spinStream;

__global__ void spinner(volatile unsigned int* stop) {
  if (threadIdx.x != 0) return;
  while (*stop == 0u) __nanosleep(1000);
}
__global__ void tiny(int* p) { if (p) *p = 1; }

static double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
static void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) { const char* n = 0; cuGetErrorName(r, &n); printf("  %s -> %s\n", what, n ? n : "?"); }
}

template <class F> static void probe(const char* name, F op) {
  *flag = 0;
  spinner<<<1, 32, 0, spinStream>>>((volatile unsigned int*)dflag);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  if (cudaStreamQuery(spinStream) != cudaErrorNotReady) { printf("%-44s spinner not running?\n", name); }
  std::atomic<bool> done{false};
  auto t0 = std::chrono::steady_clock::now();
  std::thread dog([&] {
    while (!done.load() && ms_since(t0) < WATCHDOG_MS) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    *flag = 1;
  });
  op();
  double t = ms_since(t0);
  done = true;
  dog.join();
  cudaStreamSynchronize(spinStream);
  printf("%-44s %9.3f ms  %s\n", name, t, t >= WATCHDOG_MS * 0.9 ? "BLOCKS (returned only after the kernel ended)" : "ok (does not wait for the kernel)");
}

int main() {
  cudaSetDevice(0);
  cudaFree(0);  // primary context
  CUcontext ctx; cuCtxGetCurrent(&ctx);
  cudaHostAlloc((void**)&flag, 4096, cudaHostAllocMapped | cudaHostAllocPortable);
  cudaHostGetDevicePointer((void**)&dflag, (void*)flag, 0);
  cudaStreamCreateWithFlags(&spinStream, cudaStreamNonBlocking);
  CUstream other; cuStreamCreate(&other, CU_STREAM_NON_BLOCKING);
  char name[256]; CUdevice dev; cuCtxGetDevice(&dev); cuDeviceGetName(name, 256, dev);
  int drv; cuDriverGetVersion(&drv);
  printf("device %s, driver %d, watchdog %d ms\n", name, drv, WATCHDOG_MS);

  CUdeviceptr d1 = 0, d2 = 0; void* h1 = 0; void* h2 = 0;
  cuMemAlloc(&d2, 1 << 20);
  cuMemHostAlloc(&h2, 1 << 20, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
  static char pageable[1 << 16];
  probe("cuMemAlloc_v2 (1 MiB)", [&] { check(cuMemAlloc(&d1, 1 << 20), "cuMemAlloc"); });
  probe("cuMemFree_v2", [&] { check(cuMemFree(d1), "cuMemFree"); });
  probe("cuMemFree_v2 (allocated before launch)", [&] { check(cuMemFree(d2), "cuMemFree"); });
  probe("cuMemHostAlloc DEVICEMAP|PORTABLE (1 MiB)", [&] { check(cuMemHostAlloc(&h1, 1 << 20, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc"); });
  probe("cuMemFreeHost", [&] { check(cuMemFreeHost(h1), "cuMemFreeHost"); });
  probe("cuMemFreeHost (allocated before launch)", [&] { check(cuMemFreeHost(h2), "cuMemFreeHost"); });
  CUdeviceptr da = 0;
  probe("cuMemAllocAsync + cuStreamSynchronize(other)", [&] { check(cuMemAllocAsync(&da, 1 << 20, other), "cuMemAllocAsync"); check(cuStreamSynchronize(other), "sync"); });
  probe("cuMemsetD8Async + cuStreamSynchronize(other)", [&] { check(cuMemsetD8Async(da, 0, 1 << 20, other), "memset"); check(cuStreamSynchronize(other), "sync"); });
  probe("cuMemcpyHtoDAsync pageable + sync(other)", [&] { check(cuMemcpyHtoDAsync(da, pageable, sizeof pageable, other), "HtoD"); check(cuStreamSynchronize(other), "sync"); });
  probe("cuMemcpyDtoHAsync pageable + sync(other)", [&] { check(cuMemcpyDtoHAsync(pageable, da, sizeof pageable, other), "DtoH"); check(cuStreamSynchronize(other), "sync"); });
  probe("cuMemFreeAsync + cuStreamSynchronize(other)", [&] { check(cuMemFreeAsync(da, other), "cuMemFreeAsync"); check(cuStreamSynchronize(other), "sync"); });
  CUstream s2 = 0;
  probe("cuStreamCreate NON_BLOCKING", [&] { check(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING), "cuStreamCreate"); });
  probe("cuStreamDestroy_v2", [&] { check(cuStreamDestroy(s2), "cuStreamDestroy"); });
  probe("tiny<<<>>> on other + cuStreamSynchronize", [&] { tiny<<<1, 1, 0, (cudaStream_t)other>>>(nullptr); check(cuStreamSynchronize(other), "sync"); });
  const char* ptx =
      ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry noop() { ret; }\n";
  CUmodule mod = 0;
  probe("cuModuleLoadData (PTX, JIT)", [&] { check(cuModuleLoadData(&mod, ptx), "cuModuleLoadData"); });
  probe("cuModuleUnload", [&] { check(cuModuleUnload(mod), "cuModuleUnload"); });
  size_t fr, tot;
  probe("cuMemGetInfo_v2", [&] { check(cuMemGetInfo(&fr, &tot), "cuMemGetInfo"); });
  probe("cuCtxSynchronize (expected to block)", [&] { check(cuCtxSynchronize(), "cuCtxSynchronize"); });
  return 0;
}
