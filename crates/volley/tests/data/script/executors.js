// Each of k6's executors, briefly; the counts come back through handleSummary.
import { sleep } from 'k6';
import { Counter } from 'k6/metrics';

const counts = {
  shared: new Counter('it_shared'),
  pervu: new Counter('it_pervu'),
  constant: new Counter('it_constant'),
  ramping: new Counter('it_ramping'),
  arrival: new Counter('it_arrival'),
  rampingArrival: new Counter('it_ramping_arrival'),
};

export const options = {
  scenarios: {
    shared: { executor: 'shared-iterations', vus: 3, iterations: 7, exec: 'shared' },
    pervu: { executor: 'per-vu-iterations', vus: 2, iterations: 3, exec: 'pervu' },
    constant: { executor: 'constant-vus', vus: 2, duration: '1s', exec: 'constant' },
    ramping: {
      executor: 'ramping-vus', startVUs: 0, exec: 'ramping',
      stages: [{ duration: '500ms', target: 2 }, { duration: '500ms', target: 2 }],
    },
    arrival: {
      executor: 'constant-arrival-rate', rate: 50, timeUnit: '1s', duration: '2s',
      preAllocatedVUs: 4, maxVUs: 8, exec: 'arrival',
    },
    rampingArrival: {
      executor: 'ramping-arrival-rate', startRate: 0, timeUnit: '1s', preAllocatedVUs: 4,
      stages: [{ duration: '1s', target: 40 }, { duration: '1s', target: 40 }], exec: 'rampingArrival',
      startTime: '100ms',
    },
  },
};

export function shared() { counts.shared.add(1); }
export function pervu() { counts.pervu.add(1); }
export function constant() { counts.constant.add(1); sleep(0.1); }
export function ramping() { counts.ramping.add(1); sleep(0.1); }
export function arrival() { counts.arrival.add(1); }
export function rampingArrival() { counts.rampingArrival.add(1); }

export function handleSummary(data) {
  const c = (n) => (data.metrics[n] ? data.metrics[n].values.count : 0);
  const dropped = data.metrics.dropped_iterations ? data.metrics.dropped_iterations.values.count : 0;
  return {
    stdout: JSON.stringify({
      shared: c('it_shared'), pervu: c('it_pervu'), constant: c('it_constant'),
      ramping: c('it_ramping'), arrival: c('it_arrival'), rampingArrival: c('it_ramping_arrival'),
      dropped,
    }) + '\n',
  };
}
