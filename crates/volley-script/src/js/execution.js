// `k6/execution`: what the VU, its scenario and the run are doing now.
const n = globalThis.__k6;

const info = () => n.execInfo();

export const vu = {
  get idInInstance() { return info().vu; },
  get idInTest() { return info().vu; },
  get iterationInInstance() { return info().iterInInstance; },
  get iterationInScenario() { return info().iter; },
  get tags() { return info().tags; },
  get metrics() { return { tags: info().tags, metadata: {} }; },
};

export const scenario = {
  get name() { return info().scenario; },
  get executor() { return info().executor; },
  get startTime() { return info().scenarioStart; },
  get progress() { return info().progress; },
  get iterationInInstance() { return info().scenarioIter; },
  get iterationInTest() { return info().scenarioIter; },
};

export const instance = {
  get iterationsCompleted() { return info().completed; },
  get iterationsInterrupted() { return info().interrupted; },
  get vusActive() { return info().vusActive; },
  get vusInitialized() { return info().vusMax; },
  get currentTestRunDuration() { return info().elapsed; },
};

export const test = {
  abort(reason) { n.abort(reason === undefined ? '' : String(reason)); },
  get options() { return JSON.parse(n.optionsJson()); },
};

export default { vu, scenario, instance, test };
