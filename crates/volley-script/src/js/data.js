// `k6/data`: SharedArray. The callback runs once per run (in the first VU to ask); every other
// VU reads the same JSON text and gets a frozen copy of its own.
const n = globalThis.__k6;

function freeze(v) {
  if (v !== null && typeof v === 'object') {
    Object.freeze(v);
    for (const k of Object.keys(v)) freeze(v[k]);
  }
  return v;
}

export class SharedArray {
  constructor(name, fn) {
    if (typeof name !== 'string' || name === '') throw new Error('empty name provided to SharedArray\'s constructor');
    if (typeof fn !== 'function') throw new Error('a function is expected as the second argument of SharedArray\'s constructor');
    let text = n.sharedGet(name);
    if (text === undefined) {
      const value = fn();
      if (!Array.isArray(value)) throw new Error('only arrays can be made into SharedArray');
      text = n.sharedPut(name, JSON.stringify(value));
    }
    return freeze(JSON.parse(text));
  }
}

export default { SharedArray };
