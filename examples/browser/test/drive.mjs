// Loads the example page in headless Chromium (Debian's, or $CHROMIUM) and prints, as one JSON
// line, what the page's calls returned (`window.volleyResults`) and what the browser logged
// (a CORS refusal is reported there). Usage: node test/drive.mjs PAGE_URL
import { launch } from "./chromium.mjs";

const url = process.argv[2];
if (!url) {
  console.error("usage: node test/drive.mjs PAGE_URL");
  process.exit(2);
}

const browser = await launch();
try {
  const page = await browser.newPage();
  const logged = [];
  page.on("console", (m) => logged.push(m.text()));
  page.on("pageerror", (e) => logged.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => logged.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  await page.goto(url, { waitUntil: "load", timeout: 20_000 });
  await page.waitForFunction(() => window.volleyResults !== undefined, { timeout: 30_000 });
  const results = await page.evaluate(() => window.volleyResults);
  console.log(JSON.stringify({ results, logged }));
} catch (e) {
  console.error(`drive: ${e.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
