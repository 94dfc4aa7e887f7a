/**
 * A key to the backends' internals that the package's own tools use (the fault-injection entry,
 * `@ringgrain/cuda-backend/testing`). Not exported from the package's main entry: applications never see it.
 */
export const INTERNALS: unique symbol = Symbol('ringgrain.cuda-backend.internals');
