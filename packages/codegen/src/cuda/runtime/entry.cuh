/*
 * Ringgrain CUDA runtime: the kernel entry rg_<grain>_main. Its parameter list is RG_KERNEL_PARAMS, generated
 * from the ABI's one list (abi.ts KERNEL_PARAMS). RG_MIN_BLOCKS_PER_SM (an NVRTC define) overrides the register
 * cap's block count, to measure occupancy against spills (scripts/k2k-probe.ts).
 */
#if defined(__CUDACC__)
#ifndef RG_MIN_BLOCKS_PER_SM
#define RG_MIN_BLOCKS_PER_SM RG_DEFAULT_MIN_BLOCKS_PER_SM
#endif
extern "C" __global__ void __launch_bounds__(RG_THREADS_PER_BLOCK, RG_MIN_BLOCKS_PER_SM) RG_G(main)(RG_KERNEL_PARAMS) {
  const unsigned int lane = threadIdx.x & 31u;
  const unsigned int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (warp >= partitions + lanes) return;
  rg_kernel k;
  k.control = control;
  k.inbound = inbound;
  k.replies = replies;
  k.queues = queues;
  k.states = states;
  k.directory = directory;
  k.g = (rg_DeviceGlobals*)globals;
  k.counters = (volatile unsigned int*)(globals + sizeof(rg_DeviceGlobals));
  k.routes = routes;
  k.scratch = scratch;
  k.overflow = overflow;
  k.overflowNodes = overflowNodes;
  k.routeCount = routeCount;
  k.partitions = partitions;
  k.queueCapacity = queueCapacity;
  k.ringCapacity = ringCapacity;
  k.replyCapacity = replyCapacity;
  k.slotSize = slotSize;
  k.maxActors = maxActors;
  k.dirCapacity = dirCapacity;
  k.turnBudget = turnBudget;
  k.lanes = lanes;
  k.laneBytes = laneBytes;
  k.laneSeen = (unsigned int*)(k.counters + (partitions + 1u) * RG_NCOUNTERS);
  k.sendBudget = sendBudget;
  k.queueBytes = RG_RING_HDR + (unsigned long long)queueCapacity * slotSize;
  k.replyTail = 0u;
  k.timers = timers;
  k.timerHost = timerHost;
  k.metaOn = rg_ld_vol(&k.g->metaOn);
  k.hooksOn = rg_ld_vol(&k.g->hooksOn);
  k.res = (rg_ResidencyGlobals*)(((unsigned long long)rg_ld_vol(&k.g->residencyHi) << 32) | rg_ld_vol(&k.g->residencyLo));
  k.resPublished = 0u;
  k.loadOn = k.res ? rg_ld_vol(&k.g->loadOn) : 0u;
  k.lastKey = 0;
  k.lastState = 0;
  k.claimPart = ~0u;
  k.claimHead = 0u;
  k.claimTail = 0u;
  k.claimAt = 0;
  if (warp == 0u) RG_G(control)(&k, lane);
  else if (warp <= partitions) RG_G(worker)(&k, warp - 1u, lane);
  else RG_G(lane_ingress)(&k, warp - partitions, lane);
}
#endif
