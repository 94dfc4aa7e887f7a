// Loads the benchmark grain's handler methods in a plain worker (Node 20 passes no loader flags to workers,
// so tsx is registered here, as the CPU backend's worker-entry does). The state is a plain object: the
// baselines pay for the handler logic, not for Ringgrain's state table.
import { register } from 'tsx/esm/api';

register();
const { Echo } = await import('../grains.ts');
export const echo = new Echo();
export const state = { hits: 0, sum: 0 };
