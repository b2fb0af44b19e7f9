// Drives `volley mock`'s page (the admin port's /ui) in headless Chromium as a person would.
//   add URL STUB_JSON: types the stub into the form and saves it; prints what the page said.
//   see URL [SCREENSHOT_DIR]: reads the stubs (match counts, used or not) and the calls (the
//     stub that answered; for a call no stub matched, the nearest stub and what it missed),
//     then deletes the stub the page added and waits for its row to go.
//   load URL: opens the page and reports how long it took to show the stubs and the calls.
// Prints one JSON line of what it saw.
import { launch } from "./chromium.mjs";

const [phase, url, arg] = process.argv.slice(2);
if (!["add", "see", "load"].includes(phase) || !url) {
  console.error("usage: node test/mock.mjs add URL STUB_JSON | see URL [SCREENSHOT_DIR] | load URL");
  process.exit(2);
}

const browser = await launch();
const seen = { logged: [] };
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  page.on("console", (m) => seen.logged.push(m.text()));
  page.on("pageerror", (e) => seen.logged.push(`page error: ${e.message}`));
  const started = Date.now();
  await page.goto(url, { waitUntil: "load", timeout: 20_000 });
  await page.waitForFunction(() => document.getElementById("state").dataset.loaded === "true", { timeout: 20_000 });
  seen.loadMs = Date.now() - started;
  if (phase === "load") {
    seen.rows = await page.$$eval("#calls tbody tr", (rows) => rows.length);
    seen.total = await page.$eval("#call-count", (c) => c.textContent);
  } else if (phase === "add") {
    await page.$eval("#stub-json", (t) => { t.value = ""; });
    await page.type("#stub-json", arg);
    await page.click("#stub-save");
    await page.waitForFunction(() => document.getElementById("stub-message").textContent !== "", { timeout: 10_000 });
    seen.message = await page.$eval("#stub-message", (m) => m.textContent);
    // The list shows it on the next refresh.
    await page.waitForFunction(() => document.querySelectorAll("#stubs tbody tr").length > 1, { timeout: 10_000 });
  } else {
    const read = () => page.evaluate(() => ({
      stubs: [...document.querySelectorAll("#stubs tbody tr")].map((tr) => ({
        id: tr.dataset.id,
        matched: tr.querySelector(".matched").textContent,
        unused: tr.classList.contains("unused"),
      })),
      calls: [...document.querySelectorAll("#calls tbody tr")].map((tr) => ({
        stub: tr.dataset.stub,
        method: tr.dataset.method,
        status: tr.children[2].textContent,
        nearest: tr.querySelector(".nearest")?.dataset.nearest ?? null,
        misses: [...tr.querySelectorAll(".nearest .miss")].map((m) => m.textContent),
      })),
    }));
    await page.waitForFunction(() => document.querySelectorAll("#calls tbody tr").length >= 2, { timeout: 10_000 });
    Object.assign(seen, await read());
    if (arg) await page.screenshot({ path: `${arg}/mock.png`, fullPage: true });
    // Delete the stub that answered, from its row.
    const answered = seen.calls.find((c) => c.stub)?.stub;
    await page.click(`#stubs tbody tr[data-id="${answered}"] button:last-child`);
    await page.waitForFunction((id) => !document.querySelector(`#stubs tbody tr[data-id="${id}"]`), { timeout: 10_000 }, answered);
    seen.deleted = answered;
    seen.message = await page.$eval("#stub-message", (m) => m.textContent);
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(seen));
