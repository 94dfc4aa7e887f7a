/*
 * Ringgrain CUDA runtime: the persistent loop's build settings (NVRTC defines with defaults) and the static
 * checks of the layouts it reads (the values are the generated constants; RG_SCRATCH_* and the loop cases are
 * the unit's own). RG_KEY_OF: an actor key from a slot header's two words (string keys: the interned id).
 */
#if RG_STRING_KEYS
#define RG_KEY_OF(lo, hi) (long long)lo
#else
#define RG_KEY_OF(lo, hi) (long long)(((unsigned long long)hi << 32) | lo)
#endif
#if defined(__CUDACC__)
#define RG_FULL 0xffffffffu
/* Bytes between two host lanes' control blocks (abi.ts CONTROL_STRIDE). */
static_assert(sizeof(rg_ControlBlock) <= RG_CONTROL_STRIDE, "control blocks of the host lanes do not overlap");
/* One worker's scratch (abi.ts scratchLayout): the decoded request at 0, the reply at RG_SCRATCH_REPLY_AT. */
static_assert(sizeof(RG_G(req)) <= RG_SCRATCH_REPLY_AT && sizeof(RG_G(rep)) <= RG_SCRATCH_BYTES - RG_SCRATCH_REPLY_AT, "scratch: the request and reply unions fit (abi.ts scratchLayout)");
static_assert(alignof(RG_G(req)) <= 16 && alignof(RG_G(rep)) <= 16 && RG_SCRATCH_BYTES % 16u == 0u, "scratch: 16-byte aligned parts");
/*
 * Turns a worker warp runs at once on distinct actors (rg_*_lane_turns): 32, or 1 where a scratch is too
 * large to keep 32 per worker (abi.ts scratchLayout decides, and sizes the scratch area for it). An NVRTC
 * define RG_TURN_LANES=1 turns it off (a diagnostic, and the baseline the benchmark compares with).
 */
#ifndef RG_TURN_LANES
#ifdef RG_PROFILED
#define RG_TURN_LANES 1u /* stamps are per warp: a profiling build runs one turn at a time */
#else
#define RG_TURN_LANES RG_SCRATCH_LANES
#endif
#endif
static_assert(RG_TURN_LANES == 1u || (RG_TURN_LANES == 32u && RG_SCRATCH_LANES == 32u), "RG_TURN_LANES: 1, or 32 where the scratch area has 32 per worker");
/*
 * RG_WAVE_STATS (an NVRTC define, a diagnostic: scripts/k2k-probe.ts --wave-stats): where a worker warp's
 * time goes under load. Each lane stamps its turn's phases in shared memory; a warp sums its batches in
 * registers and adds them to this global every RG_WS_FLUSH batches (atomics per turn would perturb what
 * they measure). Indices: RG_WS_* below; cycles are SM clocks (clock64).
 */
#ifdef RG_WAVE_STATS
#define RG_WS_BATCHES 0
#define RG_WS_MESSAGES 1
#define RG_WS_BATCH_CYCLES 2
#define RG_WS_WAVES 3
#define RG_WS_TURNS 4
#define RG_WS_TURN_CYCLES 5
#define RG_WS_DECODE 6
#define RG_WS_ACTIVATE 7
#define RG_WS_HANDLE 8
#define RG_WS_AFTER 9
#define RG_WS_MAX_TURN 10
#define RG_WS_SINGLES 11
#define RG_WS_SINGLE_CYCLES 12
#define RG_WS_PRE_SEND 13
#define RG_WS_CLAIM 14
#define RG_WS_PUBLISH 15
#define RG_WS_POST_SEND 16
#define RG_WS_N 17
#define RG_WS_FLUSH 64u
extern "C" {
__device__ unsigned long long rg_wave_stats[RG_WS_N];
}
__device__ static void rg_ws_flush(unsigned long long* ws, unsigned int* since) {
  for (unsigned int i = 0; i < RG_WS_N; i++) {
    if (ws[i]) atomicAdd(&rg_wave_stats[i], ws[i]);
    ws[i] = 0ull;
  }
  *since = 0u;
}
#endif
/*
 * Bulk jobs from turns (rg_bulk_job): on for units whose scratch is too large for lane turns (abi.ts
 * scratchLayout), the only ones whose turns copy or loop over hundreds of KiB in practice. Elsewhere the
 * post's code is left out (the warp still does every job alone, and still takes chunks when idle): in
 * the SIR Person kernel, at its 168-register cap, it took the spills from 32 to 52 bytes.
 */
