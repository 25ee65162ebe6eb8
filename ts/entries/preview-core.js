// What `ratebound/preview` imports in browsers, in place of the whole package: the two pure calls
// a preview makes, on the shared core. When the app has loaded none (it imports only the
// preview), a tiny module of those two calls is compiled; an app that imports `ratebound` too
// compiles its module over it (ES modules share ./core/engine.js), in either order.
import { bytes } from "./wasm/ratebound-preview.bytes.js";
import { compileLatin1, core, useModule } from "./core/engine.js";
if (core === undefined) useModule(compileLatin1(bytes));
export { calculateRateLimit, decideRateLimit } from "./core/pure.js";
export { invalidArgument, wrongArgument } from "./core/errors.js";
export { ownOptions } from "./core/options.js";
