/*
 * Ringgrain CUDA runtime: warp cooperation and bulk jobs. A turn that runs alone on its worker warp runs on
 * lane 0; lanes 1..31 wait in rg_coop_help for work lane 0 posts in the warp's rg_coop (shared memory): bulk
 * copies (numeric arrays decoded from or encoded into a slot, a large reply sent to the host) and
 * element-parallel loops (codegen parallel.ts). A post is: lane 0 writes the job, a warp barrier (A), every
 * lane does its share in rg_coop_run (kernel-state.cuh: it dispatches on the unit's loops, RG_LOOP_CASES), a
 * warp barrier (B). On sm_70 and later __syncwarp may be reached from different places in the code, so lane 0
 * can post from deep inside a handler while the others wait in their loop. Lane 0 ends the turn with RG_CO_DONE.
 */
/* RG_HOST_COOP: a host build (the differential tests' harness) that runs element-parallel loops through
   the same runners and rg_coop_loop, with the harness emulating the warp (rg_coop_post, __shfl_xor_sync). */
#if defined(__CUDACC__) || defined(RG_HOST_COOP)
#define RG_CO_DONE 0u
#define RG_CO_COPY 1u
#define RG_CO_LOOP 2u
/* Iterations below which an element-parallel loop runs on lane 0 alone (a post costs two warp barriers). */
#ifndef RG_COOP_MIN_ITERS
#define RG_COOP_MIN_ITERS 64u
#endif
/* Bytes of captured values an element-parallel loop may pass to the lanes (codegen parallel.ts checks). */
struct rg_coop {
  unsigned int op;
  unsigned int n;     /* copy: bytes; loop: iterations */
  unsigned int id;    /* loop: which loop (rg_coop_run's switch) */
  unsigned int sys;   /* copy: the destination is host memory (fence at system scope before barrier B) */
  unsigned char* d;
  const unsigned char* s;
  double lo;          /* loop: the first value of its variable */
  /* loop results: the first failing iteration (0xffffffff: none), its error and message; iterations run */
  unsigned int failAt;
  int err;
  const char* msg;
  unsigned int iters;
  double red[RG_MAX_REDUCTIONS];       /* loop: the warp's combined reductions (parallel.ts Reduction) */
  rg_turn turn;       /* loop: lane 0's turn context, copied for the lanes */
  unsigned long long env[RG_COOP_ENV_BYTES / 8u];
  rg_DeviceGlobals* g; /* the kernel's bulk job boards (rg_bulk_*); 0: the warp runs every job alone */
};
__device__ static void rg_coop_run(rg_coop* co, unsigned int lane);
/* Generated per unit: iterations [from, to) of element-parallel loop co->id on one warp, and which loops
   have that (those whose iterations cannot fail and reduce nothing). */
__device__ static void rg_coop_chunk(const rg_coop* co, unsigned int lane, unsigned int from, unsigned int to);
__device__ static bool rg_coop_bulk_ok(unsigned int id);
#endif
#if defined(__CUDACC__)

/* 16 source bytes at s + 16c, for a source whose address is 4-aligned plus sh bytes (sh = 1..3). */
__device__ static inline uint4 rg_ld16_shifted(const unsigned int* w, unsigned int c, unsigned int sh) {
  const unsigned int* q = w + 4u * c;
  const unsigned int a = q[0], b = q[1], x = q[2], y = q[3], z = q[4];
  return make_uint4(__funnelshift_r(a, b, sh * 8u), __funnelshift_r(b, x, sh * 8u), __funnelshift_r(x, y, sh * 8u), __funnelshift_r(y, z, sh * 8u));
}
/*
 * Lane 'lane's share of copying n bytes from s to d (any alignment): the destination in 16-byte stores,
 * the source in 16-byte loads where it is aligned the same, else in aligned words shifted into place
 * (a word that straddles the source's end starts inside it, and buffers end on 16-byte boundaries).
 * Four chunks a lane are loaded before any is stored, so a lane keeps four loads in flight.
 */
