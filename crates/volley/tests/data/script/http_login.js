// Log in over HTTP (k6/http: a JSON POST, here Connect's unary form of the login call), then
// call over gRPC with the token from the reply.
import http from 'k6/http';
import grpc from 'k6/net/grpc';
import { check } from 'k6';

const client = new grpc.Client();
client.load(['.'], 'chain.proto');

export const options = { iterations: 3, thresholds: { checks: ['rate==1'], http_req_failed: ['rate==0'] } };

export default () => {
  const res = http.post('http://' + __ENV.GRPC_ADDR + '/chain.Auth/Login',
    JSON.stringify({ user: 'ana', password: 's3cret' }),
    { headers: { 'Content-Type': 'application/json' } });
  check(res, {
    'login answered 200': (r) => r.status === 200,
    'a JSON reply': (r) => r.headers['Content-Type'] === 'application/json',
  });
  const token = res.json('token');
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  const item = client.invoke('chain.Items/Get', { id: '7' }, { metadata: { authorization: 'Bearer ' + token } });
  check(item, { 'the HTTP token opened the item': (r) => r.status === grpc.StatusOK && r.message.owner === 'ana' });
  const bad = http.post('http://' + __ENV.GRPC_ADDR + '/chain.Auth/Login',
    JSON.stringify({ user: 'ana', password: 'nope' }), { headers: { 'Content-Type': 'application/json' } });
  check(bad, { 'a wrong password is 401': (r) => r.status === 401 });
  client.close();
};
