// End-to-end run of the generated Account unit on a real GPU, without the TS backend: pinned mapped
// rings, device queues, the persistent kernel, the IDLE → ACTIVE → STOP handshake, asks, K2K
// transfers, a malformed payload, and counters. CI compiles it against the current generated unit
// (codegen test/compile.test.ts), so its launch cannot drift from the kernel's parameters. Build (from this directory):
//   pnpm codegen examples/bank/grains.ts --out packages/codegen/test/gpu/out
//   nvcc -arch=sm_90 -std=c++17 -Iout account-driver.cu -o drv && ./drv
#include "Account.cu"
#include <atomic>
#include <functional>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); return 2; } } while (0)
static const unsigned P = 6, QCAP = 64, RCAP = 256, REPCAP = 256, SLOT = 256, MAXA = 4096, DIRCAP = 8192;
static int failures = 0;
#define EXPECT(c, ...) do { if (!(c)) { failures++; printf("FAIL: " __VA_ARGS__); printf("\n"); } } while (0)

static volatile unsigned* vol(void* p) { return (volatile unsigned*)p; }
static bool waitFor(std::function<bool()> f, int ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) { if (f()) return true; }
  return false;
}

struct Host {
  rg_ControlBlock* cb; unsigned char* in; unsigned char* rep;
  unsigned head = 0, repTail = 0;
  unsigned char* slot(unsigned char* ring, unsigned i, unsigned cap) { return ring + RG_RING_HDR + (i & (cap - 1)) * SLOT; }
  bool send(unsigned method, long long key, unsigned corr, const unsigned char* payload, unsigned len) {
    if (head - *vol(&((rg_RingHeader*)in)->tail) >= RCAP) return false;
    unsigned char* s = slot(in, head, RCAP);
    rg_SlotHeader* h = (rg_SlotHeader*)s;
    h->length = len; h->method = method; h->flags = corr ? RG_ASK : 0; h->corr = corr;
    h->keyLo = (unsigned)key; h->keyHi = (unsigned)((unsigned long long)key >> 32); h->sender = RG_HOST_SENDER; h->grain = 0; h->time = 1.0;
    memcpy(s + RG_HDR, payload, len);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *vol(&h->seq) = head + 1;
    head++;
    return true;
  }
  // Returns the reply slot or null; call release() after reading.
  rg_SlotHeader* poll() {
    rg_SlotHeader* h = (rg_SlotHeader*)slot(rep, repTail, REPCAP);
    if (*vol(&h->seq) != repTail + 1) return nullptr;
    std::atomic_thread_fence(std::memory_order_acquire);
    return h;
  }
  void release() { repTail++; std::atomic_thread_fence(std::memory_order_seq_cst); *vol(&((rg_RingHeader*)rep)->tail) = repTail; }
};

static double be64(const unsigned char* p) { unsigned long long u = 0; for (int i = 0; i < 8; i++) u = (u << 8) | p[i]; double d; memcpy(&d, &u, 8); return d; }