__device__ static void rg_coop_copy_lane(unsigned char* d, const unsigned char* s, unsigned int n, unsigned int lane) {
  unsigned int head = (unsigned int)((16u - ((unsigned long long)d & 15u)) & 15u);
  if (head > n) head = n;
  if (lane < head) d[lane] = s[lane];
  d += head;
  s += head;
  n -= head;
  const unsigned int chunks = n >> 4;
  uint4* dv = (uint4*)d;
  const unsigned int sh = (unsigned int)((unsigned long long)s & 3u);
  unsigned int c = lane;
  if (((unsigned long long)s & 15u) == 0u) {
    const uint4* sv = (const uint4*)s;
    for (; c + 96u < chunks; c += 128u) {
      const uint4 v0 = sv[c], v1 = sv[c + 32u], v2 = sv[c + 64u], v3 = sv[c + 96u];
      dv[c] = v0; dv[c + 32u] = v1; dv[c + 64u] = v2; dv[c + 96u] = v3;
    }
    for (; c < chunks; c += 32u) dv[c] = sv[c];
  } else if (sh == 0u) {
    const unsigned int* sw = (const unsigned int*)s;
    for (; c < chunks; c += 32u) dv[c] = make_uint4(sw[4u * c], sw[4u * c + 1u], sw[4u * c + 2u], sw[4u * c + 3u]);
  } else {
    const unsigned int* sw = (const unsigned int*)(s - sh);
    for (; c + 96u < chunks; c += 128u) {
      const uint4 v0 = rg_ld16_shifted(sw, c, sh), v1 = rg_ld16_shifted(sw, c + 32u, sh), v2 = rg_ld16_shifted(sw, c + 64u, sh), v3 = rg_ld16_shifted(sw, c + 96u, sh);
      dv[c] = v0; dv[c + 32u] = v1; dv[c + 64u] = v2; dv[c + 96u] = v3;
    }
    for (; c < chunks; c += 32u) dv[c] = rg_ld16_shifted(sw, c, sh);
  }
  const unsigned int done = chunks << 4;
  if (lane < n - done) d[done + lane] = s[done + lane];
}
/*
 * Bulk jobs: a copy or an element-parallel loop too large for one warp is cut into chunks on one of the
 * kernel's job boards (abi.ts BulkBoard, in DeviceGlobals), and idle worker warps of the kernel take chunks
 * beside the warp that posted it; the poster goes on once every chunk is done, as after doing it alone.
 * Only copies between global addresses (never a warp's shared stage) and loops whose iterations cannot
 * fail and reduce nothing are posted: a chunk needs nothing but the job's image and never waits for
 * anything, so a poster only ever waits for chunks that are running. A worker takes chunks only while its
 * own queue and overflow list are empty, one chunk between polls of its queue. FIFO and one turn at a
 * time per actor are untouched: chunks are parts of a turn, or of a message move, already under way.
 * RG_BULK=0 (an NVRTC define) posts nothing: every warp does its jobs alone, as before boards existed.
 */
#ifndef RG_BULK
#define RG_BULK 1
#endif
/* Copies from this many bytes and loops from this many iterations are posted; chunks of this size. */
#ifndef RG_BULK_MIN_BYTES
#define RG_BULK_MIN_BYTES 262144u
#endif
#ifndef RG_BULK_CHUNK_BYTES
#define RG_BULK_CHUNK_BYTES 65536u
#endif
#ifndef RG_BULK_MIN_ITERS
#define RG_BULK_MIN_ITERS 32768u
#endif
#ifndef RG_BULK_CHUNK_ITERS
#define RG_BULK_CHUNK_ITERS 8192u
#endif
/* An idle worker looks for posted jobs on every this-many-th poll of its queue while it spins. */
#ifndef RG_BULK_POLL_EVERY
#define RG_BULK_POLL_EVERY 8u
#endif
/* Chunks start at multiples of 16 bytes from the job's start: source and destination keep their offsets
   mod 16, so a chunk takes rg_coop_copy_lane's aligned path wherever the whole copy would. */
