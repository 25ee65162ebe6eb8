/**
 * A client's address as a rate-limit key: {@link ipKey}. IPv4 addresses are
 * keys as they are; an IPv6 address is cut to its network (a /56 by
 * default), because one subscriber gets a whole /64 or more for free and can
 * send every request from a new address of it. Pure string work, the same in
 * every runtime (no `node:net`).
 * @module
 */
import { HttpGuardError } from "./errors.js";

/** Options of {@link ipKey}. */
export interface IpKeyOptions {
  /**
   * How many leading bits of an IPv6 address make the key: an integer from 1
   * to 128. Default 56, as express-rate-limit: ISPs hand a subscriber a /48
   * to a /64, so 56 groups most subscribers alone; 64 is one home network,
   * 48 is stricter; 128 keys each address on its own (rotation bypasses it).
   */
  ipv6Subnet?: number;
}

const DEFAULT_IPV6_SUBNET = 56;
const IPV4 = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

function badAddress(address: unknown): HttpGuardError {
  if (typeof address !== "string") {
    return new HttpGuardError("HTTP_GUARD_IP", `ratebound/http: ipKey got no address (${String(address)}): a closed connection, or a proxy header that is missing`);
  }
  const shown = JSON.stringify(address.length > 64 ? `${address.slice(0, 64)}…` : address);
  return new HttpGuardError("HTTP_GUARD_IP", `ratebound/http: ipKey needs an IPv4 or IPv6 address, without port or brackets (got ${shown})`);
}

/** The four bytes of a dotted-quad IPv4 address (no leading zeros, as Node's `isIPv4`), or `undefined`. */
function ipv4Bytes(text: string): number[] | undefined {
  return IPV4.test(text) ? text.split(".").map(Number) : undefined;
}

/** The eight 16-bit groups of an IPv6 address (zone already removed), or `undefined` when it is not one. */
function ipv6Groups(text: string): number[] | undefined {
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const parse = (half: string): number[] | undefined => {
    if (half === "") return [];
    const groups: number[] = [];
    const parts = half.split(":");
    for (const [index, part] of parts.entries()) {
      if (HEX_GROUP.test(part)) {
        groups.push(parseInt(part, 16));
        continue;
      }
      // A dotted IPv4 tail: only as the last part of the address.
      const bytes = index === parts.length - 1 ? ipv4Bytes(part) : undefined;
      if (bytes === undefined) return undefined;
      groups.push((bytes[0]! << 8) | bytes[1]!, (bytes[2]! << 8) | bytes[3]!);
    }
    return groups;
  };
  const head = parse(halves[0]!);
  if (head === undefined) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  if (halves[0]!.includes(".")) return undefined; // an IPv4 tail before "::"
  const tail = parse(halves[1]!);
  if (tail === undefined || head.length + tail.length > 7) return undefined;
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** RFC 5952 text of eight groups: lowercase, no leading zeros, the longest run of two or more zero groups as `::` (the first of equals). */
function ipv6Text(groups: readonly number[]): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let start = 0; start < 8; ) {
    if (groups[start] !== 0) {
      start += 1;
      continue;
    }
    let end = start;
    while (end < 8 && groups[end] === 0) end += 1;
    if (end - start > bestLength) [bestStart, bestLength] = [start, end - start];
    start = end;
  }
  const hex = groups.map((group) => group.toString(16));
  if (bestStart < 0) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLength).join(":")}`;
}

/**
 * The rate-limit key of a client's address: an IPv4 address as it is, an
 * IPv4-mapped IPv6 address (`::ffff:203.0.113.7`, as dual-stack servers
 * report IPv4 clients) as that IPv4 address, and any other IPv6 address as
 * its network, `prefix/bits` in RFC 5952 form (`2001:db8:1234:5600::/56`),
 * the form express-rate-limit's `ipKeyGenerator` gives. A zone (`%eth0`) is
 * dropped. Pass the address your framework trusts (Express's `req.ip` with
 * `trust proxy` set to your proxies, not `true`; see docs/http.md on proxies).
 *
 * @param address The client's address.
 * @param options `ipv6Subnet`: the IPv6 prefix length, 1 to 128 (default 56).
 * @returns The key.
 * @throws {HttpGuardError} `HTTP_GUARD_IP` when `address` is not an IPv4 or IPv6 address
 *   (a guard answers that request with 400); `HTTP_GUARD_CONFIG` for a bad `ipv6Subnet`.
 * @example
 * ipKey("203.0.113.7");                      // "203.0.113.7"
 * ipKey("::ffff:203.0.113.7");               // "203.0.113.7"
 * ipKey("2001:db8:1234:5678:9abc::1");       // "2001:db8:1234:5600::/56"
 * ipKey("2001:db8:1234:5678::1", { ipv6Subnet: 64 }); // "2001:db8:1234:5678::/64"
 * app.post("/login", expressRateLimit(limiter, "login", { key: (req) => ipKey(req.ip) }), login);
 */
export function ipKey(address: string | undefined, options: IpKeyOptions = {}): string {
  const subnet = typeof options === "object" && options !== null && Object.hasOwn(options, "ipv6Subnet") ? options.ipv6Subnet : undefined;
  const bits = subnet === undefined ? DEFAULT_IPV6_SUBNET : subnet;
  if (!(Number.isInteger(bits) && bits >= 1 && bits <= 128)) {
    throw new HttpGuardError("HTTP_GUARD_CONFIG", `ratebound/http: ipKey's ipv6Subnet must be an integer from 1 to 128 (got ${String(subnet)})`);
  }
  if (typeof address !== "string") throw badAddress(address);
  if (address.length > 64) throw badAddress(address);
  if (ipv4Bytes(address) !== undefined) return address;
  const zone = address.indexOf("%");
  if (zone === 0 || zone === address.length - 1) throw badAddress(address);
  const groups = ipv6Groups(zone < 0 ? address : address.slice(0, zone));
  if (groups === undefined) throw badAddress(address);
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join(".");
  }
  const masked = groups.map((group, index) => {
    const kept = Math.min(16, Math.max(0, bits - index * 16));
    return kept === 0 ? 0 : group & ((0xffff << (16 - kept)) & 0xffff);
  });
  return `${ipv6Text(masked)}/${bits}`;
}
