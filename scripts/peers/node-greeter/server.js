// A default @grpc/grpc-js server of helloworld.Greeter and api.Users (grpc-js's own example, as
// users write it).
// Usage: node server.js --addr 127.0.0.1:0 (prints "listening on ADDR" on stderr once ready).
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const protos = path.join(__dirname, '../../../proto');
const def = protoLoader.loadSync(['helloworld/helloworld.proto', 'api/users.proto'],
  { includeDirs: [protos], keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
const { helloworld, api } = grpc.loadPackageDefinition(def);

const i = process.argv.indexOf('--addr');
const addr = i > 0 ? process.argv[i + 1] : '127.0.0.1:0';
const server = new grpc.Server();
server.addService(helloworld.Greeter.service, {
  SayHello: (call, callback) => callback(null, { message: 'Hello ' + call.request.name }),
});
server.addService(api.Users.service, {
  Get: (call, callback) => callback(null,
    { id: call.request.id, email: 'dmitry.k@test.tld', name: 'Dmitry K.', rating: 228.53 }),
  List: (call) => {
    for (let i = 0; i < 10; i++) {
      call.write({ id: i, email: `user${i}@test`, name: `User ${i}`, rating: i * 1.53 });
    }
    call.end();
  },
});
server.bindAsync(addr, grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) { console.error(err.message); process.exit(1); }
  console.error(`listening on ${addr.slice(0, addr.lastIndexOf(':'))}:${port}`);
});
