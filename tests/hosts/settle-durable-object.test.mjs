// Settle on Durable Objects in real workerd (Miniflare), the scenarios of tests/settle/scenarios.mjs
// run inside the Worker: every call is a request to the ready object through rateLimiterClient,
// whose grant handle settles through the object's settle op; the object decides one request at a
// time, so concurrent settles of one grant refund once. The same object over storage whose reads
// wait on a timer (the input gate opens) refunds more than once.
import { workerdSettleSuite } from "../settle/workerd-suite.mjs";

workerdSettleSuite("settle on Durable Objects in workerd (Miniflare)", [
  { title: "SQLite-backed, token bucket", host: "do", kind: "token bucket", backend: "sqlite" },
  { title: "SQLite-backed, fixed window", host: "do", kind: "fixed window", backend: "sqlite" },
  { title: "key-value-backed, token bucket", host: "do", kind: "token bucket", backend: "kv" },
  { title: "key-value-backed, fixed window", host: "do", kind: "fixed window", backend: "kv" },
]);
