import grpc from 'k6/net/grpc';
import { check } from 'k6';

const client = new grpc.Client();
client.load([], 'route_guide.proto');

export const options = {
  iterations: 3,
  thresholds: {
    grpc_req_duration: ['avg<0', 'max<60000'],
    checks: ['rate>0.99'],
  },
};

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  const r = client.invoke('routeguide.RouteGuide/GetFeature', { latitude: 1, longitude: 2 });
  check(r, { 'a point nobody named has no name': (x) => x.message.name === 'somebody' });
  client.close();
};
