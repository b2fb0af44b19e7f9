// Calls a unary and a server-streaming method of a service that @grpc/proto-loader loads from a
// .proto at run time (gRPCity's stack: no generated code on either side), and prints what came
// back as one JSON line. Usage: node client.js ADDR PROTO SERVICE UNARY STREAMING REQUEST_JSON
const grpc = require("@grpc/grpc-js");
const loader = require("@grpc/proto-loader");

const [addr, protoFile, service, unary, streaming, requestJson] = process.argv.slice(2);
const definition = loader.loadSync(protoFile, { longs: String, enums: String, defaults: true });
const Service = service.split(".").reduce((o, k) => o[k], grpc.loadPackageDefinition(definition));
const client = new Service(addr, grpc.credentials.createInsecure());
const request = JSON.parse(requestJson);
const fail = (e) => {
  console.error(`node-client: ${e.message}`);
  process.exit(1);
};

client[unary](request, { deadline: Date.now() + 10000 }, (err, reply) => {
  if (err) return fail(err);
  const streamed = [];
  const call = client[streaming](request, { deadline: Date.now() + 10000 });
  call.on("data", (m) => streamed.push(m));
  call.on("error", fail);
  call.on("end", () => {
    console.log(JSON.stringify({ unary: reply, streamed }));
    client.close();
  });
});
