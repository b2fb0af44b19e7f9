// setup data, SharedArray from open(), groups, custom metrics with thresholds, k6/execution,
// handleSummary, against volley serve's built-in api.Users (schema by reflection).
import grpc from 'k6/net/grpc';
import { check, group } from 'k6';
import { Counter, Gauge, Rate, Trend } from 'k6/metrics';
import { SharedArray } from 'k6/data';
import exec from 'k6/execution';

const users = new SharedArray('users', () => JSON.parse(open('./users.json')));
const fetched = new Counter('users_fetched');
const lastId = new Gauge('last_id');
const named = new Rate('named');
const ratings = new Trend('rating_seen');
const client = new grpc.Client();

export const options = {
  vus: 2,
  iterations: 6,
  thresholds: {
    users_fetched: ['count==6'],
    named: ['rate==1'],
    'rating_seen{who:ana}': ['max>=0'],
  },
};

export function setup() {
  return { prefix: 'user-', started: 'yes' };
}

export default (data) => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true, reflect: true });
  const u = users[exec.scenario.iterationInTest % users.length];
  group('fetch', () => {
    const r = client.invoke('api.Users/Get', { id: u.id });
    check(r, {
      'ok': (x) => x.status === grpc.StatusOK,
      'int64 id comes back as a string': (x) => x.message.id === u.id,
    });
    fetched.add(1);
    lastId.add(Number(r.message.id));
    named.add(r.message.name.length > 0);
    ratings.add(r.message.rating, { who: u.who });
  });
  if (data.started !== 'yes') throw new Error('setup data did not arrive');
  client.close();
};

export function teardown(data) {
  console.log('teardown saw ' + data.prefix);
}

export function handleSummary(data) {
  return {
    stdout: 'SUMMARY users_fetched=' + data.metrics.users_fetched.values.count +
      ' named=' + data.metrics.named.values.rate +
      ' checks=' + data.root_group.checks.map((c) => c.name + ':' + c.passes + '/' + c.fails).join(',') + '\n',
    'summary.json': JSON.stringify(data),
  };
}
