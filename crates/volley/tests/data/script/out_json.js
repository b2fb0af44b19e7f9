// `--out json=FILE`: every sample written, with its tags.
import grpc from 'k6/net/grpc';
import { check, group } from 'k6';
import { Counter } from 'k6/metrics';

const features = new Counter('features_seen');
const client = new grpc.Client();
client.load([], 'route_guide.proto');

export const options = {
  scenarios: {
    lookups: { executor: 'per-vu-iterations', vus: 2, iterations: 3 },
  },
  thresholds: { grpc_req_duration: ['p(95)<5000'] },
};

export default () => {
  if (__ITER === 0) client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  group('lookups', () => {
    const r = client.invoke(
      'routeguide.RouteGuide/GetFeature',
      { latitude: 409146138, longitude: -746188906 },
      { tags: { team: 'maps' } },
    );
    check(r, { 'status is OK': (x) => x.status === grpc.StatusOK });
  });
  features.add(3, { kind: 'point' });
};