#ifndef RG_BULK_TURNS
#define RG_BULK_TURNS RG_BULK_TURNS_DEFAULT
#endif
/*
 * Warp cooperation in one-lane turns (rg_coop_*): RG_COOP=0 (an NVRTC define) leaves lanes 1..31 idle
 * during a one-lane turn, as before it existed (a diagnostic, and the baseline the benchmark compares with).
 */
#ifndef RG_COOP
#define RG_COOP 1
#endif
#if RG_COOP
#define RG_COOP_END(co) rg_coop_end(co)
#define RG_COOP_HELP(co, lane) rg_coop_help((co), (lane))
#else
#define RG_COOP_END(co) ((void)0)
#define RG_COOP_HELP(co, lane) ((void)0)
#endif
/*
 * RG_LATENCY=0 (an NVRTC define): the idle polling and counter publication from before the latency work
 * (docs/gpu-latency.md), a diagnostic and the baseline scripts/latency-probe.ts measures beside the default.
 * 1: an idle worker peeks at its overflow list in the same memory round trip as its queue poll (it paid two
 * more a poll: the link's acquire, then the queue head) and, idle for RG_NARROW_AFTER polls, polls one slot
 * instead of 32; the control warp sums the counter rows with every lane of the warp (it walked one column a
 * lane, P/4 dependent L2 round trips a column, while a lone message waited in the host ring); a lone
 * message's queue claim is one CAS where the ingress warp's last claim proves room (ingress.cuh); a thread
 * reuses its last directory hit where actors are never deactivated (directory.cuh).
 */
#ifndef RG_LATENCY
#define RG_LATENCY 1
#endif
/* Idle polls after which a worker polls only its queue's next slot (RG_LATENCY, worker.cuh). */
#ifndef RG_NARROW_AFTER
#define RG_NARROW_AFTER 64u
#endif
/* Bytes of a slot each worker warp stages in shared memory (a multiple of 16). */
#ifndef RG_STAGE_BYTES
#define RG_STAGE_BYTES 512u
#endif
static_assert(RG_STAGE_BYTES % 16u == 0u && RG_STAGE_BYTES >= RG_HDR + 16u, "RG_STAGE_BYTES: a multiple of 16 that holds a header");
/* DirEntry.state (abi.ts DIR_STATE). */
/* Slot header word offsets (core protocol.ts): the ingress warp reads headers out of registers. */
RG_OFFSET_ASSERT(rg_SlotHeader, seq, RG_AT_SEQ, "slot seq offset");
RG_OFFSET_ASSERT(rg_SlotHeader, length, RG_AT_LENGTH, "slot length offset");
RG_OFFSET_ASSERT(rg_SlotHeader, method, RG_AT_METHOD, "slot method offset");
RG_OFFSET_ASSERT(rg_SlotHeader, flags, RG_AT_FLAGS, "slot flags offset");
RG_OFFSET_ASSERT(rg_SlotHeader, corr, RG_AT_CORR, "slot corr offset");
RG_OFFSET_ASSERT(rg_SlotHeader, keyLo, RG_AT_KEYLO, "slot keyLo offset");
RG_OFFSET_ASSERT(rg_SlotHeader, keyHi, RG_AT_KEYHI, "slot keyHi offset");
RG_OFFSET_ASSERT(rg_DirEntry, state, RG_AT_DIR_STATE, "DirEntry state offset (abi.ts DirEntry)");
/* seq is word 0 and published last: copies write words 1..3 of the first 16 bytes one by one. */
static_assert(RG_AT_SEQ == 0u && RG_HDR % 16u == 0u, "slot header: seq first, 16-byte multiple");
#endif
