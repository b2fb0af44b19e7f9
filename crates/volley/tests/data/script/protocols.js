// Beyond k6: the same call over gRPC, gRPC-Web and Connect.
import grpc from 'k6/net/grpc';
import { check } from 'k6';

const client = new grpc.Client();

export const options = { thresholds: { checks: ['rate==1'] } };

export default () => {
  for (const protocol of ['grpc', 'grpc-web', 'connect']) {
    client.connect(__ENV.GRPC_ADDR, { plaintext: true, reflect: true, protocol: protocol });
    const r = client.invoke('helloworld.Greeter/SayHello', { name: protocol });
    check(r, { ['hello over ' + protocol]: (x) => x.status === grpc.StatusOK && x.message.message.indexOf(protocol) >= 0 });
    client.close();
  }
};
