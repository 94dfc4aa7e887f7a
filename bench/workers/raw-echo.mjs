// Raw worker_threads baseline: postMessage per message, handler = Echo.ping / Echo.hit.
import { parentPort } from 'node:worker_threads';
import { echo, state } from './handlers.mjs';

let target = 0;
parentPort.on('message', (m) => {
  if (m.t === 0) parentPort.postMessage(echo.ping(state, m));
  else if (m.t === 1) {
    echo.hit(state, m);
    if (state.hits === target) parentPort.postMessage({ done: state.hits });
  } else if (m.t === 2) {
    state.hits = 0;
    target = m.n;
    parentPort.postMessage({ ready: true });
  }
});
