// The playground (examples/browser-preview) in a real browser: Debian's Chromium driven by
// playwright-core, on Playwright's fake clock so a wait of seconds takes no real time.
// Screenshots go to tests/artifacts/ (git-ignored); with UPDATE_SCREENSHOTS=1 docs/browser.md's
// docs/playground.png is written too.
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { startPlayground } from "../../scripts/playground.mjs";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const artifacts = fileURLToPath(new URL("../artifacts/", import.meta.url));
const docsScreenshot = fileURLToPath(new URL("../../docs/playground.png", import.meta.url));
/** The page's clock starts here (2025-01-01T12:00:00Z) and is paused a few seconds later. */
const START = Date.UTC(2025, 0, 1, 12, 0, 0);
const PAUSED_AT = START + 20_000;

let playground;
let browser;

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  playground = await startPlayground({ port: 0 });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
});

after(async () => {
  await browser?.close();
  await playground?.close();
});

/** Polls `condition` in Node (not in the page, whose timers are fake) until it holds; fails with `message`. */
async function until(condition, message, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting: ${message}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Opens the playground with `query` (form presets), the page clock installed at START and
 * paused at PAUSED_AT once the app is ready. Collects page errors for `expectNoErrors`.
 */
async function openPlayground(query = "") {
  const context = await browser.newContext({ viewport: { width: 900, height: 1000 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("console", (message) => message.type() === "error" && errors.push(message.text()));
  await page.clock.install({ time: START });
  await page.goto(`${playground.url}${query}`);
  await page.locator("body[data-ready=true]").waitFor();
  await page.clock.pauseAt(PAUSED_AT);
  const send = page.locator("#send");
  return {
    page,
    send,
    errors,
    close: () => context.close(),
    now: () => page.evaluate(() => Date.now()),
    retryAt: async () => Number(await send.getAttribute("data-retry-at")),
    count: (selector) => page.locator(selector).count(),
  };
}

/** Clicks "send" until the button is disabled (the preview refuses); returns how many clicks went through. */
async function clickUntilDisabled(send, atMost = 20) {
  for (let clicks = 0; clicks < atMost; clicks++) {
    if (await send.isDisabled()) return clicks;
    await send.click();
  }
  assert.fail(`still enabled after ${atMost} clicks`);
}

const countdownSeconds = (label) => {
  const match = /^retry in (\d+\.\d) s$/.exec(label.trim());
  assert.ok(match, `the disabled button shows a countdown (got ${JSON.stringify(label)})`);
  return Number(match[1]);
};

for (const kind of ["token bucket", "fixed window"]) {
  describe(`playground, ${kind}`, () => {
    it("disables send with a countdown once the preview refuses, and re-enables it when retryAt passes", async () => {
      const session = await openPlayground(`?kind=${encodeURIComponent(kind)}&rate=3&period=10000&capacity=3&shards=1`);
      const { page, send } = session;
      try {
        const admitted = await clickUntilDisabled(send);
        assert.equal(admitted, 3, "three clicks fill a capacity of 3, all at one paused instant");
        await until(async () => (await session.count(".event.admitted")) === 3, "three admitted requests in the log");
        assert.equal(await session.count(".event.refused"), 0, "throttled in the browser: the server refused nothing");
        assert.equal(await session.count("#chart .marker.admitted"), 3, "each admitted request is marked on the chart");

        assert.equal(await send.isDisabled(), true);
        const retryAt = await session.retryAt();
        const disabledAt = await session.now();
        assert.ok(retryAt > disabledAt, "retryAt is in the future");
        const firstCountdown = countdownSeconds(await send.textContent());
        assert.equal(firstCountdown, Math.ceil((retryAt - disabledAt) / 100) / 10);
        if (kind === "token bucket") assert.equal(firstCountdown, 3.4, "one token of 3 per 10 s takes 3.33 s");
        await page.screenshot({ path: `${artifacts}playground-${kind.replace(" ", "-")}-disabled.png`, fullPage: true });

        // Just before retryAt: still disabled, the countdown nearly done.
        const untilRetry = Math.ceil(retryAt - disabledAt);
        await page.clock.runFor(untilRetry - 1);
        await until(async () => countdownSeconds(await send.textContent()) <= 0.1, "the countdown runs down");
        assert.equal(await send.isDisabled(), true, "still disabled a millisecond before retryAt");

        // Past retryAt: the preview's one timer fires and the button comes back.
        await page.clock.runFor(1);
        await until(() => send.isEnabled(), "send is enabled again once retryAt has passed");
        assert.equal((await send.textContent()).trim(), "send");
        assert.ok((await session.now()) >= retryAt);

        await send.click();
        await until(async () => (await session.count(".event.admitted")) === 4, "the next click is sent and admitted");
        assert.deepEqual(session.errors, []);
      } finally {
        await session.close();
      }
    });

    it("with throttling off, the server refuses what the preview predicted, and the chart marks it", async () => {
      const session = await openPlayground(`?kind=${encodeURIComponent(kind)}&rate=3&period=10000&capacity=3`);
      const { page, send } = session;
      try {
        await page.locator("#throttle").uncheck();
        for (let click = 0; click < 5; click++) await send.click();
        await until(async () => (await session.count(".event")) === 5, "five decisions in the log");
        assert.equal(await session.count(".event.admitted"), 3);
        assert.equal(await session.count(".event.refused"), 2);
        assert.equal(await session.count("#chart .marker.admitted"), 3);
        assert.equal(await session.count("#chart .marker.refused"), 2);
        assert.equal(await send.isEnabled(), true, "nothing throttles the button");

        // The preview's retryAt is the server refusal's time plus its retryAfter.
        const refusal = page.locator(".event.refused").first();
        const refusedAt = Number(await refusal.getAttribute("data-at"));
        const retryAfter = Number(await refusal.getAttribute("data-retry-after"));
        assert.ok(retryAfter > 0);
        assert.equal(await session.retryAt(), refusedAt + retryAfter);
        assert.match(await page.locator("#preview-status").textContent(), /refused until/);
        assert.deepEqual(session.errors, []);
      } finally {
        await session.close();
      }
    });
  });
}

describe("playground, holding send down", () => {
  it("sends at the limit's pace while held, never a request the server refuses, and stops on release", async () => {
    const session = await openPlayground("?kind=token+bucket&rate=3&period=10000&capacity=3");
    const { page, send } = session;
    const totals = async () => ({
      admitted: Number(await page.locator("#events").getAttribute("data-admitted")),
      refused: Number(await page.locator("#events").getAttribute("data-refused")),
    });
    try {
      const box = await send.boundingBox();
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.down();
      for (let second = 0; second < 20; second++) await page.clock.runFor(1_000);
      await page.mouse.up();
      await until(async () => (await totals()).admitted >= 8, "the held button kept sending as tokens arrived");
      const held = await totals();
      // 3 at once, then one every 3.33 s for 20 s: 9 in all (8 if the last lands just after).
      assert.ok(held.admitted <= 9, `no more than the limit allows (${held.admitted})`);
      assert.equal(held.refused, 0, "the preview held back every request the server would refuse");

      for (let second = 0; second < 10; second++) await page.clock.runFor(1_000);
      await page.clock.runFor(1);
      assert.deepEqual(await totals(), held, "nothing is sent after release");
      assert.deepEqual(session.errors, []);
    } finally {
      await session.close();
    }
  });
});

describe("playground, reservations", () => {
  it("shows the debt going negative and when the reserved request may run", async () => {
    const session = await openPlayground("?kind=token+bucket&rate=3&period=10000&capacity=3");
    const { page, send } = session;
    try {
      await page.locator("#reserve").check();
      for (let click = 0; click < 5; click++) await send.click();
      await until(async () => (await session.count(".event")) === 5, "five decisions in the log");
      assert.equal(await session.count(".event.admitted"), 3);
      assert.equal(await session.count(".event.reserved"), 2);
      assert.equal(await send.isEnabled(), true, "a reservation is granted, so send stays enabled");

      const lastReservation = page.locator(".event.reserved").first();
      assert.match(await lastReservation.textContent(), /reserved: value -2, may run at t\+\S+ s \(in 6\.67 s\)/);
      assert.equal(await session.count("#chart .marker.reserved .run-at"), 2, "each reservation's run time is drawn");

      await page.clock.runFor(200); // a chart sample or two
      await until(async () => /^-1\.9\d tokens$/.test(await page.locator("#server-value").textContent()), "the server value is negative");
      assert.match(await page.locator("#server-value").getAttribute("class"), /negative/);
      assert.equal(await session.count("#chart .debt"), 1, "the chart shades the debt below zero");
      assert.deepEqual(session.errors, []);
    } finally {
      await session.close();
    }
  });
});

describe("playground, screenshot", () => {
  it("records a session with admitted, refused and reserved requests and a disabled button", async () => {
    const session = await openPlayground("?kind=token+bucket&rate=3&period=10000&capacity=3");
    const { page, send } = session;
    try {
      await page.locator("#throttle").uncheck();
      const clicksAt = [0, 300, 600, 900, 1_200, 3_800, 4_000, 7_500, 7_700, 11_000];
      let elapsed = 0;
      for (const at of clicksAt) {
        await page.clock.runFor(at - elapsed);
        elapsed = at;
        await send.click();
      }
      await page.locator("#reserve").check();
      await page.clock.runFor(2_500);
      for (let click = 0; click < 3; click++) await send.click();
      await page.locator("#reserve").uncheck();
      await page.locator("#throttle").check();
      await page.clock.runFor(1_500);
      await until(() => send.isDisabled(), "in debt, the preview refuses");
      countdownSeconds(await send.textContent());
      assert.ok((await session.count("#chart .marker.refused")) >= 1);
      assert.ok((await session.count("#chart .marker.reserved")) >= 1);
      const path = `${artifacts}playground.png`;
      await page.screenshot({ path, fullPage: true });
      if (process.env.UPDATE_SCREENSHOTS === "1") copyFileSync(path, docsScreenshot);
      assert.deepEqual(session.errors, []);
    } finally {
      await session.close();
    }
  });
});
