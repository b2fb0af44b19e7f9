// Headless Chromium (Debian's, or $CHROMIUM) as the page tests start it.
import puppeteer from "puppeteer-core";

export function launch() {
  return puppeteer.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    // --no-sandbox: CI runs as root, where Chromium's sandbox cannot start.
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
}
