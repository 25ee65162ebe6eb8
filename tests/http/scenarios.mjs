// The guard's scenarios, runtime-neutral: Node runs them on Request objects, Deno behind
// Deno.serve and Bun behind Bun.serve (tests/http/runtime.mjs), each on loopback. They check
// with plain `expect` (no node:assert) and throw on the first failure, naming it.
// `lib` is `ratebound`, `http` is `ratebound/http`, `open(handler)` serves a fetch handler and
// resolves with `{ request(path, init), close() }`.

const MINUTE = 60_000;
export const START = 1_000_000; // an instant every scenario starts at (limiter clocks are injected)

export const ALGORITHMS = {
  "token bucket": { kind: "token bucket", rate: 3, period: MINUTE },
  "fixed window": { kind: "fixed window", rate: 3, period: MINUTE, start: 0 },
};

function expect(condition, message) {
  if (!condition) throw new Error(`expectation failed: ${message}`);
}

/** A limiter on a MemoryStore (or the store given) whose clock the test moves. */
function clocked(lib, limits, store = new lib.MemoryStore()) {
  const clock = { now: START };
  const limiter = new lib.RateLimiter(store, limits, { now: () => clock.now });
  return { clock, limiter };
}

/** A handler that sets the clock from `x-now`, guards, and answers the route (counting its calls). */
function guarded(guard, clock, routeCalls = { count: 0 }) {
  return async (request) => {
    clock.now = Number(request.headers.get("x-now") ?? clock.now);
    try {
      const { ok, headers, response } = await guard(request);
      if (!ok) return response;
      routeCalls.count += 1;
      return new Response("hello", { headers });
    } catch (error) {
      return new Response(JSON.stringify({ rejected: true, code: error?.code ?? null, message: String(error?.message ?? error) }), { status: 500 });
    }
  };
}

const at = (now, key) => ({ headers: { "x-now": String(now), ...(key === undefined ? {} : { "x-user": key }) } });
const byUser = (request) => request.headers.get("x-user") ?? undefined;

/** The draft-10 fields the core's figures give for `name` at `now`. */
export async function expectedFields(lib, limiter, names, key, now, retryAfter) {
  const policies = [];
  const limits = [];
  for (const name of names) {
    const figures = lib.rateLimitFigures(await limiter.getValue(name, { key }), now, retryAfter);
    policies.push(`"${name}";q=${figures.limit};w=${figures.window}`);
    limits.push(`"${name}";r=${figures.remaining};t=${figures.reset}`);
  }
  return { policy: policies.join(", "), limit: limits.join(", ") };
}

async function allowedCarryHeadersAndTheNextIsA429(lib, http, open, algorithm) {
  const { clock, limiter } = clocked(lib, { api: ALGORITHMS[algorithm] });
  const server = await open(guarded(http.httpGuard(limiter, "api", { key: byUser }), clock));
  try {
    for (let sent = 0; sent < 3; sent++) {
      const now = START + sent * 1_250;
      const response = await server.request("/", at(now, "ada"));
      expect(response.status === 200, `request ${sent + 1} of 3 is allowed (got ${response.status})`);
      expect((await response.text()) === "hello", "the route answered");
      const want = await expectedFields(lib, limiter, ["api"], "ada", now);
      expect(response.headers.get("ratelimit-policy") === want.policy, `RateLimit-Policy ${response.headers.get("ratelimit-policy")} is ${want.policy}`);
      expect(response.headers.get("ratelimit") === want.limit, `RateLimit ${response.headers.get("ratelimit")} is ${want.limit}`);
    }
    const now = START + 3_000;
    const refused = await server.request("/", at(now, "ada"));
    expect(refused.status === 429, `the fourth request is refused (got ${refused.status})`);
    const { retryAfter } = await limiter.check("api", { key: "ada" }); // the same wait: a refusal writes nothing
    const seconds = Number(refused.headers.get("retry-after"));
    expect(Number.isInteger(seconds) && seconds * 1000 >= retryAfter, `Retry-After ${seconds} s is never shorter than ${retryAfter} ms`);
    expect(seconds * 1000 < retryAfter + 1000, `Retry-After ${seconds} s is the wait rounded up, not more (${retryAfter} ms)`);
    const want = await expectedFields(lib, limiter, ["api"], "ada", now, retryAfter);
    expect(refused.headers.get("ratelimit") === want.limit, `the 429's RateLimit ${refused.headers.get("ratelimit")} is ${want.limit}`);
    const problem = await refused.json();
    expect(refused.headers.get("content-type") === "application/problem+json", "the 429 is a problem document");
    expect(problem.status === 429 && problem["violated-policies"].join() === "api", `the problem names the policy (${JSON.stringify(problem)})`);
  } finally {
    await server.close();
  }
}

