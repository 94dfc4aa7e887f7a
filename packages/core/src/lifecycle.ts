import { InvalidTransitionError } from './errors.ts';

/**
 * Ring kernel lifecycle: Created → Launched → Active ⇄ Deactivated → Terminated, plus Faulted when the
 * backend reports a fault. A Terminated kernel can be launched again.
 */
export type LifecycleState = 'created' | 'launched' | 'active' | 'deactivated' | 'terminated' | 'faulted';
export type LifecycleAction = 'launch' | 'activate' | 'deactivate' | 'terminate' | 'fault';

const TRANSITIONS: Record<LifecycleAction, { from: readonly LifecycleState[]; to: LifecycleState }> = {
  launch: { from: ['created', 'terminated'], to: 'launched' },
  activate: { from: ['launched', 'deactivated'], to: 'active' },
  deactivate: { from: ['active'], to: 'deactivated' },
  terminate: { from: ['launched', 'active', 'deactivated', 'faulted'], to: 'terminated' },
  fault: { from: ['launched', 'active', 'deactivated'], to: 'faulted' },
};

export function canTransition(from: LifecycleState, action: LifecycleAction): boolean {
  return TRANSITIONS[action].from.includes(from);
}

/** The target state of `action` from `from`, or a typed error naming both. */
export function nextState(grain: string, from: LifecycleState, action: LifecycleAction): LifecycleState {
  if (!canTransition(from, action)) throw new InvalidTransitionError(grain, from, action);
  return TRANSITIONS[action].to;
}

/** States in which the kernel's rings exist and accept messages (they queue while not Active). */
export function accepting(state: LifecycleState): boolean {
  return state === 'launched' || state === 'active' || state === 'deactivated';
}
