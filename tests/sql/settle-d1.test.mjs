// Settle on Cloudflare D1 in real workerd (Miniflare), the scenarios of tests/settle/scenarios.mjs
// run inside the Worker: each settle is one batch that re-checks every state it read, so
// concurrent settles of one grant refund once; through d1Store's bare read and write, more than once.
import { workerdSettleSuite } from "../settle/workerd-suite.mjs";

workerdSettleSuite("settle on Cloudflare D1 in workerd (Miniflare)", [
  { title: "token bucket", host: "d1", kind: "token bucket" },
  { title: "fixed window", host: "d1", kind: "fixed window" },
]);
