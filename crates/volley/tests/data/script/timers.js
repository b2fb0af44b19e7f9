// Timers on the VU's event loop (k6/timers and the globals): a bidi stream ended from a
// setTimeout, an interval cleared after three ticks, a timeout cleared before it fires; the
// iteration ends once none is pending.
import { Client, Stream } from 'k6/net/grpc';
import { setTimeout } from 'k6/timers';

const client = new Client();
client.load([], 'route_guide.proto');

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  const stream = new Stream(client, 'routeguide.RouteGuide/RouteChat');
  let got = 0;
  stream.on('data', () => got++);
  stream.on('end', () => {
    console.log('chat ended with ' + got + ' notes back');
    client.close();
  });
  stream.write({ location: { latitude: 7, longitude: 7 }, message: 'first' });
  setTimeout(() => {
    stream.write({ location: { latitude: 7, longitude: 7 }, message: 'second' });
    stream.end();
  }, 200);
  let ticks = 0;
  const every = setInterval(() => {
    ticks++;
    if (ticks === 3) clearInterval(every);
  }, 20);
  const never = globalThis.setTimeout(() => console.log('NEVER'), 10);
  clearTimeout(never);
  setTimeout(() => console.log('ticks ' + ticks), 300);
};
