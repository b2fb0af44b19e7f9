import { Client, Stream } from 'k6/net/grpc';
import { sleep } from 'k6';

const client = new Client();
client.load([], 'route_guide.proto');
const points = [
  { latitude: 407838351, longitude: -746143763 },
  { latitude: 408122808, longitude: -743999179 },
  { latitude: 413628156, longitude: -749015468 },
];

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  const stream = new Stream(client, 'routeguide.RouteGuide/RecordRoute');
  stream.on('data', (stats) => {
    console.log('Finished trip with', stats.pointCount, 'points');
    console.log('Passed', stats.featureCount, 'features');
  });
  stream.on('end', () => { client.close(); console.log('All done'); });
  for (const p of points) {
    console.log('Visiting point', p.latitude, p.longitude);
    stream.write(p);
    sleep(0.05);
  }
  stream.end();
};
