// Type-level only, checked by tests/hosts/types.test.mjs with Deno's own declarations: both Deno KV
// clients satisfy ratebound/deno-kv's structural KvLike, so either can be handed to kvTransaction.
import type { Kv as NodeKv } from "@deno/kv";
import type { KvLike } from "ratebound/deno-kv";

declare const denoKv: Deno.Kv;
declare const nodeKv: NodeKv;

export const fromDeno: KvLike = denoKv;
export const fromNode: KvLike = nodeKv;
