import { Client, Stream } from 'k6/net/grpc';

const client = new Client();
client.load([], 'route_guide.proto');

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  const stream = new Stream(client, 'routeguide.RouteGuide/RouteChat');
  stream.on('data', (note) => console.log('Got message "' + note.message + '" at ' + note.location.latitude));
  stream.on('end', () => { client.close(); console.log('All done'); });
  for (const m of ['first', 'second', 'third']) {
    stream.write({ location: { latitude: 1, longitude: 1 }, message: m });
  }
  stream.end();
};
