/**
 * Keys from the internet, made storable: a key a client controls may be any
 * length, and the core takes keys of at most 1,024 UTF-8 bytes. The guard
 * limits a long key under its SHA-256 instead of failing the request, so an
 * over-long header value is limited like any other key.
 * @module
 */

/** Keys longer than this many UTF-8 bytes are limited under their SHA-256. */
export const MAX_PLAIN_KEY_BYTES = 128;

/** What a hashed key begins with; a client's key that begins with it is hashed too, so none can pose as another's hash. */
export const HASHED_KEY_PREFIX = "sha256:";

const encoder = new TextEncoder();

/** base64url without padding: 43 characters for 32 bytes. */
function base64url(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/**
 * The key a guard limits a request under: the key itself when it is at most
 * {@link MAX_PLAIN_KEY_BYTES} UTF-8 bytes long and does not begin with
 * `sha256:`, else `sha256:` and the base64url SHA-256 of its UTF-8 bytes
 * (Web Crypto, the same in every runtime). A key with a lone surrogate
 * (which the core refuses as a key, and which a client can send in JSON as
 * `"\ud800"`) is hashed too, over its WTF-8 bytes: UTF-8 where the key is
 * well-formed, three bytes for each lone surrogate, so no two keys hash the
 * same input. Distinct keys stay distinct (up to SHA-256 collisions). Use it
 * to reach a guarded key's state yourself.
 *
 * @param key The key `options.key(request)` gave.
 * @returns The key the limit is stored under.
 * @example
 * await storedKey("ada");              // "ada"
 * await storedKey("x".repeat(5000));   // "sha256:…" (50 characters)
 * await limiter.reset("login", { key: await storedKey(username) });
 */
export async function storedKey(key: string): Promise<string> {
  if (!key.startsWith(HASHED_KEY_PREFIX) && wellFormed(key) && !tooLong(key)) return key;
  const digest = await crypto.subtle.digest("SHA-256", wtf8(key));
  return HASHED_KEY_PREFIX + base64url(new Uint8Array(digest));
}

/** Whether a key is over {@link MAX_PLAIN_KEY_BYTES} UTF-8 bytes; encoded only when its length leaves it open (1 to 3 bytes per UTF-16 unit). */
function tooLong(key: string): boolean {
  if (key.length * 3 <= MAX_PLAIN_KEY_BYTES) return false;
  if (key.length > MAX_PLAIN_KEY_BYTES) return true;
  return encoder.encode(key).length > MAX_PLAIN_KEY_BYTES;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether UTF-8 carries the key as it is (no lone surrogate): one that does not is hashed, which the core then accepts. */
function wellFormed(key: string): boolean {
  return !LONE_SURROGATE.test(key);
}

/**
 * The key's WTF-8 bytes: its UTF-8 when it is well-formed; else each lone surrogate as the three
 * bytes UTF-8 would give its code point (`ED A0 80`–`ED BF BF`), which no well-formed text contains.
 * Lossless, so two keys never hash the same bytes (`TextEncoder` writes every lone surrogate as
 * U+FFFD: `"\ud800"` and `"\udc00"` were one key).
 */
function wtf8(key: string): BufferSource {
  if (wellFormed(key)) return encoder.encode(key);
  const bytes: number[] = [];
  for (const character of key) {
    const code = character.codePointAt(0)!;
    if (code >= 0xd800 && code <= 0xdfff) bytes.push(0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f));
    else for (const byte of encoder.encode(character)) bytes.push(byte);
  }
  return new Uint8Array(bytes);
}
