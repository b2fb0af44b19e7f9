// List over a server stream, then get each listed item: at an arrival rate.
import grpc from 'k6/net/grpc';
import { check } from 'k6';
import { Counter } from 'k6/metrics';

const gets = new Counter('gets');
const client = new grpc.Client();

export const options = {
  scenarios: {
    browse: {
      executor: 'constant-arrival-rate', rate: 5, timeUnit: '1s', duration: '2s',
      preAllocatedVUs: 2, maxVUs: 4,
    },
  },
  thresholds: { checks: ['rate==1'], gets: ['count>=50'] },
};

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true, reflect: true });
  const ids = [];
  const stream = new grpc.Stream(client, 'api.Users/List', {});
  stream.on('data', (u) => ids.push(u.id));
  stream.on('end', () => {
    for (const id of ids) {
      const r = client.invoke('api.Users/Get', { id: id });
      gets.add(1);
      check(r, { 'each listed user can be got': (x) => x.status === grpc.StatusOK && x.message.id === id });
    }
    client.close();
  });
  stream.write({});
};
