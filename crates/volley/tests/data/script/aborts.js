// exec.test.abort() ends the run (exit 108); with MODE=threshold, a threshold with abortOnFail
// ends it early instead (exit 99); with MODE=stop, a long iteration is cut at the graceful stop.
import { sleep } from 'k6';
import exec from 'k6/execution';
import { Counter } from 'k6/metrics';

const bad = new Counter('bad_things');
const mode = __ENV.MODE;

export const options =
  mode === 'threshold'
    ? {
        vus: 1,
        duration: '30s',
        thresholds: { bad_things: [{ threshold: 'count<3', abortOnFail: true }] },
      }
    : mode === 'stop'
      ? { scenarios: { s: { executor: 'constant-vus', vus: 2, duration: '500ms', gracefulStop: '500ms' } } }
      : { iterations: 10 };

export default () => {
  if (mode === 'threshold') {
    bad.add(1);
    sleep(0.1);
  } else if (mode === 'stop') {
    sleep(30);
  } else if (exec.scenario.iterationInTest === 2) {
    exec.test.abort('enough');
  }
};
