#!/usr/bin/env node
// npm run playground: bundles examples/browser-preview (React + the built
// package in pkg/) with esbuild and serves it on 127.0.0.1, printing the URL.
//
//   node scripts/playground.mjs [--port N]     (default 4173; a free port if taken; 0: any)
//
// The page loads `ratebound`, `ratebound/preview` and `ratebound/react` from
// pkg/dist as a user's bundler would (the "browser" condition), and fetches
// the one .wasm from /wasm/ratebound.wasm, next to the bundle.
// `startPlayground()` is also what tests/browser/playground.test.mjs runs.
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const exampleDir = join(root, "examples", "browser-preview");
const distDir = join(root, "pkg", "dist");

/** The package's entries by import specifier, as its exports map gives them to a browser bundler. */
const ENTRIES = { ratebound: "browser.js", "ratebound/preview": "preview.js", "ratebound/react": "react.js" };

/** Resolves `ratebound` and its subpaths to pkg/dist, so every import shares one core. */
const packageByName = {
  name: "ratebound-from-pkg",
  setup(builder) {
    builder.onResolve({ filter: /^ratebound(\/.*)?$/ }, (args) => {
      const file = ENTRIES[args.path];
      if (!file) return { errors: [{ text: `ratebound has no entry ${JSON.stringify(args.path)} in the playground` }] };
      return { path: join(distDir, file) };
    });
  },
};

/**
 * Bundles the playground's app: one ES module with React, the app and the package.
 * @returns {Promise<Uint8Array>} The bundle's bytes.
 */
export async function bundlePlayground() {
  const result = await build({
    entryPoints: [join(exampleDir, "app.jsx")],
    outfile: "app.js",
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    target: "es2022",
    conditions: ["browser"],
    jsx: "automatic",
    define: { "process.env.NODE_ENV": '"production"' },
    plugins: [packageByName],
    logLevel: "warning",
  });
  return result.outputFiles[0].contents;
}

/**
 * Builds the bundle and serves the playground until `close()`.
 *
 * @param {{ port?: number, host?: string }} options Port 0 picks a free one.
 * @returns {Promise<{ url: string, close: () => Promise<void> }>}
 */
export async function startPlayground({ port = 0, host = "127.0.0.1" } = {}) {
  if (!existsSync(join(distDir, "browser.js")) || !existsSync(join(distDir, "react.js"))) {
    throw new Error("pkg/ is not built (or predates ratebound/react): run `node scripts/build.mjs` first");
  }
  // Everything is read once, so a rebuild of pkg/ while the server runs cannot tear a page load.
  const files = {
    "/": { type: "text/html; charset=utf-8", body: readFileSync(join(exampleDir, "index.html")) },
    "/app.js": { type: "text/javascript; charset=utf-8", body: await bundlePlayground() },
    "/wasm/ratebound.wasm": { type: "application/wasm", body: readFileSync(join(distDir, "wasm", "ratebound.wasm")) },
  };
  files["/index.html"] = files["/"];

  const server = createServer((request, response) => {
    const { pathname } = new URL(request.url ?? "/", "http://playground");
    const file = files[pathname];
    if (!file || (request.method !== "GET" && request.method !== "HEAD")) {
      response.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("not found\n");
      return;
    }
    response.writeHead(200, { "content-type": file.type, "content-length": file.body.byteLength, "cache-control": "no-store" });
    response.end(request.method === "HEAD" ? undefined : file.body);
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port: bound } = server.address();
  return {
    url: `http://${host}:${bound}/`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const at = process.argv.indexOf("--port");
  const wanted = at === -1 ? 4173 : Number(process.argv[at + 1]);
  if (!Number.isInteger(wanted) || wanted < 0 || wanted > 65535) {
    console.error("usage: node scripts/playground.mjs [--port N]");
    process.exit(2);
  }
  let playground;
  try {
    playground = await startPlayground({ port: wanted });
  } catch (error) {
    if (error.code !== "EADDRINUSE" || at !== -1) throw error;
    playground = await startPlayground({ port: 0 }); // the default port is taken: any free one
  }
  console.log(`ratebound playground: ${playground.url}  (Ctrl-C to stop)`);
  const stop = () => playground.close().then(() => process.exit(0));
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
