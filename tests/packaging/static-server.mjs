// A static file server on a free loopback port, shared by the packaging tests and the browser
// bench: it serves files under one root and records the paths it served.
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize, sep } from "node:path";

const MIME = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm", ".json": "application/json" };

/** A static file server for `root` on a free loopback port; records the paths it served. */
export async function serveStatic(root) {
  const served = [];
  const server = createServer(async (request, response) => {
    const { pathname } = new URL(request.url, "http://127.0.0.1");
    const path = normalize(join(root, decodeURIComponent(pathname)));
    if (!path.startsWith(root + sep) || request.method !== "GET") return response.writeHead(403).end();
    try {
      const body = await readFile(path);
      served.push(pathname);
      response.writeHead(200, { "content-type": MIME[extname(path)] ?? "application/octet-stream" }).end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${server.address().port}`,
    served,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(resolve);
    }),
  };
}
