/*
 * The host's side of residency-loops.test.ts: the control blocks, partition queues written directly (as a K2K
 * producer writes them: head claimed, slot, seq released), the reply ring drained, and the residency host block
 * (load-request ring read, install board written, requests in seq order answered by doneSeq). The device's control
 * warp, P worker warps and one host-lane ingress warp run the unit's own loops (RG_G(control), RG_G(worker),
 * RG_G(lane_ingress)) on 32 threads each. Prints what happened, one line per step; exits 1 when a handshake or a
 * request is not answered within 5 s (with the device's residency words), 0 once every warp ended at EXIT.
 */
#ifndef P
#define P 2u
#endif
#define LANES 2u
#define MAXA 64u
#define DIRCAP 128u
#define QCAP 16u
#define SLOT 256u
#define REPLYCAP 64u
#define NODES (P + 64u)
#define LOADCAP 64u
#define EVCAP 16u
static unsigned char* al(size_t n) {
  n = (n + 255) & ~(size_t)255;
  unsigned char* p = (unsigned char*)aligned_alloc(256, n);
  memset(p, 0, n);
  return p;
}
static unsigned char* cbs;
static unsigned char* replies;
static unsigned char* queues;
static rg_ResidencyHostBlock* hb;
static unsigned char* area;
static rg_ResidencyGlobals* rg;
static rg_DeviceGlobals* dg;
static unsigned int* acks;
static unsigned int epoch = 0, replyTail = 0, loadTail = 0, corrs = 0, want = 0, seqWant = 0;
static rg_kernel K;
static struct { size_t acksAt, roomsAt, parksAt, stagingAt, boardAt, kindsAt, statesAt, errorAt, bytes; } L;
static std::vector<long long> loads;
static rg_ControlBlock* cb(unsigned int l) { return (rg_ControlBlock*)(cbs + (size_t)l * RG_CONTROL_STRIDE); }
static double now() {
  using namespace std::chrono;
  return 1000.0 + (double)duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count() / 1000.0;
}
static unsigned int ld(const unsigned int* p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static void st(unsigned int* p, unsigned int v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }
static bool until(const char* what, bool (*f)()) {
  const auto t0 = std::chrono::steady_clock::now();
  while (!f()) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(5)) { printf("TIMEOUT %s\n", what); return false; }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}
