import grpc from 'k6/net/grpc';
import { check } from 'k6';

const client = new grpc.Client();
client.load([], 'route_guide.proto');

export const options = {
  thresholds: {
    grpc_req_duration: ['p(95)<5000'],
    'grpc_req_duration{method:GetFeature}': ['max<5000'],
    checks: ['rate==1'],
  },
};

export default () => {
  client.connect(__ENV.GRPC_ADDR, { plaintext: true });
  const response = client.invoke('routeguide.RouteGuide/GetFeature', {
    latitude: 409146138,
    longitude: -746188906,
  });
  check(response, {
    'status is OK': (r) => r && r.status === grpc.StatusOK,
    'int32 fields come back as numbers': (r) => r.message.location.latitude === 409146138,
  });
  console.log(JSON.stringify(response.message));
  client.close();
};