int main() {
  CK(cudaSetDeviceFlags(cudaDeviceMapHost));
  Host H;
  const size_t inBytes = RG_RING_HDR + (size_t)RCAP * SLOT, repBytes = RG_RING_HDR + (size_t)REPCAP * SLOT;
  CK(cudaHostAlloc((void**)&H.cb, sizeof(rg_ControlBlock), cudaHostAllocMapped));
  CK(cudaHostAlloc((void**)&H.in, inBytes, cudaHostAllocMapped));
  CK(cudaHostAlloc((void**)&H.rep, repBytes, cudaHostAllocMapped));
  memset(H.cb, 0, sizeof(rg_ControlBlock)); memset(H.in, 0, inBytes); memset(H.rep, 0, repBytes);
  ((rg_RingHeader*)H.in)->capacity = RCAP; ((rg_RingHeader*)H.in)->slotSize = SLOT;
  ((rg_RingHeader*)H.rep)->capacity = REPCAP; ((rg_RingHeader*)H.rep)->slotSize = SLOT;
  rg_ControlBlock* dcb; unsigned char *din, *drep;
  CK(cudaHostGetDevicePointer((void**)&dcb, H.cb, 0));
  CK(cudaHostGetDevicePointer((void**)&din, H.in, 0));
  CK(cudaHostGetDevicePointer((void**)&drep, H.rep, 0));
  const size_t qBytes = RG_RING_HDR + (size_t)QCAP * SLOT;
  // DeviceGlobals, the counter rows, one laneSeen word per host lane (one lane here).
  const size_t gBytes = sizeof(rg_DeviceGlobals) + (P + 1) * RG_NCOUNTERS * 4 + 4;
  unsigned char *queues, *states, *globals; rg_DirEntry* dir; rg_RouteEntry* routes;
  CK(cudaMalloc(&queues, P * qBytes)); CK(cudaMemset(queues, 0, P * qBytes));
  // The states, then a StateMeta per slot (dirty marks: codegen state-meta.ts).
  CK(cudaMalloc(&states, rg_states_region_bytes(MAXA))); CK(cudaMemset(states, 0, rg_states_region_bytes(MAXA)));
  CK(cudaMalloc(&dir, DIRCAP * sizeof(rg_DirEntry))); CK(cudaMemset(dir, 0, DIRCAP * sizeof(rg_DirEntry)));
  CK(cudaMalloc(&globals, gBytes)); CK(cudaMemset(globals, 0, gBytes));
  CK(cudaMalloc(&routes, sizeof(rg_RouteEntry)));
  rg_RouteEntry re; memset(&re, 0, sizeof re);
  re.queuesLo = (unsigned)(unsigned long long)queues; re.queuesHi = (unsigned)((unsigned long long)queues >> 32);
  re.partitions = P; re.queueCapacity = QCAP; re.slotSize = SLOT;
  CK(cudaMemcpy(routes, &re, sizeof re, cudaMemcpyHostToDevice));
  cudaStream_t st; CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  const unsigned blocks = ((P + 1) * 32 + 127) / 128;
  unsigned char* scratch; CK(cudaMalloc(&scratch, RG_SCRATCH_BYTES * RG_SCRATCH_LANES * P));
  // No K2K overflow pool (nullptr, 0 nodes): a K2K send into a full queue retries sendBudget times.
  rg_Account_main<<<blocks, 128, 0, st>>>(dcb, din, drep, queues, states, dir, globals, routes, scratch, nullptr, 0u,
                                          1u, P, QCAP, RCAP, REPCAP, SLOT, MAXA, DIRCAP, 100000u, 1000u,
                                          /* one host lane */ 1u, (unsigned long long)inBytes,
                                          /* no timers (Account declares none) */ nullptr, nullptr);
  CK(cudaGetLastError());
  EXPECT(waitFor([&] { return *vol(&H.cb->observed) == RG_KS_IDLE; }, 5000), "kernel never reported IDLE");
  H.cb->requested = RG_KS_ACTIVE; std::atomic_thread_fence(std::memory_order_seq_cst); *vol(&H.cb->requestEpoch) = 1;
  EXPECT(waitFor([&] { return *vol(&H.cb->ackEpoch) == 1 && *vol(&H.cb->observed) == RG_KS_ACTIVE; }, 5000), "ACTIVE not acknowledged");

  // Asks: deposits to 40 keys, checked against a host model; tells: transfers (K2K credit).
  std::map<long long, double> model;
  std::map<unsigned, std::pair<long long, double>> pending;
  unsigned corr = 1, asks = 0, tells = 0, answered = 0;
  unsigned char buf[256];
  auto drain = [&]() {
    while (rg_SlotHeader* h = H.poll()) {
      const unsigned char* p = (const unsigned char*)h + RG_HDR;
      auto it = pending.find(h->corr);
      if (h->flags & (RG_ERROR | RG_REJECTED)) { EXPECT(h->corr == 999, "unexpected error reply corr %u flags %u: %.*s", h->corr, h->flags, (int)h->length - 1, (const char*)p + 1); }
      else if (it != pending.end()) {
        // {"balance": f64}: 81 a7 "balance" cb <8 bytes>
        EXPECT(h->length == 18 && p[0] == 0x81 && p[1] == 0xa7 && p[9] == 0xcb, "reply shape for corr %u", h->corr);
        EXPECT(be64(p + 10) == it->second.second, "corr %u balance %f expected %f", h->corr, be64(p + 10), it->second.second);
        EXPECT(h->sender == 0 && h->flags == RG_REPLY, "reply header");
        pending.erase(it);
      }
      answered++;
      H.release();
    }
  };
  auto t0 = std::chrono::steady_clock::now();
  for (int round = 0; round < 25; round++) {
    for (long long k = -20; k < 20; k++) {
      rg_Account_deposit_req d; d.amount = (double)(k * 3 + round) * 0.5;
      rg_wr w = {buf, 0u, sizeof buf}; rg_enc_Account_deposit_req(&d, &w);
      model[k] += d.amount;
      pending[corr] = {k, model[k]};
      while (!H.send(0, k, corr, buf, w.pos)) drain();
      corr++; asks++;
    }
    drain();
  }
  EXPECT(waitFor([&] { drain(); return pending.empty(); }, 10000), "%zu asks unanswered", pending.size());
  auto t1 = std::chrono::steady_clock::now();
  for (long long k = -20; k < 20; k++) {
    rg_Account_transfer_req tr; tr.to = (int)(k + 1000); tr.amount = 1.25;
    rg_wr w = {buf, 0u, sizeof buf}; rg_enc_Account_transfer_req(&tr, &w);
    if (model[k] >= 1.25) { model[k] -= 1.25; model[k + 1000] += 1.25; }
    while (!H.send(2, k, 0, buf, w.pos)) drain();
    tells++;
  }
  // A malformed payload (an ask): rejected, counted, answered with REJECTED.
  const unsigned char junk[3] = {0x81, 0xa1, 0x78};
  H.send(0, 5, 999, junk, 3);
  // Wait until every turn (asks, transfers, credits, the rejected one) is processed, then check balances.
  const unsigned expectProcessed = asks + tells + 40 /* credits where balance sufficed, checked below */;
  unsigned credits = 0;
  for (auto& kv : model) if (kv.first >= 980) credits++;
  EXPECT(waitFor([&] { drain(); return *vol(&H.cb->processed) == asks + tells + credits && *vol(&H.cb->rejected) == 1; }, 10000),
         "processed %u (want %u) rejected %u", *vol(&H.cb->processed), asks + tells + credits, *vol(&H.cb->rejected));
  (void)expectProcessed;
  for (auto& kv : model) {
    rg_Account_balance_req b; rg_wr w = {buf, 0u, sizeof buf}; rg_enc_Account_balance_req(&b, &w);
    while (!H.send(4, kv.first, corr, buf, w.pos)) drain();
    pending[corr] = kv;
    corr++; asks++;
  }
  // balance replies are {balance, ops}: check only the balance prefix.
  EXPECT(waitFor([&] {
    while (rg_SlotHeader* h = H.poll()) {
      const unsigned char* p = (const unsigned char*)h + RG_HDR;
      auto it = pending.find(h->corr);
      if (it != pending.end() && !(h->flags & (RG_ERROR | RG_REJECTED))) {
        EXPECT(p[0] == 0x82 && p[1] == 0xa7 && p[9] == 0xcb, "balance reply shape");
        EXPECT(be64(p + 10) == it->second.second, "key %lld balance %f expected %f", it->second.first, be64(p + 10), it->second.second);
        pending.erase(it);
      } else EXPECT(h->corr == 999 && (h->flags & RG_REJECTED), "unexpected reply corr %u flags %u", h->corr, h->flags);
      H.release();
    }
    return pending.empty();
  }, 10000), "%zu balance asks unanswered", pending.size());
  EXPECT(waitFor([&] { return *vol(&H.cb->processed) == asks + tells + credits && *vol(&H.cb->replied) == asks; }, 5000), "counters processed %u replied %u asks %u", *vol(&H.cb->processed), *vol(&H.cb->replied), asks);
  unsigned beat = *vol(&H.cb->heartbeat);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT(*vol(&H.cb->heartbeat) != beat, "heartbeat stood still");
  printf("counters: received %u processed %u replied %u k2kSent %u k2kReceived %u handlerErrors %u rejected %u activations %u\n",
         H.cb->received, H.cb->processed, H.cb->replied, H.cb->k2kSent, H.cb->k2kReceived, H.cb->handlerErrors, H.cb->rejected, H.cb->activations);
  EXPECT(H.cb->k2kSent == credits && H.cb->k2kReceived == credits, "k2k counters");
  EXPECT(H.cb->activations == 40 + credits, "activations %u", H.cb->activations);
  printf("1000 deposit asks pipelined in %.2f ms\n", std::chrono::duration<double, std::milli>(t1 - t0).count());

  H.cb->requested = RG_KS_STOP; std::atomic_thread_fence(std::memory_order_seq_cst); *vol(&H.cb->requestEpoch) = 2;
  EXPECT(waitFor([&] { return *vol(&H.cb->ackEpoch) == 2 && *vol(&H.cb->observed) == RG_KS_STOPPED; }, 5000), "STOP not acknowledged");
  CK(cudaStreamSynchronize(st));
  printf("%s: %d failures\n", failures ? "FAILED" : "PASSED", failures);
  return failures ? 1 : 0;
}
