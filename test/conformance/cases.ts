/**
 * THE list of conformance cases. Every backend runs every case (through conformance.test.ts and the
 * fixture in backends.ts), except what the SKIP list in skips.ts names, with a reason.
 *
 * A case declares the grain classes it needs (registered with the backend under test as placement) and
 * kernel options; the runner builds a fresh system with an injected clock, runs the case, then checks
 * that every kernel's counters balance once settled (see `expectBalanced`), and shuts the system down.
 * The cases live by theme under cases/; this list keeps their order.
 */
import { persistenceCases } from './persistence.ts';
import { reminderCases } from './reminders.ts';
import { timerCases } from './timers.ts';
import { type ConformanceCase } from './cases/helpers.ts';
import { valueCases } from './cases/values.ts';
import { messagingCases } from './cases/messaging.ts';
import { lifecycleCases } from './cases/lifecycle.ts';
import { errorCases } from './cases/errors.ts';

export { expectBalanced, rejection, type CaseContext, type ConformanceCase } from './cases/helpers.ts';

export const cases: ConformanceCase[] = [
  ...valueCases,
  ...messagingCases,
  ...lifecycleCases,
  ...errorCases,
  // Timers (timers.ts), stepped by the injected clock.
  ...timerCases,
  // Persistent state (persistence.ts) and reminders (reminders.ts), on the runner's store (LMDB in a temp directory).
  ...[...persistenceCases, ...reminderCases].map(
    (p): ConformanceCase => ({
      name: `${p.name} [store]`,
      grains: [],
      isolated: true,
      persistence: p,
      run: async () => {},
    }),
  ),
];
