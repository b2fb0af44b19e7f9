// `k6/http`'s requests (get, post, put, patch, del, head, options, request) over HTTP/1.1, for
// the scripts that log in over HTTP before they call gRPC. The response has k6's fields
// (status, status_text, body, headers, url, proto, timings.duration, error, error_code) and
// json(selector).
const n = globalThis.__k6;

export class Response {
  constructor(fields) {
    Object.assign(this, fields);
  }
  json(selector) {
    const v = JSON.parse(this.body);
    if (selector === undefined) return v;
    return String(selector)
      .split('.')
      .reduce((o, k) => (o === undefined || o === null ? undefined : o[k]), v);
  }
}

const hasHeader = (headers, name) => Object.keys(headers).some((h) => h.toLowerCase() === name);

export function request(method, url, body, params) {
  const p = params || {};
  const headers = Object.assign({}, p.headers || {});
  let text = body;
  if (text !== null && text !== undefined && typeof text === 'object') {
    // An object body is sent as a form, as k6 sends it.
    text = Object.keys(text)
      .map((k) => encodeURIComponent(k) + '=' + encodeURIComponent(text[k]))
      .join('&');
    if (!hasHeader(headers, 'content-type')) headers['Content-Type'] = 'application/x-www-form-urlencoded';
  }
  const out = n.httpRequest(
    String(method).toUpperCase(),
    String(url),
    text === undefined || text === null ? '' : String(text),
    JSON.stringify({ headers: headers, tags: p.tags || {}, timeout: p.timeout === undefined ? null : p.timeout }),
  );
  return new Response(JSON.parse(out));
}

export const get = (url, params) => request('GET', url, null, params);
export const post = (url, body, params) => request('POST', url, body, params);
export const put = (url, body, params) => request('PUT', url, body, params);
export const patch = (url, body, params) => request('PATCH', url, body, params);
export const del = (url, body, params) => request('DELETE', url, body, params);
export const head = (url, params) => request('HEAD', url, null, params);
export const options = (url, body, params) => request('OPTIONS', url, body, params);

export default { get, post, put, patch, del, head, options, request, Response };
