// TLS with the server's CA given as PEM text (open()), as k6's connect params take it; with
// CLIENT_CERT set, a client certificate too (mutual TLS).
import grpc from 'k6/net/grpc';
import { check } from 'k6';

const ca = open(__ENV.CA);
const tls = { cacerts: [ca] };
if (__ENV.CLIENT_CERT) {
  tls.cert = open(__ENV.CLIENT_CERT);
  tls.key = open(__ENV.CLIENT_KEY);
}
const client = new grpc.Client();

export const options = { thresholds: { checks: ['rate==1'] } };

export default () => {
  client.connect(__ENV.GRPC_ADDR, { reflect: true, tls: tls, authority: 'localhost' });
  const r = client.invoke('helloworld.Greeter/SayHello', { name: 'tls' });
  check(r, { 'hello over TLS': (x) => x.status === grpc.StatusOK });
  client.close();
};