static_assert(RG_BULK_CHUNK_BYTES % 16u == 0u && RG_BULK_CHUNK_BYTES >= 16u, "RG_BULK_CHUNK_BYTES: a positive multiple of 16");
static_assert(RG_BULK_CHUNK_ITERS >= 1u && RG_BULK_MIN_BYTES >= 1u && RG_BULK_MIN_ITERS >= 1u && RG_BULK_POLL_EVERY >= 1u, "RG_BULK_*: positive");
static_assert(sizeof(rg_coop) <= RG_BULK_JOB_BYTES && sizeof(rg_coop) % 8u == 0u, "a job image (an rg_coop) fits rg_BulkBoard.job (abi.ts BULK_JOB_BYTES)");
static_assert(sizeof(rg_BulkBoard) % 16u == 0u && sizeof(rg_BulkBoard::job) == RG_BULK_JOB_BYTES, "rg_BulkBoard: 16-byte multiple (abi.ts checks the offsets' alignment)");
__device__ static inline unsigned long long* rg_bulk_next(rg_BulkBoard* b) { return (unsigned long long*)&b->nextLo; }
__device__ static inline unsigned long long* rg_bulk_limit(rg_BulkBoard* b) { return (unsigned long long*)&b->limitLo; }
__device__ static inline unsigned long long rg_ld_vol_u64(const unsigned long long* p) { return *(const volatile unsigned long long*)p; }

/* The whole warp: chunk i of job j (the board's image, or the poster's own), then counts it done. Its
   stores come before the count at the scope they were made for (the host's, for a reply into host
   memory): the poster acquires the count before it publishes what the job wrote. */
__device__ static __noinline__ void rg_bulk_chunk(rg_BulkBoard* b, const rg_coop* j, unsigned int i, unsigned int lane) {
  const bool sys = j->op == RG_CO_COPY && j->sys != 0u;
  if (j->op == RG_CO_COPY) {
    const unsigned int at = i * RG_BULK_CHUNK_BYTES;
    const unsigned int len = j->n - at < RG_BULK_CHUNK_BYTES ? j->n - at : RG_BULK_CHUNK_BYTES;
    rg_coop_copy_lane(j->d + at, j->s + at, len, lane);
  } else {
    const unsigned int from = i * RG_BULK_CHUNK_ITERS;
    rg_coop_chunk(j, lane, from, j->n - from < RG_BULK_CHUNK_ITERS ? j->n : from + RG_BULK_CHUNK_ITERS);
  }
  if (sys) __threadfence_system();
  __syncwarp();
  if (lane == 0u) {
    /* after the barrier: cumulative over every lane's stores */
    if (sys) __threadfence_system();
    else __threadfence();
    atomicAdd(&b->done, 1u);
  }
}

/* The whole warp: a free board (owner CAS), or 0 when every board is taken. */
__device__ static rg_BulkBoard* rg_bulk_claim(rg_DeviceGlobals* g, unsigned int lane) {
  unsigned int bi = RG_BULK_BOARDS;
  if (lane == 0u) {
    const unsigned int me = ((blockIdx.x * blockDim.x + threadIdx.x) >> 5) + 1u;
    for (unsigned int i = 0; i < RG_BULK_BOARDS; i++) {
      if (rg_ld_vol(&g->boards[i].owner) == 0u && atomicCAS(&g->boards[i].owner, 0u, me) == 0u) {
        /* acquire: the previous owner's last limit (the generation goes on from it) */
        __threadfence();
        bi = i;
        break;
      }
    }
  }
  bi = __shfl_sync(0xffffffffu, bi, 0);
  return bi == RG_BULK_BOARDS ? (rg_BulkBoard*)0 : &g->boards[bi];
}

