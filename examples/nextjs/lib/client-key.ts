import { ipKey } from "ratebound/http";

/**
 * The rate-limit key of the client: its address as the platform in front of the app reports it
 * (Vercel and most proxies set X-Forwarded-For, the client's address first), an IPv6 one by its
 * /56. Served by `next start` with nothing in front, the header is the client's own to set: put
 * a proxy that overwrites it in front of the app.
 */
export function clientKey(request: Request): string {
  return ipKey(request.headers.get("x-forwarded-for")?.split(",")[0]?.trim());
}
