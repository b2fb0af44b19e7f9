// Arrival rates: which VU takes a start, and the starts no VU was free for.
import { sleep } from 'k6';
import { Counter } from 'k6/metrics';

const busyRan = new Counter('busy_ran');
const idleRan = new Counter('idle_ran');

export const options = {
  scenarios: {
    // One VU, each iteration 200 ms, 20 starts a second: most starts find it busy.
    busy: {
      executor: 'constant-arrival-rate', rate: 20, timeUnit: '1s', duration: '1s',
      preAllocatedVUs: 1, maxVUs: 1, exec: 'busy',
    },
    // Ten idle VUs, empty iterations, 50 starts a second.
    idle: {
      executor: 'constant-arrival-rate', rate: 50, timeUnit: '1s', duration: '1s',
      preAllocatedVUs: 10, maxVUs: 10, exec: 'idle',
    },
  },
};

export function busy() { busyRan.add(1); sleep(0.2); }
export function idle() { idleRan.add(1); console.log(`idle iteration on VU ${__VU}`); }

export function handleSummary(data) {
  const c = (n) => (data.metrics[n] ? data.metrics[n].values.count : 0);
  return {
    stdout: JSON.stringify({
      busy: c('busy_ran'), idle: c('idle_ran'), dropped: c('dropped_iterations'),
    }) + '\n',
  };
}
