import grpc from 'k6/net/grpc';

const client = new grpc.Client();
client.load([], 'route_guide.proto');

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  client.invoke('routeguide.RouteGuide/GetFeatur', { latitude: 1 });
};
