// A default @grpc/grpc-js helloworld.Greeter server (grpc-js's own example, as users write it).
// Usage: node server.js --addr 127.0.0.1:0 (prints "listening on ADDR" on stderr once ready).
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const proto = path.join(__dirname, '../../../proto/helloworld/helloworld.proto');
const def = protoLoader.loadSync(proto, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
const helloworld = grpc.loadPackageDefinition(def).helloworld;

const i = process.argv.indexOf('--addr');
const addr = i > 0 ? process.argv[i + 1] : '127.0.0.1:0';
const server = new grpc.Server();
server.addService(helloworld.Greeter.service, {
  SayHello: (call, callback) => callback(null, { message: 'Hello ' + call.request.name }),
});
server.bindAsync(addr, grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) { console.error(err.message); process.exit(1); }
  console.error(`listening on ${addr.slice(0, addr.lastIndexOf(':'))}:${port}`);
});
