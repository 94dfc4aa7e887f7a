import { describe, expect, it } from 'vitest';
import {
  InvalidTransitionError,
  accepting,
  canTransition,
  nextState,
  type LifecycleAction,
  type LifecycleState,
} from '../src/entries/internal.ts';

const STATES: LifecycleState[] = ['created', 'launched', 'active', 'deactivated', 'terminated', 'faulted'];
const ACTIONS: LifecycleAction[] = ['launch', 'activate', 'deactivate', 'terminate', 'fault'];

/** The lifecycle the README states, written out independently of lifecycle.ts. */
const VALID: Record<string, LifecycleState> = {
  'created/launch': 'launched',
  'terminated/launch': 'launched',
  'launched/activate': 'active',
  'deactivated/activate': 'active',
  'active/deactivate': 'deactivated',
  'launched/terminate': 'terminated',
  'active/terminate': 'terminated',
  'deactivated/terminate': 'terminated',
  'faulted/terminate': 'terminated',
  'launched/fault': 'faulted',
  'active/fault': 'faulted',
  'deactivated/fault': 'faulted',
};

describe('lifecycle transition table', () => {
  for (const from of STATES) {
    for (const action of ACTIONS) {
      const to = VALID[`${from}/${action}`];
      if (to) {
        it(`${from} --${action}--> ${to}`, () => {
          expect(canTransition(from, action)).toBe(true);
          expect(nextState('G', from, action)).toBe(to);
        });
      } else {
        it(`${from} --${action}--> InvalidTransitionError`, () => {
          expect(canTransition(from, action)).toBe(false);
          let err: unknown;
          try {
            nextState('G', from, action);
          } catch (e) {
            err = e;
          }
          expect(err).toBeInstanceOf(InvalidTransitionError);
          expect((err as InvalidTransitionError).code).toBe('INVALID_TRANSITION');
          expect((err as Error).message).toContain(`cannot ${action} while ${from}`);
        });
      }
    }
  }

  it('only launched, active and deactivated kernels accept messages', () => {
    expect(STATES.filter(accepting)).toEqual(['launched', 'active', 'deactivated']);
  });
});