/*
 * The whole warp, holding board b whose job image the warp has written (a barrier since): publishes it as
 * 'chunks' chunks, takes chunks until none is left, waits for the chunks others took, frees the board.
 * The next word is reset last, with the job's generation: a taker's add before that gets the previous
 * generation and takes nothing (rg_bulk_take checks the generation against limit's).
 */
__device__ static void rg_bulk_run(rg_DeviceGlobals* g, rg_BulkBoard* b, const rg_coop* job, unsigned int chunks, unsigned int lane) {
  if (lane == 0u) {
    const unsigned long long gen = ((rg_ld_vol_u64(rg_bulk_limit(b)) >> 32) + 1ull) & 0xffffffffull;
    *(volatile unsigned long long*)rg_bulk_limit(b) = (gen << 32) | chunks;
    rg_st_vol(&b->done, 0u);
    /* release: the job image, limit, done, and whatever the job reads (written before the post) */
    __threadfence();
    atomicExch(rg_bulk_next(b), gen << 32);
    atomicAdd(&g->bulkLive, 1u);
  }
  for (;;) {
    unsigned int i = 0u;
    if (lane == 0u) i = (unsigned int)atomicAdd(rg_bulk_next(b), 1ull);
    i = __shfl_sync(0xffffffffu, i, 0);
    if (i >= chunks) break;
    rg_bulk_chunk(b, job, i, lane);
  }
  if (lane == 0u) {
    while (rg_ld_acq_gpu(&b->done) != chunks) __nanosleep(32);
    /* every chunk's stores before whatever the poster publishes next (a queue slot's or a reply's seq) */
    __threadfence();
    atomicSub(&g->bulkLive, 1u);
    rg_st_rel_gpu(&b->owner, 0u);
  }
  __syncwarp();
}

/* The whole warp of a one-lane turn (from rg_coop_run): the job lane 0 posted in co, through a board.
   False when every board is taken (the warp does it alone). Inlined into rg_coop_run: as a call of its
   own there, the SIR Person kernel (nvcc sm_90, at its 168-register cap) spilled 172 bytes instead of 12,
   inlined 52. */
__device__ static __forceinline__ bool rg_bulk_job(rg_coop* co, unsigned int chunks, unsigned int lane) {
  rg_BulkBoard* b = rg_bulk_claim(co->g, lane);
  if (!b) return false;
  const unsigned long long* from = (const unsigned long long*)co;
  unsigned long long* to = (unsigned long long*)b->job;
  for (unsigned int w = lane; w < (unsigned int)(sizeof(rg_coop) / 8u); w += 32u) to[w] = from[w];
  __syncwarp();
  rg_bulk_run(co->g, b, co, chunks, lane);
  return true;
}

/* The whole ingress warp: n bytes of a large message from its host slot to its queue slot through a
   board (false: every board is taken). */
__device__ static __noinline__ bool rg_bulk_copy(rg_DeviceGlobals* g, unsigned char* d, const unsigned char* s, unsigned int n, unsigned int lane) {
  rg_BulkBoard* b = rg_bulk_claim(g, lane);
  if (!b) return false;
  rg_coop* j = (rg_coop*)b->job;
  if (lane == 0u) {
    j->op = RG_CO_COPY;
    j->d = d;
    j->s = s;
    j->n = n;
    j->sys = 0u;
  }
  __syncwarp();
  rg_bulk_run(g, b, j, (unsigned int)(((unsigned long long)n + RG_BULK_CHUNK_BYTES - 1u) / RG_BULK_CHUNK_BYTES), lane);
  return true;
}

/*
 * The whole warp of an idle worker: one chunk of a posted job, if one is left (true: it ran one). The
 * add on next is only tried where next's generation is limit's and chunks are left, so adds past a job's
 * end stay few (the low half never carries into the generation).
 */