async function keysAreIndependent(lib, http, open, algorithm) {
  const { clock, limiter } = clocked(lib, { api: ALGORITHMS[algorithm] });
  const server = await open(guarded(http.httpGuard(limiter, "api", { key: byUser }), clock));
  try {
    const statuses = [];
    for (let sent = 0; sent < 4; sent++) statuses.push((await server.request("/", at(START, "ada"))).status);
    expect(statuses.join() === "200,200,200,429", `ada is allowed 3 and refused the fourth (got ${statuses})`);
    const grace = await server.request("/", at(START, "grace"));
    expect(grace.status === 200, `grace, another key, is allowed (got ${grace.status})`);
    expect(/;r=2;/.test(grace.headers.get("ratelimit")), `grace has 2 left (got ${grace.headers.get("ratelimit")})`);
  } finally {
    await server.close();
  }
}

const down = () => Object.assign(new Error("the store is down"), { code: "STORE_DOWN" });
const throwingStore = () => {
  const error = down();
  return { error, store: { read() { throw error; }, write() { throw error; } } };
};

async function aThrowingStoreIsA503(lib, http, open) {
  const { error, store } = throwingStore();
  const { clock, limiter } = clocked(lib, { api: ALGORITHMS["token bucket"] }, store);
  const reported = [];
  const guard = http.httpGuard(limiter, "api", { key: byUser, onError: (caught, request) => reported.push([caught, request.url]) });
  const routeCalls = { count: 0 };
  const server = await open(guarded(guard, clock, routeCalls));
  try {
    const response = await server.request("/", at(START, "ada"));
    const body = await response.json();
    expect(response.status === 503, `the limiter failed closed: 503 (got ${response.status} ${JSON.stringify(body)})`);
    expect(response.headers.get("retry-after") === "5", `Retry-After is the default 5 s (got ${response.headers.get("retry-after")})`);
    expect(response.headers.get("content-type") === "application/problem+json" && body.status === 503 && body.title === "Service Unavailable", `a problem document (got ${JSON.stringify(body)})`);
    expect(!JSON.stringify(body).includes("the store is down"), "the store's error stays on the server");
    expect(reported.length === 1 && reported[0][0] === error && reported[0][1].endsWith("/"), `onError got the store's error and the request (got ${reported.length})`);
    expect(routeCalls.count === 0, "the route never ran");
  } finally {
    await server.close();
  }
  const configured = http.httpGuard(limiter, "api", { onError() {}, unavailableRetryAfter: 30, onUnavailable: ({ retryAfter, names }) => ({ error: "busy", retryAfter, names }) });
  const { ok, response } = await configured(new Request("http://127.0.0.1/"));
  expect(!ok && response.status === 503 && response.headers.get("retry-after") === "30", "Retry-After is configurable");
  const body = await response.json();
  expect(body.error === "busy" && body.retryAfter === 30 && body.names.join() === "api" && response.headers.get("content-type").startsWith("application/json"), `the body is configurable (got ${JSON.stringify(body)})`);
}

async function aDegradedAdmissionPassesUnderEveryHeaderFormat(lib, http) {
  for (const onStoreError of ["open", { fallback: "memory" }]) {
    for (const draft of ["draft-10", "draft-8", "draft-7", "draft-6", "none"]) {
      const { error, store } = throwingStore();
      const { limiter } = clocked(lib, { api: { ...ALGORITHMS["token bucket"], onStoreError } }, store);
      const reported = [];
      const guard = http.httpGuard(limiter, "api", { key: () => "ada", headers: draft, onError: (caught) => reported.push(caught) });
      const result = await guard(new Request("http://127.0.0.1/"));
      const policy = JSON.stringify(onStoreError);
      expect(result.ok === true, `${policy}, ${draft}: a degraded admission is an admission (got ${result.response?.status})`);
      expect(reported.length === 1 && reported[0] === error, `${policy}, ${draft}: the store's error still reaches onError`);
      const written = [...result.headers.keys()];
      expect(written.length === 0 || written.every((field) => field.startsWith("ratelimit")), `${policy}, ${draft}: no figures, or the fallback's (got ${written})`);
    }
  }
}

