// Drives `volley ui`'s page in headless Chromium as a person would: picks a method, fills the
// form (a scalar, a nested message, a repeated field, a client stream's messages), presses
// Invoke, and reads the status and replies off the page; marks a bad value before any call.
// Prints one JSON line of what it saw. Usage: node test/ui.mjs PAGE_URL [SCREENSHOT_DIR]
import { launch } from "./chromium.mjs";

// `interop`: the target is grpc-go's interop server (grpc.testing only, no api.Users).
const [url, shots, target] = process.argv.slice(2);
const interop = target === "interop";
if (!url) {
  console.error("usage: node test/ui.mjs PAGE_URL [SCREENSHOT_DIR] [interop]");
  process.exit(2);
}

const browser = await launch();
const seen = { logged: [], invokes: 0 };
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  page.on("console", (m) => seen.logged.push(m.text()));
  page.on("pageerror", (e) => seen.logged.push(`page error: ${e.message}`));
  page.on("request", (r) => { if (r.url().includes("/invoke/")) seen.invokes += 1; });
  await page.goto(url, { waitUntil: "load", timeout: 20_000 });

  const pick = async (service, method) => {
    await page.select("#service", service);
    await page.select("#method", method);
    await page.waitForFunction((m) => document.getElementById("kind").textContent !== "" &&
      document.querySelector("#form .field") !== null, { timeout: 10_000 }, method);
    // The form of the method picked last (load is async): wait for its request type's fields.
    await new Promise((r) => setTimeout(r, 200));
  };
  const field = (path) => `#form [data-field="${path}"]`;
  const invoke = async () => {
    await page.evaluate(() => { document.getElementById("status").textContent = ""; });
    await page.click("#invoke");
    await page.waitForFunction(() => document.getElementById("status").textContent !== "", { timeout: 15_000 });
    return page.evaluate(() => ({
      status: document.getElementById("status").textContent,
      messages: [...document.querySelectorAll("#messages pre")].map((p) => JSON.parse(p.textContent)),
      details: [...document.querySelectorAll("#details pre")].map((p) => JSON.parse(p.textContent)),
    }));
  };
  const shot = async (name) => { if (shots) await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true }); };

  if (!interop) {
    // Unary, a scalar field.
    await pick("api.Users", "Get");
    await page.type(`${field("id")} input`, "7");
    seen.unary = await invoke();
    await shot("unary");

    // A value that does not fit: marked on its field, nothing sent.
    const before = seen.invokes;
    await page.$eval(`${field("id")} input`, (i) => { i.value = ""; });
    await page.type(`${field("id")} input`, "seven");
    seen.bad = await invoke();
    seen.bad.reason = await page.$eval(`${field("id")} .reason`, (r) => r.textContent);
    seen.bad.sent = seen.invokes - before;
    await shot("bad-value");
  }

  // A nested message (response_status) and a scalar: an error status with its message.
  await pick("grpc.testing.TestService", "UnaryCall");
  await page.type(`${field("response_size")} input`, "3");
  seen.nested = await invoke();
  await page.click(`${field("response_status")} legend input`);
  await page.type(`${field("response_status")} [data-field="code"] input`, "5");
  await page.type(`${field("response_status")} [data-field="message"] input`, "gone away");
  seen.error = await invoke();
  await shot("error");

  // A repeated field of messages: a server stream of two replies.
  await pick("grpc.testing.TestService", "StreamingOutputCall");
  for (const size of ["1", "2"]) {
    await page.click(`${field("response_parameters")} > span > button`);
    const items = await page.$$(`${field("response_parameters")} .item`);
    const last = items[items.length - 1];
    await (await last.$("legend input")).click();
    await (await last.$('[data-field="size"] input')).type(size);
  }
  seen.stream = await invoke();

  // A bidi stream: three messages added, sent, three replies read.
  await pick("grpc.testing.TestService", "FullDuplexCall");
  for (const size of ["1", "2", "3"]) {
    const items = await page.$$(`${field("response_parameters")} .item`);
    if (items.length === 0) {
      await page.click(`${field("response_parameters")} > span > button`);
      const [item] = await page.$$(`${field("response_parameters")} .item`);
      await (await item.$("legend input")).click();
    }
    const input = `${field("response_parameters")} .item [data-field="size"] input`;
    await page.$eval(input, (i) => { i.value = ""; });
    await page.type(input, size);
    await page.click("#add-message");
  }
  seen.bidi = await invoke();
  await shot("bidi");

  // The same bidi stream live: each message sent alone, its reply read before the next is sent.
  await pick("grpc.testing.TestService", "FullDuplexCall");
  await page.click(`${field("response_parameters")} > span > button`);
  const [item] = await page.$$(`${field("response_parameters")} .item`);
  await (await item.$("legend input")).click();
  const size = `${field("response_parameters")} .item [data-field="size"] input`;
  await page.click("#live-open");
  await page.waitForFunction(() => document.getElementById("live-state").textContent.startsWith("open"), { timeout: 10_000 });
  seen.live = { afterEach: [] };
  for (const n of ["1", "2", "3"]) {
    await page.$eval(size, (i) => { i.value = ""; });
    await page.type(size, n);
    await page.click("#live-send");
    const want = seen.live.afterEach.length + 1;
    await page.waitForFunction((k) => document.querySelectorAll("#messages pre").length >= k, { timeout: 10_000 }, want);
    seen.live.afterEach.push(await page.$$eval("#messages pre", (ps) => ps.map((p) => JSON.parse(p.textContent).payload.body)));
    seen.live.statusWhileOpen = await page.$eval("#status", (s) => s.textContent);
  }
  await page.click("#live-close");
  await page.waitForFunction(() => document.getElementById("live-state").textContent === "ended", { timeout: 10_000 });
  seen.live.status = await page.$eval("#status", (s) => s.textContent);
  seen.live.trailers = await page.$$eval("#trailers tr", (rows) => rows.length);
  await shot("bidi-live");
  console.log(JSON.stringify(seen));
} catch (e) {
  console.error(`ui: ${e.message}`);
  console.error(JSON.stringify(seen));
  process.exitCode = 1;
} finally {
  await browser.close();
}
