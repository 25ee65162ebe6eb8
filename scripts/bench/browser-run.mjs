// Runs a bundled browser app of ./browser-app.mjs in headless Chromium, so the bytes counted are
// those of an app that works, and are the bytes it downloads: a static server on a free loopback
// port serves the build folder; the page must decide (granted) without an error, and every file
// it fetched is counted, gzipped alone. Chromium is optional for `npm run bench` (only `npm test`
// installs it): without it the row says the app was not run and counts what the build made.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { serveStatic } from "../../tests/packaging/static-server.mjs";

const CHROMIUM = "/usr/bin/chromium";
const TIMEOUT_MS = 30_000;
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

/**
 * @param {{ root: string, files: { url: string, kind: string, raw: number, gzip: number }[] }} app What measureBrowserApp returned.
 * @returns {Promise<{ ran: true, fetched: object[], downloaded: { jsGzip: number, wasmGzip: number, total: number } } | { ran: false, reason: string }>}
 * What the page fetched (the build's files it asked for, in order) and their gzipped sums, or why
 * it was not run. Throws when the page ran and failed, or fetched a file the build did not make.
 * @example
 * const run = await runInChromium(app); // run.downloaded.total: bytes the page loaded, gzip
 */
export async function runInChromium(app) {
  if (!existsSync(CHROMIUM)) return { ran: false, reason: `no ${CHROMIUM} (\`npm test\`'s setup installs it)` };
  writeFileSync(join(app.root, "index.html"), `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module" src="./app.js"></script></head><body></body></html>`);
  const { chromium } = await import("playwright-core");
  const server = await serveStatic(app.root);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: TIMEOUT_MS });
  try {
    const page = await browser.newPage();
    const problems = [];
    let pageFailed;
    const failure = new Promise((resolve) => (pageFailed = resolve));
    page.on("pageerror", (error) => {
      problems.push(`page error: ${error.message}`);
      pageFailed("no answer");
    });
    page.on("console", (message) => message.type() === "error" && problems.push(`console error: ${message.text()}`));
    page.on("requestfailed", (request) => problems.push(`request failed: ${request.url()}`));
    await page.goto(`${server.origin}/index.html`, { timeout: TIMEOUT_MS });
    const answer = page
      .waitForFunction(() => document.body.dataset.ok, null, { timeout: TIMEOUT_MS })
      .then((handle) => handle.jsonValue())
      .catch((error) => `no answer (${error.message.split("\n")[0]})`);
    const ok = await Promise.race([answer, failure]);
    if (ok !== "true" || problems.length) throw new Error(`the bundled ${app.name ?? ""} browser app did not decide: ${[`answer ${ok}`, ...problems].join("; ")}`);
    const fetched = [];
    for (const path of server.served) {
      if (path === "/index.html") continue;
      const file = app.files.find(({ aliases }) => aliases.some((url) => `/${url}` === path));
      if (!file) throw new Error(`the page fetched ${path}, which the bench did not find in the build: it cannot be counted`);
      if (!fetched.includes(file)) fetched.push(file);
    }
    const add = (kind) => fetched.filter((file) => kind === undefined || file.kind === kind).reduce((total, file) => total + file.gzip, 0);
    return { ran: true, fetched, downloaded: { jsGzip: add("js"), wasmGzip: add("wasm"), total: add() } };
  } finally {
    await browser.close();
    await server.close();
  }
}
