// `--shard I/N`: a fixed count of iterations and an arrival rate, each split over the shards.
import grpc from 'k6/net/grpc';

const client = new grpc.Client();
client.load([], 'route_guide.proto');

export const options = {
  scenarios: {
    counted: { executor: 'shared-iterations', vus: 3, iterations: 7, exec: 'call' },
    paced: {
      executor: 'constant-arrival-rate', rate: 20, timeUnit: '1s', duration: '1s',
      preAllocatedVUs: 4, exec: 'call',
    },
  },
};

export function call() {
  if (__ITER === 0) client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  client.invoke('routeguide.RouteGuide/GetFeature', { latitude: 1, longitude: 2 });
}

export function handleSummary(data) {
  return { stdout: JSON.stringify({ iterations: data.metrics.iterations.values.count }) + '\n' };
}
