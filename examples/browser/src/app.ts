// A page that calls `volley serve` from another origin, over the three protocols a browser can
// speak: Connect with JSON, Connect with binary protobuf, and gRPC-Web. The API's address comes
// from the page's query string (`?api=http://127.0.0.1:50051`); `&suite=interop` makes only the
// grpc.testing.TestService calls (a server with gRPC's interop service alone, such as grpc-go's
// interop server behind `volley gateway`); every outcome is written into the page (and
// `window.volleyResults`, which test/drive.mjs reads).

import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { Users } from "./gen/api/users_pb.js";
import { Greeter } from "./gen/helloworld/helloworld_pb.js";
import { TestService } from "./gen/grpc/testing/test_pb.js";

/** What one protocol's calls returned, or how they failed. */
interface Outcome {
  hello?: string;
  user?: { id: string; name: string };
  streamed?: number[];
  error?: { code: string; message: string };
  echoedHeader?: string | null;
  /** The payload sizes of TestService.StreamingOutputCall's replies (asked for 1, 2 and 3). */
  testStream?: number[];
  /** Set when the calls could not be made at all (a CORS refusal lands here). */
  failure?: { code: string; message: string };
}

const query = new URLSearchParams(location.search);
const api = query.get("api") ?? "http://127.0.0.1:50051";
const interopOnly = query.get("suite") === "interop";

const transports: Record<string, Transport> = {
  "connect-json": createConnectTransport({ baseUrl: api }),
  "connect-proto": createConnectTransport({ baseUrl: api, useBinaryFormat: true }),
  "grpc-web": createGrpcWebTransport({ baseUrl: api }),
};

/** A failure as the page shows it: the status code's name and the message the server sent. */
function described(e: unknown): { code: string; message: string } {
  const err = ConnectError.from(e);
  return { code: Code[err.code], message: err.rawMessage };
}

/** The calls only volley's built-in services answer: Greeter, and Users' unary and stream. */
async function volleysOwn(transport: Transport, out: Outcome, timeoutMs: number) {
  const greeter = createClient(Greeter, transport);
  out.hello = (await greeter.sayHello({ name: "browser" }, { timeoutMs })).message;

  const users = createClient(Users, transport);
  const user = await users.get({ id: 7n }, { timeoutMs });
  out.user = { id: user.id.toString(), name: user.name };
  out.streamed = [];
  for await (const u of users.list({}, { timeoutMs })) {
    out.streamed.push(Number(u.id));
  }
}

async function exercise(transport: Transport): Promise<Outcome> {
  const out: Outcome = {};
  // A deadline on every call: its header (grpc-timeout or connect-timeout-ms) must pass CORS.
  const timeoutMs = 5000;
  try {
    if (!interopOnly) {
      await volleysOwn(transport, out, timeoutMs);
    }
    const test = createClient(TestService, transport);
    // Metadata both ways: a request header the preflight must allow, echoed back in a response
    // header the server must expose.
    await test.unaryCall(
      {},
      {
        timeoutMs,
        headers: { "x-grpc-test-echo-initial": "from-the-page" },
        onHeader: (h) => {
          out.echoedHeader = h.get("x-grpc-test-echo-initial");
        },
      },
    );
    out.testStream = [];
    const sizes = [1, 2, 3].map((size) => ({ size }));
    for await (const r of test.streamingOutputCall({ responseParameters: sizes }, { timeoutMs })) {
      out.testStream.push(r.payload?.body.length ?? -1);
    }
    try {
      await test.unaryCall(
        { responseStatus: { code: Code.InvalidArgument, message: "the page asked for this error" } },
        { timeoutMs },
      );
      out.error = { code: "none", message: "" };
    } catch (e) {
      out.error = described(e);
    }
  } catch (e) {
    out.failure = described(e);
  }
  return out;
}

async function main() {
  const results: Record<string, Outcome> = {};
  for (const [name, transport] of Object.entries(transports)) {
    results[name] = await exercise(transport);
  }
  (window as unknown as { volleyResults: unknown }).volleyResults = results;
  const pre = document.getElementById("results");
  if (pre) pre.textContent = JSON.stringify(results, null, 2);
}

void main();
