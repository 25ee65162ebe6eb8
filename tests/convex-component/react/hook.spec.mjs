// ratebound/convex-component/react's useRateLimit, beyond the reference's published hook tests (run in
// ../published/): its projection is ratebound's core, it reads an asynchronous limit's config, and one
// getServerTime call puts retryAt in the browser's clock. convex/react is mocked, as the reference's
// tests mock it; the hook and the core are real.
import { act, renderHook } from "@testing-library/react";
import { useConvex, useQuery } from "convex/react";
import { useRateLimit } from "ratebound/convex-component/react";
import { useRateLimit as referenceUseRateLimit } from "rate-limiter-040/react";
import { afterEach, beforeEach, expect, test, vi } from "vitest";

vi.mock("convex/react", () => ({ useQuery: vi.fn(), useConvex: vi.fn() }));

const now = Date.UTC(2026, 0, 1);
const bucket = { kind: "token bucket", rate: 10, period: 60_000 }; // a token every 6 s
const getRateLimit = {};
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(now);
  vi.mocked(useConvex).mockReturnValue({ mutation: vi.fn().mockResolvedValue(now) });
});
afterEach(() => {
  vi.useRealTimers();
  vi.clearAllMocks();
});

test("the projection is ratebound's core: a stored ts ahead of the browser's clock neither mints nor burns tokens (the reference's burns 5 s worth)", () => {
  vi.mocked(useQuery).mockReturnValue({ value: 5, ts: now + 5000, shard: 0, config: bucket });
  const ours = renderHook(() => useRateLimit(getRateLimit)).result.current;
  const theirs = renderHook(() => referenceUseRateLimit(getRateLimit)).result.current;
  expect(ours.check(now, 0).value).toBe(5);
  expect(theirs.check(now, 0).value).toBeCloseTo(5 - 5000 / 6000, 9);
  // Both agree once the browser's clock has passed the stored ts.
  expect(ours.check(now + 11_000, 0).value).toBe(theirs.check(now + 11_000, 0).value);
});

test("an asynchronous limit's config (applyUpdates) projects as the same limit", () => {
  vi.mocked(useQuery).mockReturnValue({ value: 0, ts: now, shard: 0, config: { ...bucket, applyUpdates: "asynchronously" } });
  const { status, check } = renderHook(() => useRateLimit(getRateLimit)).result.current;
  expect(status).toEqual({ ok: false, retryAt: now + 6000 });
  expect(check(now + 6000, 1)).toMatchObject({ ok: true, value: 0 });
});

test("one getServerTime call measures the server 10 s ahead and puts retryAt in the browser's clock", async () => {
  const serverNow = now + 10_000;
  vi.mocked(useConvex).mockReturnValue({ mutation: vi.fn().mockResolvedValue(serverNow) });
  vi.mocked(useQuery).mockReturnValue({ value: 0, ts: serverNow, shard: 0, config: bucket });
  const getServerTimeMutation = {};
  const hook = renderHook(() => useRateLimit(getRateLimit, { getServerTimeMutation }));
  // Before the offset is known, the browser's clock is taken for the server's.
  expect(hook.result.current.status).toEqual({ ok: false, retryAt: now + 16_000 });
  await act(async () => {});
  expect(hook.result.current.status).toEqual({ ok: false, retryAt: now + 6000 });
  expect(useConvex().mutation).toHaveBeenCalledTimes(1);
});
