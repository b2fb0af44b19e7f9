// Watches `volley bench --dashboard`'s page in headless Chromium while the run goes: reads the
// figures once while it runs and again when the page says the run has finished, fetches the
// page's report (the "Save report" link) and opens the file --dashboard-export wrote, offline,
// reading the same figures off it. Prints one JSON line of what it saw.
// Usage: node test/dashboard.mjs PAGE_URL EXPORT_FILE [SCREENSHOT_DIR]
import { launch } from "./chromium.mjs";

const [url, exported, shots] = process.argv.slice(2);
if (!url || !exported) {
  console.error("usage: node test/dashboard.mjs PAGE_URL EXPORT_FILE [SCREENSHOT_DIR]");
  process.exit(2);
}

const browser = await launch();
const seen = { logged: [] };
const figures = (page) => page.evaluate(() => ({
  state: document.getElementById("state").textContent,
  calls: Number(document.getElementById("total-calls").textContent.replaceAll(",", "")),
  errors: Number(document.getElementById("total-errors").textContent.replaceAll(",", "")),
  statuses: Object.fromEntries([...document.querySelectorAll("#statuses tbody tr")]
    .map((tr) => [tr.dataset.status, Number(tr.children[1].textContent.replaceAll(",", ""))])),
  methods: Object.fromEntries([...document.querySelectorAll("#methods tbody tr")]
    .map((tr) => [tr.dataset.call, Number(tr.children[1].textContent.replaceAll(",", ""))])),
  lines: [...document.querySelectorAll("svg polyline")].map((p) => p.getAttribute("points").split(" ").length),
}));
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  page.on("console", (m) => seen.logged.push(m.text()));
  page.on("pageerror", (e) => seen.logged.push(`page error: ${e.message}`));
  await page.goto(url, { waitUntil: "load", timeout: 20_000 });
  await page.waitForFunction(() => Number(document.getElementById("total-calls").textContent.replaceAll(",", "")) > 0,
    { timeout: 20_000 });
  seen.running = await figures(page);
  await page.waitForFunction(() => document.getElementById("state").dataset.done === "true", { timeout: 60_000 });
  seen.finished = await figures(page);
  if (shots) await page.screenshot({ path: `${shots}/dashboard.png`, fullPage: true });
  seen.report = await page.evaluate(async () => {
    const r = await fetch(document.getElementById("save").getAttribute("href"));
    const text = await r.text();
    return { status: r.status, disposition: r.headers.get("content-disposition"), html: text.startsWith("<!doctype html>") };
  });

  // The exported file, opened with the network cut: everything it shows is in it.
  const offline = await browser.newPage();
  await offline.setViewport({ width: 1280, height: 900 });
  offline.on("pageerror", (e) => seen.logged.push(`export page error: ${e.message}`));
  const requests = [];
  offline.on("request", (r) => { if (!r.url().startsWith("file:")) requests.push(r.url()); });
  await offline.goto(`file://${exported}`, { waitUntil: "load", timeout: 20_000 });
  seen.exported = await figures(offline);
  seen.exported.requests = requests;
  if (shots) await offline.screenshot({ path: `${shots}/dashboard-export.png`, fullPage: true });
} finally {
  await browser.close();
}
console.log(JSON.stringify(seen));
