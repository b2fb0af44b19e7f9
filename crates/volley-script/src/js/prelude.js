// Run in every VU before the script: `console`, k6's way of printing values.
(() => {
  const n = globalThis.__k6;
  const inspect = (v, depth) => {
    if (v === null) return 'null';
    if (v === undefined) return 'undefined';
    switch (typeof v) {
      case 'string': return depth === 0 ? v : "'" + v + "'";
      case 'function': return '[Function: ' + (v.name || '(anonymous)') + ']';
      case 'object': break;
      default: return String(v);
    }
    if (v instanceof Error) return String(v);
    if (depth > 4) return Array.isArray(v) ? '[Array]' : '[Object]';
    if (Array.isArray(v)) {
      return v.length === 0 ? '[]' : '[ ' + v.map((x) => inspect(x, depth + 1)).join(', ') + ' ]';
    }
    const keys = Object.keys(v);
    if (keys.length === 0) return '{}';
    const key = (k) => (/^[A-Za-z_$][\w$]*$/.test(k) ? k : "'" + k + "'");
    return '{ ' + keys.map((k) => key(k) + ': ' + inspect(v[k], depth + 1)).join(', ') + ' }';
  };
  const line = (args) => Array.prototype.map.call(args, (a) => inspect(a, 0)).join(' ');
  // Timers, on the VU's event loop: the iteration ends once none is pending, as in k6.
  const timers = new Map();
  const fire = (id) => {
    const t = timers.get(id);
    if (t === undefined) return;
    if (t.every === undefined) {
      timers.delete(id);
    } else {
      timers.delete(id);
      t.inner = n.timerStart(t.every);
      timers.set(t.inner, t);
      t.ids.add(t.inner);
    }
    t.fn(...t.args);
  };
  globalThis.__k6_timer = fire;
  globalThis.setTimeout = (fn, ms, ...args) => {
    const id = n.timerStart(Number(ms) || 0);
    timers.set(id, { fn, args });
    return id;
  };
  globalThis.setInterval = (fn, ms, ...args) => {
    const every = Math.max(Number(ms) || 0, 1);
    const id = n.timerStart(every);
    const t = { fn, args, every, inner: id, ids: new Set([id]) };
    timers.set(id, t);
    intervals.set(id, t);
    return id;
  };
  const intervals = new Map();
  globalThis.clearTimeout = (id) => {
    if (timers.delete(id)) n.timerClear(id);
  };
  globalThis.clearInterval = (id) => {
    const t = intervals.get(id);
    if (t === undefined) return globalThis.clearTimeout(id);
    intervals.delete(id);
    if (timers.delete(t.inner)) n.timerClear(t.inner);
  };
  globalThis.console = {
    log() { n.log('info', line(arguments)); },
    info() { n.log('info', line(arguments)); },
    warn() { n.log('warning', line(arguments)); },
    error() { n.log('error', line(arguments)); },
    debug() { n.log('debug', line(arguments)); },
  };
})();
