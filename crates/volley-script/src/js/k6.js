// The `k6` module: check, sleep, group, fail, randomSeed (k6's API, on volley-script's natives).
const n = globalThis.__k6;

export function check(value, sets, tags) {
  let all = true;
  for (const name of Object.keys(sets || {})) {
    const f = sets[name];
    let ok;
    try {
      ok = !!(typeof f === 'function' ? f(value) : f);
    } catch (e) {
      n.check(name, false, tags);
      throw e;
    }
    n.check(name, ok, tags);
    if (!ok) all = false;
  }
  return all;
}

export function sleep(seconds) {
  n.sleep(Number(seconds));
}

export function group(name, fn) {
  n.groupEnter(String(name));
  const started = Date.now();
  try {
    return fn();
  } finally {
    n.groupExit(Date.now() - started);
  }
}

export function fail(message) {
  throw new Error(message === undefined ? '' : String(message));
}

export function randomSeed(seed) {
  n.randomSeed(Number(seed));
}

export default { check, sleep, group, fail, randomSeed };
