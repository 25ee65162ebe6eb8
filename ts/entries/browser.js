// Browsers and bundlers: the small .wasm (no grants) inlined (one character a byte), compiled synchronously: no
// second request, no top-level await. The full one (grants) is fetched by URL on the first grant:
// a URL, not an import, so that no bundler inlines it into an app that never takes a grant
// (Vite, webpack and Parcel emit the file the URL names; an esbuild app serves
// dist/wasm/ratebound.wasm as wasm/ratebound.wasm beside its bundle, see docs/browser.md).
import { bytes as lite } from "./wasm/ratebound-lite.bytes.js";
import { compileLatin1, useModule } from "./core/engine.js";
useModule(compileLatin1(lite), async () => {
  let url = "./wasm/ratebound.wasm"; // (an IIFE bundle has no import.meta.url: the error below says so)
  try {
    // This very pattern, a literal in `new URL(…, import.meta.url)`, is what bundlers emit as an asset.
    url = new URL("./wasm/ratebound.wasm", import.meta.url);
    // A page loads it with fetch; Node (tests that import this entry) reads the file.
    const fs = url.protocol === "file:" ? globalThis.process?.getBuiltinModule?.("fs") : undefined;
    const bytes = fs ? fs.readFileSync(url) : await fetch(url).then((response) => (response.ok ? response.arrayBuffer() : Promise.reject(new Error(`HTTP ${response.status}`))));
    return await WebAssembly.compile(bytes);
  } catch (error) {
    throw new Error(`ratebound: a grant needs the full module, which could not be loaded from ${url} (${error?.message ?? error}): serve the package's dist/wasm/ratebound.wasm there`, { cause: error });
  }
});
export * from "./index.js";
