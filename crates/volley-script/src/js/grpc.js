// `k6/net/grpc`: Client, Stream and the status constants, on volley-script's natives. Messages
// cross as protojson text: JSON.stringify here, protobuf in Rust, JSON.parse on the way back.
const n = globalThis.__k6;

export const StatusOK = 0;
export const StatusCanceled = 1;
export const StatusUnknown = 2;
export const StatusInvalidArgument = 3;
export const StatusDeadlineExceeded = 4;
export const StatusNotFound = 5;
export const StatusAlreadyExists = 6;
export const StatusPermissionDenied = 7;
export const StatusResourceExhausted = 8;
export const StatusFailedPrecondition = 9;
export const StatusAborted = 10;
export const StatusOutOfRange = 11;
export const StatusUnimplemented = 12;
export const StatusInternal = 13;
export const StatusUnavailable = 14;
export const StatusDataLoss = 15;
export const StatusUnauthenticated = 16;

export const HealthCheckUnknown = 0;
export const HealthCheckServing = 1;
export const HealthCheckNotServing = 2;
export const HealthCheckServiceUnkown = 3;

const params = (p) => (p === undefined || p === null ? '{}' : JSON.stringify(p));

export class Client {
  constructor() {
    this._id = n.grpcClient();
  }
  load(importPaths, ...files) {
    return JSON.parse(n.grpcLoad(this._id, JSON.stringify(importPaths || []), JSON.stringify(files)));
  }
  loadProtoset(path) {
    return JSON.parse(n.grpcLoadProtoset(this._id, String(path)));
  }
  connect(address, p) {
    return n.grpcConnect(this._id, String(address), params(p));
  }
  invoke(method, request, p) {
    const body = request === undefined || request === null ? '' : JSON.stringify(request);
    return JSON.parse(n.grpcInvoke(this._id, String(method), body, params(p)));
  }
  asyncInvoke(method, request, p) {
    const body = request === undefined || request === null ? '' : JSON.stringify(request);
    let id;
    try {
      id = n.grpcAsyncInvoke(this._id, String(method), body, params(p));
    } catch (e) {
      return Promise.reject(e);
    }
    return new Promise((resolve, reject) => replies.set(id, { resolve, reject }));
  }
  healthCheck(service) {
    return JSON.parse(n.grpcHealth(this._id, service === undefined || service === null ? '' : String(service)));
  }
  close() {
    n.grpcClose(this._id);
  }
}

const streams = new Map();
const replies = new Map();

// Called by the VU's event loop with a stream's events and asyncInvoke's replies, in arrival
// order.
globalThis.__k6_stream_event = (id, event, payload) => {
  if (event === 'reply' || event === 'fail') {
    const r = replies.get(id);
    replies.delete(id);
    if (r === undefined) return;
    if (event === 'reply') r.resolve(JSON.parse(payload));
    else r.reject(new Error(payload));
    return;
  }
  const s = streams.get(id);
  if (s === undefined) return;
  if (event === 'end') streams.delete(id);
  const meta = { ts: Date.now() };
  const value = payload === undefined ? {} : JSON.parse(payload);
  for (const f of s._handlers[event] || []) f(value, meta);
};

export class Stream {
  constructor(client, method, p) {
    if (!(client instanceof Client)) throw new Error('the first argument of Stream must be a grpc.Client');
    this._handlers = {};
    this._id = n.streamOpen(client._id, String(method), params(p));
    streams.set(this._id, this);
  }
  on(event, handler) {
    if (!['data', 'error', 'end', 'status'].includes(event)) throw new Error('unknown event type: ' + event);
    if (typeof handler !== 'function') throw new Error('handler for "' + event + '" event isn\'t a callable function');
    (this._handlers[event] || (this._handlers[event] = [])).push(handler);
  }
  write(message) {
    n.streamWrite(this._id, JSON.stringify(message));
  }
  end() {
    n.streamEnd(this._id);
  }
}

export default {
  Client, Stream,
  StatusOK, StatusCanceled, StatusUnknown, StatusInvalidArgument, StatusDeadlineExceeded,
  StatusNotFound, StatusAlreadyExists, StatusPermissionDenied, StatusResourceExhausted,
  StatusFailedPrecondition, StatusAborted, StatusOutOfRange, StatusUnimplemented, StatusInternal,
  StatusUnavailable, StatusDataLoss, StatusUnauthenticated,
  HealthCheckUnknown, HealthCheckServing, HealthCheckNotServing, HealthCheckServiceUnkown,
};