__device__ static __noinline__ bool rg_bulk_take(rg_DeviceGlobals* g, unsigned int lane) {
  unsigned int bi = RG_BULK_BOARDS, i = 0u;
  if (lane == 0u) {
    for (unsigned int x = 0; x < RG_BULK_BOARDS; x++) {
      rg_BulkBoard* b = &g->boards[x];
      const unsigned long long lim = rg_ld_vol_u64(rg_bulk_limit(b)), nx = rg_ld_vol_u64(rg_bulk_next(b));
      if ((lim >> 32) != (nx >> 32) || (unsigned int)nx >= (unsigned int)lim) continue;
      const unsigned long long v = atomicAdd(rg_bulk_next(b), 1ull);
      /* acquire (with the add): the job image, limit, and what the job reads, as the poster released them */
      __threadfence();
      const unsigned long long l2 = rg_ld_vol_u64(rg_bulk_limit(b));
      /* The same generation and a chunk below its count: a chunk of the job now posted, which then cannot
         end (nor the board be reused) before this chunk is counted. */
      if ((v >> 32) == (l2 >> 32) && (unsigned int)v < (unsigned int)l2) {
        bi = x;
        i = (unsigned int)v;
        break;
      }
    }
  }
  /* lane 0's acquire before every lane's loads of the job */
  __syncwarp();
  bi = __shfl_sync(0xffffffffu, bi, 0);
  if (bi == RG_BULK_BOARDS) return false;
  i = __shfl_sync(0xffffffffu, i, 0);
  rg_BulkBoard* b = &g->boards[bi];
  rg_bulk_chunk(b, (const rg_coop*)b->job, i, lane);
  return true;
}
/* Lane 0: posts a job and does its own share; the job is complete on return (barrier B). */
__device__ static inline void rg_coop_post(rg_coop* co) {
  __syncwarp(); /* A */
  rg_coop_run(co, 0u);
  __syncwarp(); /* B */
}
__device__ static void rg_coop_copy(rg_coop* co, unsigned char* d, const unsigned char* s, unsigned int n, bool sys) {
  co->op = RG_CO_COPY;
  co->d = d;
  co->s = s;
  co->n = n;
  co->sys = sys ? 1u : 0u;
  rg_coop_post(co);
}
#elif defined(RG_HOST_COOP)
/* The harness's warp: every lane's rg_coop_run(co, lane) between barriers A and B, as rg_coop_post above. */
static void rg_coop_post(rg_coop* co);
#endif
#if defined(__CUDACC__) || defined(RG_HOST_COOP)
/*
 * Lane 0: runs element-parallel loop 'id' over count iterations from lo, its captured values already in
 * co->env. Errors as one lane would have seen them: the failing iteration that comes first in JS order
 * sets t->err (and t->msg); the iterations run are added to the turn's budget count.
 */
__device__ static void rg_coop_loop(rg_turn* t, unsigned int id, double lo, unsigned int count) {
  rg_coop* co = t->co;
  co->op = RG_CO_LOOP;
  co->id = id;
  co->lo = lo;
  co->n = count;
  co->turn = *t;
  co->turn.co = 0;
  co->turn.err = 0;
  co->turn.iters = 0u;
  co->turn.budget = t->budget - t->iters;
  rg_coop_post(co);
  t->iters += co->iters;
  if (co->failAt != 0xffffffffu) {
    t->err = co->err;
    t->msg = co->msg;
  } else if (t->iters > t->budget) {
    t->err = RG_E_TURN_BUDGET;
  }
}
#endif
#if defined(__CUDACC__)
/* Lanes 1..31 during a one-lane turn: do each posted job's share until lane 0 says the turn is done. */
__device__ static void rg_coop_help(rg_coop* co, unsigned int lane) {
  for (;;) {
    __syncwarp(); /* A */
    if (co->op == RG_CO_DONE) return;
    rg_coop_run(co, lane);
    __syncwarp(); /* B */
  }
}
/* Lane 0, at the end of a one-lane turn: releases the waiting lanes. */
__device__ static inline void rg_coop_end(rg_coop* co) {
  co->op = RG_CO_DONE;
  __syncwarp(); /* A */
}
#endif
