// `k6/timers`: the same timers the prelude puts on the global object.
export const { setTimeout, clearTimeout, setInterval, clearInterval } = globalThis;
export default { setTimeout, clearTimeout, setInterval, clearInterval };
