// setupTimeout and teardownTimeout: a setup that sleeps past its limit, a teardown that spins.
import { sleep } from 'k6';

export const options = { iterations: 1, setupTimeout: '500ms', teardownTimeout: '500ms' };

export function setup() {
  if (__ENV.STUCK === 'setup') sleep(30);
}

export default function () {}

export function teardown() {
  if (__ENV.STUCK === 'teardown') {
    for (;;) {}
  }
}
