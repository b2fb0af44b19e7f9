// volley ui's page: grpcui's form, written for volley (no framework, no build step).
// Reads the method list the server put in #config, asks `metadata?method=` for the request's
// schema, builds a form from it (nested messages, repeated fields, maps, oneofs, enums, the
// well-known types as JSON), checks each value against its field before any call, and sends
// grpcui's `invoke/` request with the CSRF token its cookie holds. A streaming method can also
// be opened live (volley's `stream/` routes): messages sent one by one, replies shown as they
// come.
"use strict";

const config = JSON.parse(document.getElementById("config").textContent);
const $ = (id) => document.getElementById(id);
const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
};

let schema = null; // the method's /metadata reply
let root = null; // the form's root message editor
let pending = []; // a client stream's messages added so far
let live = null; // the stream open live: {id, from, sent, started}

// ---- the value checks: each returns the value to send, or throws the reason ----

const INT = /^[+-]?\d+$/;
const LIMITS = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n], sint32: [-(2n ** 31n), 2n ** 31n - 1n],
  sfixed32: [-(2n ** 31n), 2n ** 31n - 1n], uint32: [0n, 2n ** 32n - 1n], fixed32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n], sint64: [-(2n ** 63n), 2n ** 63n - 1n],
  sfixed64: [-(2n ** 63n), 2n ** 63n - 1n], uint64: [0n, 2n ** 64n - 1n], fixed64: [0n, 2n ** 64n - 1n],
};
const WELL_KNOWN = /^google\.protobuf\./;

function scalar(type, text) {
  if (type in LIMITS) {
    const t = text.trim();
    if (!INT.test(t)) throw `not an integer: ${type} takes whole numbers`;
    const n = BigInt(t);
    const [lo, hi] = LIMITS[type];
    if (n < lo || n > hi) throw `out of range for ${type} (${lo} to ${hi})`;
    return type.endsWith("64") ? t : Number(t);
  }
  if (type === "double" || type === "float") {
    const t = text.trim();
    if (["NaN", "Infinity", "-Infinity"].includes(t)) return t;
    if (t === "" || isNaN(Number(t))) throw `not a number: ${type} takes numbers, NaN or Infinity`;
    return Number(t);
  }
  if (type === "bytes") {
    if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(text) || text.replace(/=+$/, "").length % 4 === 1)
      throw "not base64: bytes are written in base64";
    return text;
  }
  return text; // string
}

// ---- editors: each has .node (the DOM) and .value() (JSON to send, or throws) ----

function fieldEditor(f) {
  if (f.type === "oneof") return oneofEditor(f);
  if (f.isMap) return mapEditor(f);
  if (f.isArray) return listEditor(f, () => singleEditor(f));
  return singleEditor(f);
}

function singleEditor(f) {
  if (f.isMessage && !WELL_KNOWN.test(f.type)) return messageEditor(f.type, true);
  if (f.isMessage) return jsonEditor(f);
  if (f.isEnum) {
    const values = schema.enumTypes[f.type] || [];
    const select = el("select", {}, ...values.map((v) => el("option", { value: v.name }, v.name)));
    if (f.defaultVal) select.value = f.defaultVal;
    return { node: select, value: () => select.value };
  }
  if (f.type === "bool") {
    const box = el("input", { type: "checkbox" });
    return { node: box, value: () => box.checked };
  }
  const input = el("input", { type: "text", placeholder: f.type, "data-type": f.type });
  if (f.defaultVal !== null && f.defaultVal !== undefined && f.defaultVal !== "" && f.defaultVal !== 0 && f.defaultVal !== "0")
    input.value = f.defaultVal;
  // Left empty, the field is not set (its default then).
  return { node: input, value: () => (input.value === "" ? undefined : scalar(f.type, input.value)) };
}

/// A well-known type (Timestamp, Duration, Struct, Any, wrappers) written as its JSON.
function jsonEditor(f) {
  const input = el("input", { type: "text", placeholder: `${f.type} as JSON, e.g. "2026-01-01T00:00:00Z"` });
  return {
    node: input,
    value: () => {
      if (input.value.trim() === "") return undefined;
      try { return JSON.parse(input.value); } catch (e) { throw `not JSON: ${e.message}`; }
    },
  };
}

