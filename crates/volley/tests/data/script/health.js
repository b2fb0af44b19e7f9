import grpc from 'k6/net/grpc';
import { check } from 'k6';
import encoding from 'k6/encoding';

const client = new grpc.Client();

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  const r = client.healthCheck();
  check(r, { 'serving': (x) => x && x.status === grpc.HealthCheckServing });
  console.log('health status ' + r.status);
  check(encoding.b64encode('ana:s3cret'), { 'base64 as k6 writes it': (t) => t === 'YW5hOnMzY3JldA==' });
  check(encoding.b64decode('aGk_Pg', 'rawurl', 's'), { 'and reads it': (t) => t === 'hi?>' });
  client.close();
};
