/* Ringgrain CUDA runtime: the persistent ring kernel starts here (host-coop.cuh .. entry.cuh, in this order). */
/* ---- persistent ring kernel ----------------------------------------------------------------- */
#if defined(RG_HOST_COOP) && !defined(__CUDACC__)
/* A host build's rg_coop_run: element-parallel loops only (a host build posts no copies). */
static void rg_coop_run(rg_coop* co, unsigned int lane) {
  switch (co->id) {
RG_LOOP_CASES
    default: break;
  }
}
#endif
