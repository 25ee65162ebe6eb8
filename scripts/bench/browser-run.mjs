// Runs the bundled browser app of ./browser-app.mjs in headless Chromium, so the bytes counted
// are those of an app that works: a static server on a free loopback port serves the bundle and
// the `.wasm` where the bundle fetches it; the page must decide (granted) without an error, and
// the server records what was fetched. Chromium is optional for `npm run bench` (only `npm test`
// installs it): without it the row says the app was not run.
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { dirname, extname, join, normalize, sep } from "node:path";
import { serveStatic } from "../../tests/packaging/static-server.mjs";

const CHROMIUM = "/usr/bin/chromium";
const TIMEOUT_MS = 30_000;
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

/**
 * @param {{ bundle: string, fetched: { url: string, path: string }[] }} app What measureBrowserApp returned.
 * @returns {Promise<{ ran: true, served: string[] } | { ran: false, reason: string }>} What the
 * page fetched, or why it was not run. Throws when the page ran and failed.
 * @example
 * const run = await runInChromium(app); // { ran: true, served: ["/index.html", "/app.js", "/wasm/ratebound_bg.wasm"] }
 */
export async function runInChromium(app) {
  if (!existsSync(CHROMIUM)) return { ran: false, reason: `no ${CHROMIUM} (\`npm test\`'s setup installs it)` };
  const root = dirname(app.bundle);
  for (const { url, path } of app.fetched) {
    if (join(root, url) === path) continue; // emitted by esbuild next to the bundle
    mkdirSync(dirname(join(root, url)), { recursive: true });
    copyFileSync(path, join(root, url));
  }
  writeFileSync(join(root, "index.html"), `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module" src="./app.js"></script></head><body></body></html>`);
  const { chromium } = await import("playwright-core");
  const server = await serveStatic(root);
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
    if (ok !== "true" || problems.length) throw new Error(`the bundled browser app did not decide: ${[`answer ${ok}`, ...problems].join("; ")}`);
    // The .wasm counted must be exactly what the page fetched.
    const servedWasm = new Set(server.served.filter((path) => path.endsWith(".wasm")).map((path) => app.fetched.find(({ url }) => join("/", url) === path)?.path ?? path));
    const counted = new Set(app.fetched.map(({ path }) => path));
    if (servedWasm.size !== counted.size || [...servedWasm].some((path) => !counted.has(path))) {
      throw new Error(`the app fetched ${[...servedWasm].join(", ") || "no .wasm"}, but the bench counted ${[...counted].join(", ")}`);
    }
    return { ran: true, served: server.served };
  } finally {
    await browser.close();
    await server.close();
  }
}