static void dump() {
  printf("device: host seq %u op %u doneSeq %u, relayed seq %u op %u, mode %u, acks", ld(&hb->seq), ld(&hb->op),
         ld(&hb->doneSeq), ld(&rg->seq), ld(&rg->op), ld(&dg->mode));
  for (unsigned p = 0; p < P; p++) printf(" %u", ld(&acks[p]));
  printf("\n");
}
static bool acked() {
  for (unsigned l = 0; l < LANES; l++)
    if (ld(&cb(l)->ackEpoch) != epoch || ld(&cb(l)->observed) != want) return false;
  return true;
}
/* core kernel.ts handshake: requested and its epoch on every lane's block, the answer on every lane's. */
static bool handshake(unsigned int req, unsigned int w) {
  want = w;
  epoch++;
  for (unsigned l = 0; l < LANES; l++) { st(&cb(l)->requested, req); st(&cb(l)->requestEpoch, epoch); }
  const bool ok = until(req == RG_KS_STOP ? "STOP" : "ACTIVE", acked);
  printf("%s %s\n", req == RG_KS_STOP ? "STOPPED" : "ACTIVE", ok ? "acknowledged" : "NOT ACKNOWLEDGED");
  return ok;
}
/* The replies written since the last call, and whether each fits its slot (a longer one overran the next slot). */
static void drainReplies() {
  rg_RingHeader* r = (rg_RingHeader*)replies;
  for (;;) {
    rg_SlotHeader* h = (rg_SlotHeader*)(replies + RG_RING_HDR + (replyTail & (REPLYCAP - 1u)) * SLOT);
    if (ld(&h->seq) != replyTail + 1u) break;
    printf("reply corr %u flags %u %s\n", h->corr, h->flags, RG_HDR + h->length <= SLOT ? "fits" : "PAST ITS SLOT");
    replyTail++;
    st(&r->tail, replyTail);
  }
}
/* One message into slot `s` of a ring at index `idx`: the payload, the header, then seq last. Returns its corr. */
static unsigned int writeSlot(unsigned char* s, unsigned int idx, unsigned int method, long long key, double n,
                              bool ask) {
  RG_G(req) u;
  memset(&u, 0, sizeof u);
  if (method == 0u) u.m0.n = n;
  if (method == 1u) u.m1.n = n;
  rg_wr w = {s + RG_HDR, 0u, SLOT - RG_HDR};
  if (!RG_G(encode_request)(method, &u, &w)) { printf("encode failed\n"); exit(2); }
  rg_SlotHeader* h = (rg_SlotHeader*)s;
  h->length = w.pos; h->method = method; h->flags = ask ? RG_ASK : 0u; h->corr = ask ? ++corrs : 0u;
  h->keyLo = (unsigned int)key; h->keyHi = (unsigned int)((unsigned long long)key >> 32);
  h->sender = RG_HOST_SENDER; h->grain = 0; h->time = now();
  st(&h->seq, idx + 1u);
  return h->corr;
}
/* Through the host rings (as core writes them): inbound ring `key % LANES`, moved by that lane's ingress warp. */
static bool viaRings = false;
static unsigned char* inboundRings;
static size_t inStride;
static unsigned int inHead[LANES];
static void sendHost(unsigned int method, long long key, double n, bool ask) {
  const unsigned int l = (unsigned int)(key % LANES), idx = inHead[l]++;
  unsigned char* s = inboundRings + l * inStride + RG_RING_HDR + (idx & 15u) * SLOT;
  const unsigned int corr = writeSlot(s, idx, method, key, n, ask);
  st(&((rg_RingHeader*)(inboundRings + l * inStride))->head, idx + 1u);
  printf("send method %u key %lld corr %u\n", method, key, corr);
}
static void send(unsigned int method, long long key, double n, bool ask) {
  if (viaRings) { sendHost(method, key, n, ask); return; }
  const unsigned int p = rg_partition(key, P);
  unsigned char* qb = queues + (size_t)p * (RG_RING_HDR + QCAP * SLOT);
  const unsigned int idx = __atomic_fetch_add(&((rg_RingHeader*)qb)->head, 1u, __ATOMIC_SEQ_CST);
  unsigned char* s = qb + RG_RING_HDR + (idx & (QCAP - 1u)) * SLOT;
  const unsigned int corr = writeSlot(s, idx, method, key, n, ask);
  printf("send method %u key %lld corr %u\n", method, key, corr);
}
static bool answered() { return ld(&hb->doneSeq) == seqWant; }
/* residency.ts ResidencyHost.request: op and its words, then seq; answered once doneSeq is seq. */
static bool request(unsigned int op) {
  st(&hb->op, op);
  seqWant = ld(&hb->seq) + 1u;
  st(&hb->seq, seqWant);
  const char* name = op == RG_RES_OP_INSTALL ? "install" : "deactivate";
  const bool ok = until(name, answered);
  printf("%s %u %s: evicted %u installed %u rejected %u\n", name, seqWant, ok ? "answered" : "NOT ANSWERED",
         hb->evicted, hb->installed, hb->rejected);
  if (!ok) dump();
  return ok;
}
static bool posted() {
  rg_LoadRequest* ring = (rg_LoadRequest*)(hb + 1);
  for (rg_LoadRequest* q; ld(&(q = &ring[loadTail & (LOADCAP - 1u)])->seq) == loadTail + 1u; loadTail++)
    loads.push_back((long long)(((unsigned long long)q->keyHi << 32) | q->keyLo));
  st(&hb->loadTail, loadTail);
  return !loads.empty();
}
/* The keys posted for loading, installed as `kind` rows (ABSENT, or FAILED with a 700-byte store error). */
static bool install(unsigned int kind) {
  if (!until("a load posted", posted)) { dump(); return false; }
  unsigned char* board = area + L.boardAt;
  for (size_t i = 0; i < loads.size(); i++) {
    memcpy(board + 8 * i, &loads[i], 8);
    board[L.kindsAt + i] = (unsigned char)kind;
    memset(board + L.statesAt + i * sizeof(RG_G(state)), 0, sizeof(RG_G(state)));
    printf("load %lld\n", loads[i]);
  }
  static char err[701];
  memset(err, 'e', 700);
  memcpy(err, "the row does not decode", 23);
  memcpy(board + L.errorAt, err, 700);
  hb->rows = (unsigned int)loads.size();
  hb->mode = RG_RES_MODE_LOAD;
  hb->errorLength = kind == RG_RES_ROW_FAILED ? 700u : 0u;
  hb->failureId = kind == RG_RES_ROW_FAILED ? 9u : 0u;
  loads.clear();
  return request(RG_RES_OP_INSTALL);
}
static bool deactivate() {
  hb->before = INFINITY;
  hb->now = now();
  return request(RG_RES_OP_DEACTIVATE);
}
static void warp(unsigned int w, unsigned int lane) {
  threadIdx.x = w * 32u + lane;
  rg_h_w = w;
  rg_kernel k = K;
  if (w == 0u) RG_G(control)(&k, lane);
  else if (w <= P) { rg_h_worker = true; RG_G(worker)(&k, w - 1u, lane); }
  else RG_G(lane_ingress)(&k, w - P, lane);
}
static void place(unsigned int* lo, unsigned int* hi, const void* p) {
  *lo = (unsigned int)(unsigned long long)p;
  *hi = (unsigned int)((unsigned long long)p >> 32);
}
int main(int argc, char** argv) {
  setvbuf(stdout, 0, _IONBF, 0);
  const std::string scenario = argc > 1 ? argv[1] : "two";
  viaRings = argc > 2 && std::string(argv[2]) == "rings";
  L.acksAt = 512; L.roomsAt = 1024; L.parksAt = 1536; L.stagingAt = 4096; L.boardAt = 65536;
  L.kindsAt = 8 * 64; L.statesAt = 1024; L.errorAt = 1024 + 64 * sizeof(RG_G(state));
  L.bytes = L.boardAt + L.errorAt + 2048;
  area = al(L.bytes);
  rg = (rg_ResidencyGlobals*)area;
  acks = (unsigned int*)(area + L.acksAt);
  hb = (rg_ResidencyHostBlock*)al(sizeof(rg_ResidencyHostBlock) + 16 * LOADCAP + 64 * EVCAP);
  place(&rg->hostLo, &rg->hostHi, hb);
  place(&rg->acksLo, &rg->acksHi, area + L.acksAt);
  place(&rg->stagingLo, &rg->stagingHi, area + L.stagingAt);
  place(&rg->boardLo, &rg->boardHi, area + L.boardAt);
  place(&rg->parksLo, &rg->parksHi, area + L.parksAt);
  place(&rg->roomsLo, &rg->roomsHi, area + L.roomsAt);
  rg->evictCapacity = EVCAP; rg->evictStride = 64; rg->idleMs = INFINITY; rg->loadCapacity = LOADCAP;
  rg->boardKindsAt = L.kindsAt; rg->boardStatesAt = L.statesAt; rg->boardErrorAt = L.errorAt; rg->installCapacity = 64;
  unsigned char* globals = al(sizeof(rg_DeviceGlobals) + 4 * RG_NCOUNTERS * (P + 1) + 4 * LANES);
  dg = (rg_DeviceGlobals*)globals;
  dg->metaOn = 1; dg->hooksOn = 1; dg->loadOn = 1;
  cbs = al(RG_CONTROL_STRIDE * LANES);
  inStride = RG_RING_HDR + 16 * SLOT;
  unsigned char* inbound = inboundRings = al(inStride * LANES);
  for (unsigned l = 0; l < LANES; l++) {
    ((rg_RingHeader*)(inbound + l * inStride))->capacity = 16;
    ((rg_RingHeader*)(inbound + l * inStride))->slotSize = SLOT;
  }
  replies = al(RG_RING_HDR + REPLYCAP * SLOT);
  queues = al(P * (RG_RING_HDR + QCAP * SLOT));
  rg_kernel& k = K;
  memset(&k, 0, sizeof k);
  k.control = (rg_ControlBlock*)cbs; k.inbound = inbound; k.replies = replies; k.queues = queues;
  k.states = al(rg_states_region_bytes(MAXA)); k.directory = (rg_DirEntry*)al(sizeof(rg_DirEntry) * DIRCAP);
  k.g = dg; k.counters = (volatile unsigned int*)(globals + sizeof(rg_DeviceGlobals));
  k.scratch = al((size_t)P * RG_SCRATCH_LANES * RG_SCRATCH_BYTES);
  k.overflow = al(RG_OV_HDR + 8 * P + 16 + (size_t)NODES * (RG_OV_NODE_HDR + SLOT)); k.overflowNodes = NODES;
  k.partitions = P; k.queueCapacity = QCAP; k.ringCapacity = 16; k.replyCapacity = REPLYCAP; k.slotSize = SLOT;
  k.maxActors = MAXA; k.dirCapacity = DIRCAP; k.turnBudget = 1u << 20; k.sendBudget = 64; k.lanes = LANES;
  k.laneBytes = inStride; k.laneSeen = (unsigned int*)(k.counters + (P + 1) * RG_NCOUNTERS);
  k.queueBytes = RG_RING_HDR + (unsigned long long)QCAP * SLOT;
  k.metaOn = 1; k.hooksOn = 1; k.res = rg; k.loadOn = 1; k.claimPart = ~0u;
  rg_h_warps = new rg_h_warp[P + LANES];
  rg_h_mode_word = &dg->mode;
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < P + LANES; w++)
    for (unsigned l = 0; l < 32; l++) threads.emplace_back(warp, w, l);
  want = RG_KS_IDLE;
  bool ok = until("IDLE", acked) && handshake(RG_KS_ACTIVE, RG_KS_ACTIVE);
  if (scenario == "two" || scenario == "active-first") {
    /* bad-row-probe.ts: two actors loaded (their asks answered), then stopped */
    send(0, 5, 5, true); ok = ok && install(RG_RES_ROW_ABSENT); drainReplies();
    send(0, 6, 6, true); ok = ok && install(RG_RES_ROW_ABSENT); drainReplies();
    if (scenario == "active-first") {
      ok = ok && deactivate();
      send(0, 5, 1, true); ok = ok && install(RG_RES_ROW_ABSENT); drainReplies();
    }
  } else if (scenario == "failed") {
    /* a load that fails (an ask and a tell parked), another actor, the failed key again */
    send(0, 5, 1, true); send(1, 5, 1, false); ok = ok && install(RG_RES_ROW_FAILED); drainReplies();
    send(0, 6, 1, true); ok = ok && install(RG_RES_ROW_ABSENT); drainReplies();
    send(2, 5, 0, true); ok = ok && install(RG_RES_ROW_FAILED); drainReplies();
  }
  ok = ok && handshake(RG_KS_STOP, RG_KS_STOPPED);
  ok = ok && deactivate();
  drainReplies();
  /* residency.ts residencyExit: the stopped kernel may end */
  st(&hb->op, RG_RES_OP_EXIT);
  st(&hb->seq, ld(&hb->seq) + 1u);
  if (!ok) { dump(); _Exit(1); }
  for (auto& t : threads) t.join();
  printf("every warp ended\n");
  return 0;
}
