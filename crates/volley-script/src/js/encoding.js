// `k6/encoding`: base64 in k6's four alphabets (std, rawstd, url, rawurl).
const n = globalThis.__k6;

export function b64encode(input, encoding) {
  const alphabet = encoding === undefined ? 'std' : String(encoding);
  if (input instanceof ArrayBuffer) return n.b64encodeBytes(Array.from(new Uint8Array(input)), alphabet);
  return n.b64encode(String(input), alphabet);
}

export function b64decode(input, encoding, format) {
  return n.b64decode(String(input), encoding === undefined ? 'std' : String(encoding), format === 's');
}

export default { b64encode, b64decode };
