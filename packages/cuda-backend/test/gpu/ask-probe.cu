/*
 * Where does an ask's time go? A C++ host drives a generated ring kernel (the same unit the backend
 * loads) with one message in flight and no Node in the loop, and the kernel takes clock64 stamps at
 * the points codegen marks with RG_STAMP (device.ts STAMPS). Reports, as JSON lines on stdout:
 *   - pingpong: one word host → kernel → host (the floor of any host ↔ GPU protocol, same run);
 *   - echo: ask round trip measured by this host, and the median of every stage on the device;
 *   - chain: a K2K chain of H forwards, per-hop stages and the queue hop between two workers.
 * Build (bench/probes/ask.sh build; CI compiles it too, codegen test/compile.test.ts): nvcc -arch=sm_90 -O3 -std=c++17 -DRG_UNIT='"Echo.cu"'
 *   -DRG_ENTRY=rg_Echo_main -DRG_SELF_ID=0 [-DRG_PROFILE] [tuning -D...] ask-probe.cu
 * Run: ask-probe <label> echo <asks> <partitions> | chain <chains> <partitions> <hops> | pingpong <n>
 * All warps of a run stay in one block (partitions ≤ 3), so clock64 stamps share one SM's clock.
 */
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#define PROBE_MAX_STAMPS 32
#define PROBE_RECORDS 65536
#define PROBE_WARPS 8

#ifdef RG_PROFILE
__device__ unsigned long long probe_cur[PROBE_WARPS][PROBE_MAX_STAMPS];
__device__ unsigned long long probe_rec[PROBE_RECORDS][PROBE_MAX_STAMPS + 1];
__device__ unsigned int probe_n;
__device__ static inline unsigned int probe_warp() { return ((blockIdx.x * blockDim.x + threadIdx.x) >> 5) % PROBE_WARPS; }
__device__ void probe_turn_end();
#define RG_STAMP(id) (probe_cur[probe_warp()][(id)] = clock64())
#define RG_STAMP_TURN_END() probe_turn_end()
#endif

#ifdef PROBE_REPLY_NO_FENCE
/* Not a safe protocol: the reply's seq as a plain store, to measure what the system-scope release costs. */
#define RG_REPLY_RELEASE(p, v) rg_st_vol((p), (v))
#endif

#include RG_UNIT

static_assert(RG_NSTAMPS <= PROBE_MAX_STAMPS, "more stamps than the probe records");

#ifdef RG_PROFILE
/* A record: the worker's stamps, the ingress warp's IN_* stamps, then globaltimer (clock calibration). */
__device__ void probe_turn_end() {
  const unsigned int w = probe_warp();
  unsigned long long* r = probe_rec[probe_n % PROBE_RECORDS];
  for (int i = 0; i < RG_NSTAMPS; i++) r[i] = probe_cur[w][i];
  for (int i = RG_S_IN_SEEN; i <= RG_S_IN_PUBLISHED; i++) r[i] = probe_cur[0][i];
  unsigned long long g;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g));
  r[PROBE_MAX_STAMPS] = g;
  for (int i = 0; i < RG_NSTAMPS; i++) probe_cur[w][i] = 0;
  __threadfence();
  probe_n++;
}
#endif

__global__ void probe_pingpong(volatile unsigned int* in, volatile unsigned int* out, unsigned int n) {
  for (unsigned int i = 1; i <= n; i++) {
    while (rg_ld_acq_sys((const unsigned int*)in) != i) {}
    rg_st_rel_sys((unsigned int*)out, i);
  }
}

#define CHECK(x)                                                                    \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(2);                                                                      \
    }                                                                               \
  } while (0)

static double now_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}
static double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, (size_t)(p * (v.size() - 1) + 0.5))];
}
static void print_dist(const char* name, const std::vector<double>& v) {
  printf("\"%s\":{\"p50\":%.1f,\"p99\":%.1f,\"min\":%.1f,\"n\":%zu}", name, pct(v, 0.5), pct(v, 0.99), pct(v, 0), v.size());
}

struct Ring {
  rg_RingHeader* h;
  unsigned char* dev;
  unsigned int cap, slot;
  unsigned char* at(unsigned int i) const { return (unsigned char*)h + RG_RING_HDR + (size_t)(i & (cap - 1)) * slot; }
};

static unsigned int put_uint(unsigned char* p, unsigned int v) {
  if (v < 128) { p[0] = (unsigned char)v; return 1; }
  p[0] = 0xce; p[1] = v >> 24; p[2] = v >> 16; p[3] = v >> 8; p[4] = v; return 5;
}