function messageEditor(type, optional) {
  const fields = (schema.messageTypes[type] || []).map((f) => ({ f, ed: fieldEditor(f) }));
  const set = el("input", { type: "checkbox" });
  const body = el("div", { class: "fields" });
  for (const { f, ed } of fields) {
    const reason = el("span", { class: "reason" });
    const row = el("div", { class: "field", "data-field": f.protoName },
      el("span", { class: "name" }, f.protoName), ed.node,
      el("span", { class: "type" }, f.type === "oneof" ? "oneof" : (f.isArray ? "repeated " : "") + f.type), reason);
    ed.row = row;
    ed.reason = reason;
    body.append(row);
  }
  const node = optional ? el("fieldset", {}, el("legend", {}, set, ` ${type}`), body) : body;
  if (optional) {
    body.hidden = true;
    set.addEventListener("change", () => { body.hidden = !set.checked; });
  }
  return {
    node,
    fields,
    value: () => {
      if (optional && !set.checked) return undefined;
      const out = {};
      let bad = null;
      for (const { f, ed } of fields) {
        try {
          ed.row.classList.remove("invalid");
          ed.reason.textContent = "";
          const v = ed.value();
          if (f.type === "oneof") {
            if (v) out[v[0]] = v[1];
          } else if (v !== undefined) out[f.protoName] = v;
        } catch (why) {
          ed.row.classList.add("invalid");
          ed.reason.textContent = String(why);
          bad = bad || `${f.protoName}: ${why}`;
        }
      }
      if (bad) throw bad;
      return out;
    },
  };
}

function listEditor(f, make) {
  const items = el("div", { class: "items" });
  const editors = [];
  const add = el("button", { type: "button" }, "+");
  add.addEventListener("click", () => {
    const ed = make();
    editors.push(ed);
    const remove = el("button", { type: "button" }, "−");
    const line = el("div", { class: "item" }, ed.node, remove);
    remove.addEventListener("click", () => { editors.splice(editors.indexOf(ed), 1); line.remove(); });
    items.append(line);
  });
  return {
    node: el("span", {}, items, add),
    value: () => {
      const out = editors.map((e) => e.value()).filter((v) => v !== undefined);
      return out.length ? out : undefined;
    },
  };
}

function mapEditor(f) {
  const entry = schema.messageTypes[f.type] || [];
  const [kf, vf] = [entry.find((x) => x.protoName === "key"), entry.find((x) => x.protoName === "value")];
  const list = listEditor(f, () => {
    const k = singleEditor(kf);
    const v = singleEditor(vf);
    return { node: el("span", {}, k.node, " : ", v.node), value: () => [String(k.value()), v.value()] };
  });
  return {
    node: list.node,
    value: () => {
      const pairs = list.value();
      return pairs ? Object.fromEntries(pairs) : undefined;
    },
  };
}

function oneofEditor(f) {
  const select = el("select", {}, el("option", { value: "" }, "(none)"),
    ...f.oneOfFields.map((m) => el("option", { value: m.protoName }, m.protoName)));
  const slot = el("span");
  let current = null;
  select.addEventListener("change", () => {
    slot.replaceChildren();
    const m = f.oneOfFields.find((x) => x.protoName === select.value);
    current = m ? { m, ed: singleEditor(m) } : null;
    if (current) slot.append(current.ed.node);
  });
  return {
    node: el("span", {}, select, slot),
    value: () => (current ? [current.m.protoName, current.ed.value() ?? {}] : undefined),
  };
}

// ---- the page ----

function methodsOf(service) {
  return config.methods.filter((m) => m.service === service);
}

function selected() {
  return config.methods.find((m) => m.service === $("service").value && m.method === $("method").value);
}

function fill() {
  const services = [...new Set(config.methods.map((m) => m.service))];
  $("service").replaceChildren(...services.map((s) => el("option", { value: s }, s)));
  $("target").textContent = config.target;
  for (const row of config.defaultMetadata) addRow(row.name, row.value);
  $("service").addEventListener("change", () => { listMethods(); load(); });
  $("method").addEventListener("change", load);
  listMethods();
  load();
}

function listMethods() {
  $("method").replaceChildren(...methodsOf($("service").value).map((m) => el("option", { value: m.method }, m.method)));
}

async function load() {
  const m = selected();
  if (!m) return;
  const kind = m.clientStreaming ? (m.serverStreaming ? "bidi streaming" : "client streaming") : (m.serverStreaming ? "server streaming" : "unary");
  $("kind").textContent = kind;
  const r = await fetch(`metadata?method=${encodeURIComponent(`${m.service}.${m.method}`)}`);
  schema = await r.json();
  root = messageEditor(schema.requestType, false);
  $("form").replaceChildren(root.node);
  pending = [];
  $("pending").replaceChildren();
  $("stream").hidden = !schema.requestStream;
  $("json").value = "{}";
  live = null;
  $("live").hidden = !(m.clientStreaming || m.serverStreaming);
  liveButtons(false);
  $("live-state").textContent = "";
}

