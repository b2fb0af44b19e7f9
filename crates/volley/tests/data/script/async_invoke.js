// asyncInvoke: three slow calls at once (each answered after 300 ms) take about 300 ms, not
// 900; the promises resolve with the reply, as invoke returns it.
import grpc from 'k6/net/grpc';
import { check } from 'k6';

const client = new grpc.Client();
client.load(['.'], 'chain.proto');

export default async () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  const started = Date.now();
  const replies = await Promise.all([
    client.asyncInvoke('chain.Items/Get', { id: 'slow' }),
    client.asyncInvoke('chain.Items/Get', { id: 'slow' }),
    client.asyncInvoke('chain.Items/Get', { id: 'slow' }),
  ]);
  const took = Date.now() - started;
  console.log('three calls took ' + took + ' ms');
  check(replies, {
    'all three answered': (r) => r.length === 3 && r.every((x) => x.status === grpc.StatusOK && x.message.owner === 'nobody'),
    'at once, not one after another': () => took < 800,
  });
  const refused = await client.asyncInvoke('chain.Items/Get', { id: '1' });
  check(refused, { 'a failed call resolves with its status': (r) => r.status === grpc.StatusUnauthenticated });
  let rejected = '';
  try {
    await client.asyncInvoke('chain.Items/Nope', { id: '1' });
  } catch (e) {
    rejected = String(e);
  }
  check(rejected, { 'an unknown method rejects': (t) => t.indexOf('not found in file descriptors') >= 0 });
  client.close();
};
