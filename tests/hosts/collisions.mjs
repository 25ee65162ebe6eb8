// Refs that a storage key built by joining strings would mix up: every adapter must keep
// each one apart from all the others. Shared by the host suites (not a test file itself).

/**
 * Distinct `(name, key, shard)` triples, in groups that naive encodings collide:
 * separators inside names and keys, a missing key against `""`, a key that looks like a
 * shard, and unicode that normalises (or case-folds) to another.
 */
export const COLLIDING_REFS = [
  // "a:b" + "c" against "a" + "b:c", and the same with "/" and other separators
  { name: "a:b", key: "c", shard: 0 },
  { name: "a", key: "b:c", shard: 0 },
  { name: "a/b", key: "c", shard: 0 },
  { name: "a", key: "b/c", shard: 0 },
  { name: "a", key: "b", shard: 0 },
  { name: "a=b", key: "c", shard: 0 },
  { name: "a", key: "b=c", shard: 0 },
  { name: "a\u0000b", key: "c", shard: 0 },
  { name: 'a","b', key: "c", shard: 0 },
  { name: "a", key: '","b', shard: 0 },
  // no key (the shared state) against the empty key, and an empty name
  { name: "a", shard: 0 },
  { name: "a", key: "", shard: 0 },
  { name: "", shard: 0 },
  { name: "", key: "", shard: 0 },
  { name: "", key: "a", shard: 0 },
  // shards against keys that spell them
  { name: "a", shard: 1 },
  { name: "a", key: "1", shard: 0 },
  { name: "a:1", shard: 0 },
  { name: "a", key: "b", shard: 1 },
  { name: "a", key: "b:1", shard: 0 },
  { name: "a", key: "b", shard: 10 },
  { name: "a", key: "b1", shard: 0 },
  // unicode: composed and decomposed é, case, emoji, a right-to-left name
  { name: "caf\u00e9", key: "x", shard: 0 },
  { name: "cafe\u0301", key: "x", shard: 0 },
  { name: "CAF\u00c9", key: "x", shard: 0 },
  { name: "limit", key: "\u{1f600}", shard: 0 },
  { name: "limit", key: "\u{1f601}", shard: 0 },
  { name: "\u05e9\u05dc\u05d5\u05dd", key: "\u05e9", shard: 0 },
];

/** The state each ref gets in a collision test: its own index, so a mix-up shows which. */
export const stateFor = (index) => ({ value: index, ts: 1_000 + index });