// ---- streams live: open, send one by one, end; replies read as they come ----

function liveButtons(open) {
  $("live-open").disabled = open;
  $("live-send").disabled = !open || !schema.requestStream;
  $("live-close").disabled = !open || !schema.requestStream;
}

async function post(path, body) {
  const r = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-grpcui-csrf-token": cookie("_grpcui_csrf_token") },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  if (!r.ok) throw text.trim() || `HTTP ${r.status}`;
  return JSON.parse(text);
}

function failed(why) {
  $("status").className = "error";
  $("status").textContent = why;
}

async function liveOpen() {
  const m = selected();
  let first = [];
  if (!schema.requestStream) {
    try { first = requestData(); } catch (why) { failed(`Not sent: ${why}`); return; }
  }
  show({ responses: [], headers: [], trailers: [] });
  $("status").className = "";
  $("status").textContent = "";
  $("timing").textContent = "";
  const timeout = parseFloat($("timeout").value);
  let opened;
  try {
    opened = await post(`stream/open/${m.service}.${m.method}`,
      { metadata: metadataRows(), data: first, timeout_seconds: isNaN(timeout) ? 0 : timeout });
  } catch (why) { failed(why); return; }
  live = { id: opened.id, from: 0, sent: 0, started: performance.now() };
  liveButtons(true);
  $("live-state").textContent = "open";
  read(live);
}

async function read(l) {
  while (live === l) {
    let res;
    try {
      const r = await fetch(`stream/${l.id}/events?from=${l.from}`);
      if (!r.ok) throw (await r.text()).trim();
      res = await r.json();
    } catch (why) { failed(`${why}`); break; }
    if (live !== l) break;
    l.from += res.events.length;
    for (const ev of res.events) {
      if (ev.headers) table("headers", ev.headers);
      if ("message" in ev) {
        $("messages").append(el("pre", { class: ev.isError ? "error" : "message" }, JSON.stringify(ev.message, null, 2)));
      }
      if (ev.end) {
        show({ error: ev.end.error, responses: null, headers: null, trailers: ev.end.trailers, keep: true });
        $("timing").textContent = `${(performance.now() - l.started).toFixed(1)} ms`;
      }
    }
    $("live-state").textContent = res.done ? "ended" : `open: ${l.sent} sent, ${$("messages").children.length} received`;
    if (res.done) {
      live = null;
      liveButtons(false);
      break;
    }
  }
}

async function liveSend() {
  const l = live;
  if (!l) return;
  let v;
  try {
    // The message on the form (or the JSON tab's last): the one to send now.
    const d = $("json").hidden ? [root.value() || {}] : requestData();
    v = d[d.length - 1];
  } catch (why) { failed(`Not sent: ${why}`); return; }
  try {
    const r = await post(`stream/${l.id}/send`, { data: v });
    if (r.error) { failed(`${r.error.name} (${r.error.code}): ${r.error.message}`); return; }
    l.sent += 1;
    $("pending").append(el("li", { class: "sent" }, JSON.stringify(v)));
    $("live-state").textContent = `open: ${l.sent} sent, ${$("messages").children.length} received`;
  } catch (why) { failed(`Not sent: ${why}`); }
}

async function liveClose() {
  const l = live;
  if (!l) return;
  try { await post(`stream/${l.id}/close`, {}); } catch (why) { failed(`${why}`); return; }
  $("live-send").disabled = true;
  $("live-close").disabled = true;
}

function addRow(name = "", value = "") {
  const n = el("input", { type: "text", placeholder: "name", value: name });
  const v = el("input", { type: "text", placeholder: "value", value: value });
  const remove = el("button", { type: "button" }, "−");
  const tr = el("tr", {}, el("td", {}, n), el("td", {}, v), el("td", {}, remove));
  remove.addEventListener("click", () => tr.remove());
  $("metadata").tBodies[0].append(tr);
}

function metadataRows() {
  return [...$("metadata").tBodies[0].rows]
    .map((tr) => ({ name: tr.cells[0].firstChild.value.trim(), value: tr.cells[1].firstChild.value }))
    .filter((r) => r.name !== "");
}

/// The request messages to send, or throws (the fields already marked).
function requestData() {
  if (!$("json").hidden) {
    let v;
    try { v = JSON.parse($("json").value || "{}"); } catch (e) { throw `the JSON does not parse: ${e.message}`; }
    return Array.isArray(v) ? v : [v];
  }
  const current = root.value() || {};
  return schema.requestStream ? (pending.length ? pending : [current]) : [current];
}