async function ipv6RotationWithinOneSubnetIsOneKey(lib, http, open) {
  const { clock, limiter } = clocked(lib, { login: { kind: "fixed window", rate: 5, period: MINUTE, start: 0 } });
  const byAddress = (request) => http.ipKey(request.headers.get("x-client-ip") ?? undefined);
  const server = await open(guarded(http.httpGuard(limiter, "login", { key: byAddress }), clock));
  try {
    const statuses = [];
    for (let host = 1; host <= 20; host++) {
      // 20 addresses of one /64, as any client can take from its own prefix.
      const address = `2001:db8:85a3:42:${host.toString(16)}:${(host * 7919).toString(16)}:0:1`;
      statuses.push((await server.request("/", { headers: { "x-now": String(START), "x-client-ip": address } })).status);
    }
    expect(statuses.filter((status) => status === 200).length === 5, `5 of 20 admitted (got ${statuses})`);
    const neighbour = await server.request("/", { headers: { "x-now": String(START), "x-client-ip": "2001:db8:85a3:142::1" } });
    expect(neighbour.status === 200, `another /56 is another client (got ${neighbour.status})`);
    const bad = await server.request("/", { headers: { "x-now": String(START), "x-client-ip": "203.0.113.7:443" } });
    expect(bad.status === 400 && bad.headers.get("content-type") === "application/problem+json", `an address that is not one is a 400 (got ${bad.status})`);
  } finally {
    await server.close();
  }
}

async function aLongKeyIsLimitedNotAnError(lib, http, open) {
  const { clock, limiter } = clocked(lib, { api: ALGORITHMS["token bucket"] });
  const server = await open(guarded(http.httpGuard(limiter, "api", { key: byUser }), clock));
  try {
    const long = "k".repeat(4_000); // past the core's 1,024 bytes
    const statuses = [];
    for (let sent = 0; sent < 4; sent++) statuses.push((await server.request("/", at(START, long))).status);
    expect(statuses.join() === "200,200,200,429", `a 4,000-byte key is limited like any other (got ${statuses})`);
    const other = await server.request("/", at(START, `${long}x`));
    expect(other.status === 200, `a key one character longer is another key (got ${other.status})`);
    const posing = await server.request("/", at(START, await http.storedKey(long)));
    expect(posing.status === 200, `a client sending the hash's text does not share its limit (got ${posing.status})`);
  } finally {
    await server.close();
  }
}

async function headerIntegersStayWithin15Digits(lib, http) {
  const { limiter } = clocked(lib, { bytes: { kind: "token bucket", rate: 1e15, period: 86_400_000 } });
  for (const draft of ["draft-10", "draft-8", "draft-7", "draft-6"]) {
    const { headers } = await http.httpGuard(limiter, "bytes", { headers: draft, count: () => 1 })(new Request("http://127.0.0.1/"));
    const digits = [...headers.values()].join(" ").match(/\d+/g) ?? [];
    expect(digits.every((number) => number.length <= 15), `${draft}: every integer has at most 15 digits (got ${[...headers]})`);
    expect([...headers.values()].join(" ").includes("999999999999999"), `${draft}: the quota is clamped to 999999999999999 (got ${[...headers]})`);
  }
}

async function refundSuccessfulCountsOnlyFailures(lib, http, open) {
  const { clock, limiter } = clocked(lib, { login: { kind: "fixed window", rate: 3, period: MINUTE, start: 0 } });
  const guard = http.httpGuard(limiter, "login", { key: byUser, refundSuccessful: true });
  const server = await open(async (request) => {
    clock.now = Number(request.headers.get("x-now"));
    const { ok, headers, response, finish } = await guard(request);
    if (!ok) return response;
    const answer = new Response(request.headers.get("x-password") === "right" ? "welcome" : "wrong password", { status: request.headers.get("x-password") === "right" ? 200 : 401, headers });
    await finish(answer);
    return answer;
  });
  const login = async (password) => (await server.request("/", { headers: { "x-now": String(START), "x-user": "ada", "x-password": password } })).status;
  try {
    const statuses = [];
    for (let attempt = 0; attempt < 10; attempt++) statuses.push(await login("right"));
    expect(statuses.every((status) => status === 200), `successful logins take nothing (got ${statuses})`);
    const guesses = [];
    for (let attempt = 0; attempt < 6; attempt++) guesses.push(await login("guess"));
    expect(guesses.join() === "401,401,401,429,429,429", `3 failures per window, then refused (got ${guesses})`);
    expect((await login("right")) === 429, "once refused, even the right password waits: the guess budget is spent");
  } finally {
    await server.close();
  }
}

async function severalLimitsAreOneHeaderAllOrNone(lib, http, open) {
  const limits = { api: ALGORITHMS["token bucket"], burst: { kind: "fixed window", rate: 2, period: 10_000, start: 0 } };
  const { clock, limiter } = clocked(lib, limits);
  const server = await open(guarded(http.httpGuard(limiter, ["api", "burst"], { key: byUser }), clock));
  try {
    for (let sent = 0; sent < 2; sent++) {
      const response = await server.request("/", at(START, "ada"));
      expect(response.status === 200, `request ${sent + 1} passes both limits`);
      const want = await expectedFields(lib, limiter, ["api", "burst"], "ada", START);
      expect(response.headers.get("ratelimit-policy") === want.policy, `one RateLimit-Policy with both policies: ${response.headers.get("ratelimit-policy")} is ${want.policy}`);
      expect(response.headers.get("ratelimit") === want.limit, `one RateLimit with both: ${response.headers.get("ratelimit")} is ${want.limit}`);
    }
    const before = await limiter.getValue("api", { key: "ada" });
    const refused = await server.request("/", at(START, "ada"));
    expect(refused.status === 429, `burst refuses the third (got ${refused.status})`);
    const after = await limiter.getValue("api", { key: "ada" });
    expect(after.value === before.value && after.ts === before.ts, `api was not consumed by the refused request (${before.value} then ${after.value})`);
    const problem = await refused.json();
    expect(problem["violated-policies"].join() === "burst", `only burst is named as violated (${problem["violated-policies"]})`);
    expect(/^"api";r=1;t=\d+, "burst";r=0;t=\d+$/.test(refused.headers.get("ratelimit")), `the 429 shows both (got ${refused.headers.get("ratelimit")})`);
  } finally {
    await server.close();
  }
}