int main(int argc, char** argv) {
  if (argc < 4) { fprintf(stderr, "usage: ask-probe <label> echo|chain|pingpong <n> [partitions] [hops]\n"); return 2; }
  const std::string label = argv[1], mode = argv[2];
  const unsigned int n = (unsigned int)atoi(argv[3]);
  CHECK(cudaSetDeviceFlags(cudaDeviceMapHost));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  if (mode == "pingpong") {
    unsigned int* words;
    CHECK(cudaHostAlloc(&words, 256, cudaHostAllocMapped));
    memset(words, 0, 256);
    unsigned int* dw;
    CHECK(cudaHostGetDevicePointer(&dw, words, 0));
    probe_pingpong<<<1, 1, 0, stream>>>(dw, dw + 32, n);
    std::vector<double> rtt;
    for (unsigned int i = 1; i <= n; i++) {
      const double t0 = now_ns();
      __atomic_store_n(&words[0], i, __ATOMIC_SEQ_CST);
      while (__atomic_load_n(&words[32], __ATOMIC_ACQUIRE) != i) {}
      if (i > n / 10) rtt.push_back((now_ns() - t0) / 1000.0);
    }
    CHECK(cudaStreamSynchronize(stream));
    printf("{\"label\":\"%s\",\"mode\":\"pingpong\",", label.c_str());
    print_dist("rttUs", rtt);
    printf("}\n");
    return 0;
  }

  const unsigned int partitions = argc > 4 ? (unsigned int)atoi(argv[4]) : 3;
  const unsigned int hops = argc > 5 ? (unsigned int)atoi(argv[5]) : 0;
  const unsigned int slot = 256, ringCap = 4096, replyCap = 4096, queueCap = 1024, maxActors = 1 << 16;
  unsigned int dirCap = 1;
  while (dirCap < 2 * maxActors) dirCap <<= 1;

  // Host-shared: control block | inbound ring | reply ring (pinned, mapped; the backend's layout).
  const size_t ringBytes = RG_RING_HDR + (size_t)ringCap * slot, replyBytes = RG_RING_HDR + (size_t)replyCap * slot;
  unsigned char* host;
  CHECK(cudaHostAlloc(&host, sizeof(rg_ControlBlock) + ringBytes + replyBytes, cudaHostAllocMapped));
  memset(host, 0, sizeof(rg_ControlBlock) + ringBytes + replyBytes);
  unsigned char* hostDev;
  CHECK(cudaHostGetDevicePointer(&hostDev, host, 0));
  rg_ControlBlock* cb = (rg_ControlBlock*)host;
  Ring in{(rg_RingHeader*)(host + sizeof(rg_ControlBlock)), hostDev + sizeof(rg_ControlBlock), ringCap, slot};
  Ring out{(rg_RingHeader*)(host + sizeof(rg_ControlBlock) + ringBytes), hostDev + sizeof(rg_ControlBlock) + ringBytes, replyCap, slot};
  in.h->capacity = ringCap; in.h->slotSize = slot;
  out.h->capacity = replyCap; out.h->slotSize = slot;

  const size_t queueBytes = RG_RING_HDR + (size_t)queueCap * slot;
  unsigned char *queues, *states, *globals;
  rg_DirEntry* directory;
  rg_RouteEntry* routes;
  CHECK(cudaMalloc(&queues, queueBytes * partitions));
  CHECK(cudaMalloc(&states, rg_states_region_bytes(maxActors))); /* the states, then a StateMeta per slot (codegen state-meta.ts) */
  CHECK(cudaMalloc(&directory, (size_t)dirCap * sizeof(rg_DirEntry)));
  // DeviceGlobals, the counter rows, one laneSeen word per host lane (one lane here).
  CHECK(cudaMalloc(&globals, sizeof(rg_DeviceGlobals) + (partitions + 1) * RG_NCOUNTERS * 4 + 4));
  CHECK(cudaMalloc(&routes, (RG_SELF_ID + 1) * sizeof(rg_RouteEntry)));
  unsigned char* scratch;
  CHECK(cudaMalloc(&scratch, RG_SCRATCH_BYTES * RG_SCRATCH_LANES * partitions));
  CHECK(cudaMemset(queues, 0, queueBytes * partitions));
  CHECK(cudaMemset(states, 0, rg_states_region_bytes(maxActors)));
  CHECK(cudaMemset(directory, 0, (size_t)dirCap * sizeof(rg_DirEntry)));
  CHECK(cudaMemset(globals, 0, sizeof(rg_DeviceGlobals) + (partitions + 1) * RG_NCOUNTERS * 4 + 4));
  std::vector<rg_RouteEntry> rt(RG_SELF_ID + 1);
  memset(rt.data(), 0, rt.size() * sizeof(rg_RouteEntry));
  rt[RG_SELF_ID].queuesLo = (unsigned int)(size_t)queues;
  rt[RG_SELF_ID].queuesHi = (unsigned int)((size_t)queues >> 32);
  rt[RG_SELF_ID].partitions = partitions;
  rt[RG_SELF_ID].queueCapacity = queueCap;
  rt[RG_SELF_ID].slotSize = slot;
  CHECK(cudaMemcpy(routes, rt.data(), rt.size() * sizeof(rg_RouteEntry), cudaMemcpyHostToDevice));
  CHECK(cudaDeviceSynchronize());

  const unsigned int threads = 128, blocks = ((partitions + 1) * 32 + threads - 1) / threads;
  RG_ENTRY<<<blocks, threads, 0, stream>>>((rg_ControlBlock*)hostDev, in.dev, out.dev, queues, states, directory, globals, routes, scratch,
                                           /* no K2K overflow pool: the probe times the queue path */ (unsigned char*)nullptr, 0u,
                                           RG_SELF_ID + 1, partitions, queueCap, ringCap, replyCap, slot, maxActors, dirCap, 1u << 20, 1u << 16,
                                           /* one host lane */ 1u, (unsigned long long)ringBytes,
                                           /* no timers (Echo declares none) */ (unsigned char*)nullptr, (unsigned char*)nullptr);
  auto handshake = [&](unsigned int want, unsigned int epoch) {
    if (want) {
      __atomic_store_n(&cb->requested, want, __ATOMIC_SEQ_CST);
      __atomic_store_n(&cb->requestEpoch, epoch, __ATOMIC_SEQ_CST);
    }
    const double t0 = now_ns();
    const unsigned int expect = want == RG_KS_STOP ? RG_KS_STOPPED : want ? want : RG_KS_IDLE;
    while (!(__atomic_load_n(&cb->ackEpoch, __ATOMIC_ACQUIRE) == epoch && __atomic_load_n(&cb->observed, __ATOMIC_ACQUIRE) == expect)) {
      if (now_ns() - t0 > 5e9) { fprintf(stderr, "handshake %u timed out (observed %u)\n", want, cb->observed); exit(3); }
    }
  };
  handshake(0, 0);
  handshake(RG_KS_ACTIVE, 1);

  unsigned int sent = 0, got = 0;
  auto ask = [&](unsigned int method, unsigned long long key, const unsigned char* payload, unsigned int len, unsigned int corr) {
    while (sent - __atomic_load_n(&in.h->tail, __ATOMIC_ACQUIRE) >= ringCap) {}
    rg_SlotHeader* h = (rg_SlotHeader*)in.at(sent);
    memcpy((unsigned char*)h + RG_HDR, payload, len);
    h->length = len; h->method = method; h->flags = RG_ASK; h->corr = corr;
    h->keyLo = (unsigned int)key; h->keyHi = (unsigned int)(key >> 32);
    h->sender = RG_HOST_SENDER; h->grain = RG_SELF_ID; h->time = 0;
    __atomic_store_n(&h->seq, ++sent, __ATOMIC_SEQ_CST);
  };
  auto reply = [&](unsigned int corr) {
    rg_SlotHeader* h = (rg_SlotHeader*)out.at(got);
    const double t0 = now_ns();
    while (__atomic_load_n(&h->seq, __ATOMIC_ACQUIRE) != got + 1) {
      if (now_ns() - t0 > 5e9) { fprintf(stderr, "no reply to ask %u\n", corr); exit(4); }
    }
    if (h->corr != corr || (h->flags & (RG_ERROR | RG_REJECTED))) { fprintf(stderr, "ask %u: reply corr %u flags %u\n", corr, h->corr, h->flags); exit(5); }
    got++;
    __atomic_store_n(&out.h->tail, got, __ATOMIC_RELEASE);
  };

  std::vector<double> rtt;
  const unsigned int warm = n / 10;
  double t0all = 0;
  if (mode == "echo") {
    for (unsigned int i = 0; i < n + warm; i++) {
      unsigned char p[8] = {0x81, 0xa1, 'x'};
      const unsigned int len = 3 + put_uint(p + 3, i & 127);
      if (i == warm) t0all = now_ns();
      const double t0 = now_ns();
      ask(0, i % 64, p, len, i + 1);
      reply(i + 1);
      if (i >= warm) rtt.push_back((now_ns() - t0) / 1000.0);
    }
  } else {
    for (unsigned int i = 0; i < n + warm; i++) {
      unsigned char p[16] = {0x81, 0xa4, 'l', 'e', 'f', 't'};
      const unsigned int len = 6 + put_uint(p + 6, hops);
      if (i == warm) t0all = now_ns();
      const double t0 = now_ns();
      ask(0, 0, p, len, i + 1);
      reply(i + 1);
      if (i >= warm) rtt.push_back((now_ns() - t0) / 1000.0);
    }
  }
  const double wallS = (now_ns() - t0all) / 1e9;
  handshake(RG_KS_STOP, 2);
  CHECK(cudaStreamSynchronize(stream));

  printf("{\"label\":\"%s\",\"mode\":\"%s\",\"partitions\":%u,\"hops\":%u,\"asksPerS\":%.0f,", label.c_str(), mode.c_str(), partitions, hops, n / wallS);
  print_dist("rttUs", rtt);
#ifdef RG_PROFILE
  unsigned int recs = 0;
  CHECK(cudaMemcpyFromSymbol(&recs, probe_n, sizeof(recs)));
  const unsigned int keep = std::min(recs, (unsigned int)PROBE_RECORDS);
  std::vector<unsigned long long> rec((size_t)PROBE_RECORDS * (PROBE_MAX_STAMPS + 1));
  CHECK(cudaMemcpyFromSymbol(rec.data(), probe_rec, rec.size() * sizeof(unsigned long long)));
  auto R = [&](unsigned int i, int s) { return rec[(size_t)(i % PROBE_RECORDS) * (PROBE_MAX_STAMPS + 1) + s]; };
  const unsigned int first = recs - keep;
  // Clock rate from the first and last records' (clock64, globaltimer) pairs.
  const double ghz = keep > 1 ? (double)(R(recs - 1, RG_S_W_DONE) - R(first, RG_S_W_DONE)) / (double)(R(recs - 1, PROBE_MAX_STAMPS) - R(first, PROBE_MAX_STAMPS)) : 1.0;
  printf(",\"smClockGHz\":%.3f,\"records\":%u,\"stagesNs\":{", ghz, keep);
  // Stage = time from the previous stamp on the path; a record whose stamps run backwards is skipped.
  static const int echoPath[] = {RG_S_IN_SEEN, RG_S_IN_LOADED, RG_S_IN_CLAIMED, RG_S_IN_PUBLISHED, RG_S_W_SEEN, RG_S_W_DECODED, RG_S_W_ACTIVATED,
                                 RG_S_W_HANDLED, RG_S_W_ENCODED, RG_S_W_REPLY_CLAIMED, RG_S_W_REPLIED, RG_S_W_DONE};
  static const int hopPath[] = {RG_S_W_SEEN, RG_S_W_DECODED, RG_S_W_ACTIVATED, RG_S_K2K_SEND, RG_S_K2K_CLAIMED, RG_S_K2K_FILLED, RG_S_K2K_PUBLISHED, RG_S_W_HANDLED, RG_S_W_DONE};
  static const char* names[] = {"IN_SEEN", "IN_LOADED", "IN_CLAIMED", "IN_PUBLISHED", "W_SEEN", "W_DECODED", "W_ACTIVATED", "W_HANDLED",
                                "W_ENCODED", "W_REPLY_CLAIMED", "W_REPLIED", "W_DONE", "K2K_SEND", "K2K_CLAIMED", "K2K_FILLED", "K2K_PUBLISHED"};
  static_assert(sizeof(names) / sizeof(names[0]) == RG_NSTAMPS, "stamp names follow device.ts STAMPS");
  const bool chain = mode == "chain";
  const int* path = chain ? hopPath : echoPath;
  const int plen = chain ? sizeof(hopPath) / sizeof(int) : sizeof(echoPath) / sizeof(int);
  std::vector<std::vector<double>> st(plen);
  std::vector<double> queueHop, deviceSpan;
  unsigned int skipped = 0;
  for (unsigned int i = first + (keep / 10); i < recs; i++) {
    bool ok = true;
    for (int j = 1; j < plen; j++) ok = ok && R(i, path[j]) >= R(i, path[j - 1]) && R(i, path[j - 1]) != 0;
    if (!ok) { skipped++; continue; }
    for (int j = 1; j < plen; j++) st[j].push_back((R(i, path[j]) - R(i, path[j - 1])) / ghz);
    if (!chain) deviceSpan.push_back((R(i, RG_S_W_REPLIED) - R(i, RG_S_IN_SEEN)) / ghz);
    // The queue hop: this turn's K2K publish to the next worker seeing it.
    if (chain && i + 1 < recs && R(i, RG_S_K2K_PUBLISHED) && R(i + 1, RG_S_W_SEEN) > R(i, RG_S_K2K_PUBLISHED))
      queueHop.push_back((R(i + 1, RG_S_W_SEEN) - R(i, RG_S_K2K_PUBLISHED)) / ghz);
  }
  for (int j = 1; j < plen; j++) {
    printf("%s", j > 1 ? "," : "");
    print_dist(names[path[j]], st[j]);
  }
  printf("},\"skipped\":%u,", skipped);
  print_dist(chain ? "queueHopNs" : "deviceSpanNs", chain ? queueHop : deviceSpan);
#endif
  printf("}\n");
  return 0;
}
