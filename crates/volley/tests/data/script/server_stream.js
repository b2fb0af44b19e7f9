import { Client, Stream } from 'k6/net/grpc';
import { sleep } from 'k6';

const client = new Client();
client.load([], 'route_guide.proto');

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  const stream = new Stream(client, 'routeguide.RouteGuide/ListFeatures', null);
  let n = 0;
  stream.on('data', (feature) => {
    n++;
    if (n <= 2) console.log('Found feature called "' + feature.name + '" at ' + feature.location.latitude / 1e7);
  });
  stream.on('end', () => {
    client.close();
    console.log('All done: ' + n + ' features');
  });
  stream.on('error', (e) => console.log('Stream Error: ' + JSON.stringify(e)));
  stream.write({ lo: { latitude: 400000000, longitude: -750000000 }, hi: { latitude: 420000000, longitude: -730000000 } });
  sleep(0.2);
};
