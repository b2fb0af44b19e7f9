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
  globalThis.console = {
    log() { n.log('info', line(arguments)); },
    info() { n.log('info', line(arguments)); },
    warn() { n.log('warning', line(arguments)); },
    error() { n.log('error', line(arguments)); },
    debug() { n.log('debug', line(arguments)); },
  };
})();
