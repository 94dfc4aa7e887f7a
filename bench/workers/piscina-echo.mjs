// Piscina baseline: one task per message, handler = Echo.ping / Echo.hit.
import { echo, state } from './handlers.mjs';

export default function (m) {
  if (m.t === 0) return echo.ping(state, m);
  echo.hit(state, m);
  return undefined;
}
