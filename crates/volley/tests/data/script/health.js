import grpc from 'k6/net/grpc';
import { check } from 'k6';

const client = new grpc.Client();

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  const r = client.healthCheck();
  check(r, { 'serving': (x) => x && x.status === grpc.HealthCheckServing });
  console.log('health status ' + r.status);
  client.close();
};
