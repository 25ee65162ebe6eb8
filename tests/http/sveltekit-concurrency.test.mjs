// sveltekitRateLimit on a concurrency limit in a real SvelteKit 2 app (the example's config, its own
// hooks and routes, written here), built with `vite build` and served by `vite preview` on loopback:
// one request in flight per `user`; the slot comes back when the response is sent, when the handler
// throws, and when the client aborts while the handler still runs (SvelteKit's request signal,
// which its Node server aborts when the socket closes). The build takes about 20 s here.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../redis/servers.mjs";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const vite = join(repo, "node_modules", "vite", "bin", "vite.js");
const PACKAGES = ["@sveltejs/kit", "@sveltejs/vite-plugin-svelte", "svelte", "vite"];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const until = async (what, check) => {
  for (let tries = 0; tries < 300; tries++) {
    if (await check()) return;
    await sleep(10);
  }
  throw new Error(`never: ${what}`);
};

const FILES = {
  "src/hooks.server.js": `
import { MemoryStore, RateLimiter } from "ratebound";
import { sveltekitRateLimit } from "ratebound/http";
export const limiter = (globalThis.inflightLimiter ??= new RateLimiter(new MemoryStore(), { inflight: { kind: "concurrency", max: 1, lease: 60_000 } }));
const guard = sveltekitRateLimit(limiter, "inflight", { key: (event) => event.url.searchParams.get("user") ?? "none" });
export const handle = ({ event, resolve }) => (event.url.pathname.startsWith("/g/") ? guard({ event, resolve }) : resolve(event));
`,
  "src/routes/g/hold/+server.js": `
export async function GET() {
  await new Promise((resolve) => (globalThis.held ??= []).push(resolve));
  return new Response("done");
}
`,
  "src/routes/g/boom/+server.js": `export function GET() { throw new Error("the handler failed"); }\n`,
  "src/routes/g/ok/+server.js": `export function GET() { return new Response("ok"); }\n`,
  "src/routes/held/+server.js": `export function GET() { return new Response(String((globalThis.held ?? []).length)); }\n`,
  "src/routes/release/+server.js": `export function GET() { globalThis.held?.pop()?.(); return new Response("released"); }\n`,
  "src/routes/free/+server.js": `
import { limiter } from "../../hooks.server.js";
export async function GET({ url }) {
  const answer = await limiter.limit("inflight", { key: url.searchParams.get("user") });
  if (answer.ok) await answer.lease.release();
  return new Response(String(answer.ok));
}
`,
};

describe("sveltekitRateLimit on a concurrency limit: a SvelteKit app built with vite build, served by vite preview", () => {
  let dir;
  let preview;
  let base;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "ratebound-sveltekit-inflight-"));
    for (const file of ["package.json", "svelte.config.js", "vite.config.js", "src/app.html"]) cpSync(join(repo, "examples", "http", "sveltekit", file), join(dir, file));
    for (const [file, text] of Object.entries(FILES)) {
      mkdirSync(join(dir, file, ".."), { recursive: true });
      writeFileSync(join(dir, file), text);
    }
    mkdirSync(join(dir, "node_modules", "@sveltejs"), { recursive: true });
    cpSync(join(repo, "pkg"), join(dir, "node_modules", "ratebound"), { recursive: true });
    for (const name of PACKAGES) symlinkSync(join(repo, "node_modules", name), join(dir, "node_modules", name), "dir");
    const built = spawnSync(process.execPath, [vite, "build"], { cwd: dir, encoding: "utf8", timeout: 180_000 });
    assert.equal(built.status, 0, `vite build: ${built.stdout}${built.stderr}`);
    const port = await freePort();
    preview = spawn(process.execPath, [vite, "preview", "--host", "127.0.0.1", "--port", String(port), "--strictPort"], { cwd: dir, detached: true, stdio: "ignore" });
    base = `http://127.0.0.1:${port}`;
    await until("vite preview answers", () => fetch(`${base}/held`).then((response) => response.ok, () => false));
  });
  after(() => {
    if (preview?.exitCode === null) process.kill(-preview.pid, "SIGKILL");
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  const text = async (path) => (await fetch(`${base}${path}`)).text();
  const held = async () => Number(await text("/held"));
  const free = async (user) => (await text(`/free?user=${user}`)) === "true";

  test("a second request while one is in flight is refused; the slot is back when the first response is sent", async () => {
    const first = fetch(`${base}/g/hold?user=a`);
    await until("the first request is in its handler", async () => (await held()) === 1);
    assert.equal((await fetch(`${base}/g/ok?user=a`)).status, 429);
    assert.equal((await fetch(`${base}/g/ok?user=b`)).status, 200, "another key has its own slots");
    await text("/release");
    assert.equal((await first).status, 200);
    await until("the slot is back", () => free("a"));
    assert.equal((await fetch(`${base}/g/ok?user=a`)).status, 200);
  });

  test("a handler that throws (a 500) gives the slot back", async () => {
    assert.equal((await fetch(`${base}/g/boom?user=c`)).status, 500);
    await until("the slot is back", () => free("c"));
  });

  test("a client that aborts before the answer gives the slot back while the handler still runs", async () => {
    const controller = new AbortController();
    const aborted = fetch(`${base}/g/hold?user=d`, { signal: controller.signal }).catch((error) => error.name);
    await until("the request is in its handler", async () => (await held()) === 1);
    assert.equal(await free("d"), false, "held while in flight");
    controller.abort();
    assert.equal(await aborted, "AbortError");
    await until("the slot is back after the socket closed", () => free("d"));
    await text("/release");
  });
});
