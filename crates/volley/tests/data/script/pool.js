// volley's own connect params: several connections per client (`connections`), and every
// address of the name (`lb: 'round_robin'`); calls go round robin over them.
import grpc from 'k6/net/grpc';
import { check, sleep } from 'k6';

const client = new grpc.Client();
client.load([], 'route_guide.proto');

export const options = { iterations: 1 };

export default () => {
  client.connect(__ENV.GRPC_ADDR, JSON.parse(__ENV.PARAMS));
  for (let i = 0; i < 6; i++) {
    const r = client.invoke('routeguide.RouteGuide/GetFeature', { latitude: 1, longitude: 2 });
    check(r, { 'status is OK': (x) => x.status === grpc.StatusOK });
  }
  console.log('calls made');
  sleep(Number(__ENV.HOLD || '0'));
};
