//! The offsets at `EXTRA` the exports of limits stored in the host read and
//! write (`src/wasm/limits.rs`), and where their records live, named once
//! here and generated into `ts/core/boundary.ts` with the buffer's layout.

#[cfg(not(target_arch = "wasm32"))]
use super::io::Section;

layout! { EXTRA_LIMITS: "EXTRA for limits stored in the host (offsets from EXTRA), and where their records live.";
    /// `rb_limit_encode` in: the limit's config in code (seven numbers).
    LIMIT_CODE = 0;
    /// `rb_limit_encode` in: the config to store, compiled (seven numbers).
    LIMIT_STORED = 8;
    /// `rb_limit_encode` out: its two records (value, ts each).
    LIMIT_WRITE = 16;
    /// `rb_limit_resolve` in: the key's two records (value, ts each; NaN value: none).
    LIMIT_KEY = 0;
    /// `rb_limit_resolve` in: the name's two records.
    LIMIT_NAME = 4;
    /// How many records one stored limit takes.
    LIMIT_RECORDS = crate::LIMIT_RECORDS as usize;
    /// The shard of a key's first record (its key's own limit).
    KEY_LIMIT_SHARD = crate::KEY_LIMIT_BASE as usize;
    /// The shard of a name's first record (the key none).
    NAME_LIMIT_SHARD = crate::NAME_LIMIT_BASE as usize;
}