function cookie(name) {
  const hit = document.cookie.split(";").map((c) => c.trim().split("=")).find(([k]) => k === name);
  return hit ? decodeURIComponent(hit.slice(1).join("=")) : "";
}

function table(id, rows) {
  $(id).tBodies[0].replaceChildren(...(rows || []).map((r) => el("tr", {}, el("td", {}, r.name), el("td", {}, r.value))));
}

async function invoke() {
  const m = selected();
  $("status").textContent = "";
  $("status").className = "";
  let data;
  try {
    data = requestData();
  } catch (why) {
    // Nothing sent: the last call's answer is cleared, so it is not read as this one's.
    show({ responses: [], headers: [], trailers: [] });
    $("timing").textContent = "";
    $("status").className = "error";
    $("status").textContent = `Not sent: ${why}`;
    return;
  }
  const timeout = parseFloat($("timeout").value);
  const body = { metadata: metadataRows(), data, timeout_seconds: isNaN(timeout) ? 0 : timeout };
  const started = performance.now();
  const r = await fetch(`invoke/${m.service}.${m.method}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-grpcui-csrf-token": cookie("_grpcui_csrf_token") },
    body: JSON.stringify(body),
  });
  const took = performance.now() - started;
  $("timing").textContent = `${took.toFixed(1)} ms`;
  if (!r.ok) {
    $("status").className = "error";
    $("status").textContent = await r.text();
    $("messages").replaceChildren();
    return;
  }
  const res = await r.json();
  show(res);
}

function show(res) {
  if (res.error) {
    $("status").className = "error";
    $("status").textContent = `${res.error.name} (${res.error.code}): ${res.error.message}`;
  } else {
    $("status").className = "ok";
    $("status").textContent = "OK";
  }
  if (res.keep) {
    // A live stream's end: its replies are on the page already.
    $("details").replaceChildren(...((res.error && res.error.details) || []).map((d) => el("pre", { class: "detail" }, JSON.stringify(d.message, null, 2))));
    table("trailers", res.trailers);
    return;
  }
  $("messages").replaceChildren(...(res.responses || []).map((x) => el("pre", { class: x.isError ? "error" : "message" }, JSON.stringify(x.message, null, 2))));
  $("details").replaceChildren(...((res.error && res.error.details) || []).map((d) => el("pre", { class: "detail" }, JSON.stringify(d.message, null, 2))));
  table("headers", res.headers);
  table("trailers", res.trailers);
}

function shellQuote(s) {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function command(tool) {
  const m = selected();
  let data;
  try { data = requestData(); } catch (why) { return `# not a valid request: ${why}`; }
  const payload = data.map((d) => JSON.stringify(d)).join("\n");
  const parts = [tool];
  if (config.plaintext) parts.push("-plaintext");
  for (const r of metadataRows()) parts.push("-H", shellQuote(`${r.name}: ${r.value}`));
  parts.push("-d", shellQuote(payload), config.target, `${m.service}/${m.method}`);
  return parts.join(" ");
}

function copy(tool) {
  const text = command(tool);
  $("command").hidden = false;
  $("command").textContent = text;
  if (navigator.clipboard) navigator.clipboard.writeText(text).catch(() => {});
}

$("tab-form").addEventListener("click", () => {
  $("json").hidden = true; $("form").hidden = false;
  $("tab-form").classList.add("on"); $("tab-json").classList.remove("on");
});
$("tab-json").addEventListener("click", () => {
  try { const d = requestData(); $("json").value = JSON.stringify(d.length === 1 ? d[0] : d, null, 2); } catch (_) { /* keep the text */ }
  $("json").hidden = false; $("form").hidden = true;
  $("tab-json").classList.add("on"); $("tab-form").classList.remove("on");
});
$("add-row").addEventListener("click", () => addRow());
$("add-message").addEventListener("click", () => {
  try {
    const v = root.value() || {};
    pending.push(v);
    $("pending").append(el("li", {}, JSON.stringify(v)));
  } catch (why) {
    $("status").className = "error";
    $("status").textContent = `Not added: ${why}`;
  }
});
$("invoke").addEventListener("click", invoke);
$("live-open").addEventListener("click", liveOpen);
$("live-send").addEventListener("click", liveSend);
$("live-close").addEventListener("click", liveClose);
$("copy-grpcurl").addEventListener("click", () => copy("grpcurl"));
$("copy-volley").addEventListener("click", () => copy("volley call"));
fill();
