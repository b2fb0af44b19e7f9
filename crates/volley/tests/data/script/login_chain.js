// Log in, take the token from the reply, call with it: each iteration, at an arrival rate.
import grpc from 'k6/net/grpc';
import { check, fail } from 'k6';

const client = new grpc.Client();
client.load(['.'], 'chain.proto');

export const options = {
  scenarios: {
    logins: {
      executor: 'constant-arrival-rate', rate: 20, timeUnit: '1s', duration: '2s',
      preAllocatedVUs: 2, maxVUs: 4,
    },
  },
  thresholds: { checks: ['rate==1'] },
};

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  const login = client.invoke('chain.Auth/Login', { user: 'ana', password: 's3cret' });
  if (login.status !== grpc.StatusOK) fail('login failed: ' + JSON.stringify(login.error));
  const token = login.message.token;
  const item = client.invoke('chain.Items/Get', { id: '7' }, {
    metadata: { authorization: 'Bearer ' + token },
  });
  check(item, { 'the token opened the item': (r) => r.status === grpc.StatusOK && r.message.owner === 'ana' });
  const without = client.invoke('chain.Items/Get', { id: '7' });
  check(without, { 'no token, no item': (r) => r.status === grpc.StatusUnauthenticated });
  client.close();
};