async function everyDraftIsWritten(lib, http) {
  const { clock, limiter } = clocked(lib, { api: ALGORITHMS["token bucket"] });
  const seen = {};
  for (const draft of ["draft-8", "draft-7", "draft-6", "none"]) {
    const guard = http.httpGuard(limiter, "api", { key: () => `user-${draft}`, headers: draft });
    const { ok, headers } = await guard(new Request("http://127.0.0.1/"));
    expect(ok, `${draft}: allowed`);
    seen[draft] = Object.fromEntries(headers);
  }
  expect(/^"api"; q=3; w=60; pk=:[A-Za-z0-9+/]{16}:$/.test(seen["draft-8"]["ratelimit-policy"]), `draft-8 policy as express-rate-limit writes it (got ${seen["draft-8"]["ratelimit-policy"]})`);
  expect(seen["draft-8"].ratelimit === '"api"; r=2; t=20', `draft-8 RateLimit (got ${seen["draft-8"].ratelimit})`);
  expect(seen["draft-7"]["ratelimit-policy"] === "3;w=60" && seen["draft-7"].ratelimit === "limit=3, remaining=2, reset=20", `draft-7 (got ${JSON.stringify(seen["draft-7"])})`);
  const six = seen["draft-6"];
  expect(six["ratelimit-limit"] === "3" && six["ratelimit-remaining"] === "2" && six["ratelimit-reset"] === "20" && six["ratelimit-policy"] === "3;w=60", `draft-6 (got ${JSON.stringify(six)})`);
  expect(Object.keys(seen.none).length === 0, `none writes no header (got ${JSON.stringify(seen.none)})`);
}

/**
 * Runs every scenario; resolves with their names, rejects on the first failure.
 * @param {{ lib: any, http: any, open: (handler: (r: Request) => Promise<Response>) => Promise<{ request: (path: string, init?: RequestInit) => Promise<Response>, close: () => Promise<void> }> }} runtime
 */
export async function runScenarios({ lib, http, open }) {
  const passed = [];
  const run = async (name, scenario) => {
    try {
      await scenario();
    } catch (error) {
      throw new Error(`${name}: ${error?.message ?? error}`, { cause: error });
    }
    passed.push(name);
  };
  for (const algorithm of Object.keys(ALGORITHMS)) {
    await run(`${algorithm}: allowed requests carry the headers and the one past the limit is a 429`, () => allowedCarryHeadersAndTheNextIsA429(lib, http, open, algorithm));
    await run(`${algorithm}: keys are independent`, () => keysAreIndependent(lib, http, open, algorithm));
  }
  await run("a throwing store is a 503 with Retry-After and a problem document, its error to onError", () => aThrowingStoreIsA503(lib, http, open));
  await run("a degraded admission is admitted under every header format", () => aDegradedAdmissionPassesUnderEveryHeaderFormat(lib, http));
  await run("20 addresses of one IPv6 /64 against a limit of 5: 5 admitted", () => ipv6RotationWithinOneSubnetIsOneKey(lib, http, open));
  await run("a key past 1,024 bytes is limited under its hash, never an error", () => aLongKeyIsLimitedNotAnError(lib, http, open));
  await run("header integers stay within Structured Fields' 15 digits", () => headerIntegersStayWithin15Digits(lib, http));
  await run("refundSuccessful counts only the failed logins", () => refundSuccessfulCountsOnlyFailures(lib, http, open));
  await run("several limits give one header with a policy each, all consumed or none", () => severalLimitsAreOneHeaderAllOrNone(lib, http, open));
  await run("drafts 8, 7 and 6 are written as express-rate-limit writes them, and none writes nothing", () => everyDraftIsWritten(lib, http));
  return passed;
}

/** `open` for runtimes without a server here (Node): the handler called on Request objects. */
export async function openDirect(handler) {
  return {
    request: (path, init) => handler(new Request(`http://127.0.0.1${path}`, init)),
    close: async () => {},
  };
}
