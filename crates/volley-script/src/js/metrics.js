// `k6/metrics`: Counter, Gauge, Rate and Trend, recorded by the VU into the run's metrics.
const n = globalThis.__k6;

class Metric {
  constructor(kind, name, isTime) {
    if (typeof name !== 'string' || name === '') throw new Error('metrics must have a name');
    this.name = name;
    this._id = n.metricNew(name, kind, !!isTime);
  }
  add(value, tags) {
    if (tags === undefined || tags === null) n.metricAdd(this._id, Number(value));
    else n.metricAdd(this._id, Number(value), JSON.stringify(tags));
    return true;
  }
}

export class Counter extends Metric {
  constructor(name, isTime) { super('counter', name, isTime); }
}
export class Gauge extends Metric {
  constructor(name, isTime) { super('gauge', name, isTime); }
}
export class Rate extends Metric {
  constructor(name, isTime) { super('rate', name, isTime); }
}
export class Trend extends Metric {
  constructor(name, isTime) { super('trend', name, isTime); }
}

export default { Counter, Gauge, Rate, Trend };
