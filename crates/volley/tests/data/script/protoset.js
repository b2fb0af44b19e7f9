import grpc from 'k6/net/grpc';
import { check } from 'k6';

const client = new grpc.Client();
const methods = client.loadProtoset(__ENV.PROTOSET);

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  const r = client.invoke('routeguide.RouteGuide/GetFeature', { latitude: 409146138, longitude: -746188906 });
  check(r, { 'ok': (x) => x.status === grpc.StatusOK });
  console.log('methods ' + methods.map((m) => m.fullMethod).join(' '));
  client.close();
};
