//! The boundary from one source: writes the buffer's layout ([`io`]'s named
//! offsets) and the core's error tables (`src/error.rs`) as the package's
//! TypeScript module `ts/core/boundary.ts`, which the package's files import
//! instead of repeating the numbers. `scripts/build.mjs` runs it (`cargo run
//! --bin boundary -- --write`) before compiling the TypeScript, and a test
//! here fails while the checked-in file differs from what it writes.

use super::io::SECTIONS;
use crate::calendar::CalendarUnit;
use crate::error::{Error, Field, Rule, Wording};

/// Where the module lives, from the crate's root.
pub const PATH: &str = "ts/core/boundary.ts";

/// A string as a TypeScript literal.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for char in text.chars() {
        match char {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            _ => out.push(char),
        }
    }
    out.push('"');
    out
}

fn list<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let items: Vec<String> = items.map(quoted).collect();
    format!("[\n  {},\n] as const", items.join(",\n  "))
}

/// The module's text.
pub fn typescript() -> String {
    let mut out = String::from(
        "// Generated from src/wasm/io.rs (the buffer's layout) and src/error.rs (the core's error tables)\n\
         // by src/wasm/boundary.rs, which scripts/build.mjs runs: do not edit. `cargo test` fails while\n\
         // this file differs from what the Rust side writes (`cargo run --bin boundary -- --write`).\n\
         /**\n \
         * The WebAssembly boundary's numbers: where each record and field sits in the shared buffer of\n \
         * `f64`s (indexes, not bytes), and the tables that word the core's errors (`ts/core/errors.ts`).\n \
         * @module\n */\n",
    );
    for section in SECTIONS {
        out.push_str(&format!("\n// {}\n", section.title));
        for (name, value, doc) in section.names {
            out.push_str(&format!("/** {} */\nexport const {name} = {value};\n", doc.trim()));
        }
    }
    out.push_str("\n// The core's errors (src/error.rs): each table by number, 0 for none.\n");
    out.push_str(&format!("/** The codes (`Error::number`). */\nexport const CODES = {};\n", list(Error::CODES.iter().copied())));
    let fields = core::iter::once("").chain(Field::ALL.iter().map(|field| field.name()));
    out.push_str(&format!("/** The fields (`Field`), as messages and `error.field` name them. */\nexport const FIELDS = {};\n", list(fields)));
    let phrase = |rule: &Rule| match rule.wording() {
        Wording::MustBe(phrase) => phrase,
        Wording::Sentence(_) => "",
    };
    let sentence = |rule: &Rule| match rule.wording() {
        Wording::MustBe(_) => "",
        Wording::Sentence(sentence) => sentence,
    };
    let rules = core::iter::once("").chain(Rule::ALL.iter().map(phrase));
    out.push_str(&format!("/** The rules (`Rule`) a message words as \"{{field}} must be {{rule}} (got …)\" (\"\": a sentence). */\nexport const RULES = {};\n", list(rules)));
    let sentences = core::iter::once("").chain(Rule::ALL.iter().map(sentence));
    out.push_str(&format!("/** The rules a message words whole, the error's numbers as {{0}}, {{1}}, {{2}} (\"\": a phrase). */\nexport const SENTENCES = {};\n", list(sentences)));
    let periods = core::iter::once("").chain(CalendarUnit::ALL.iter().map(|unit| unit.name()));
    out.push_str(&format!("\n// The calendar periods (src/calendar.rs), by code: a config's `period` crosses as minus its code.\n/** The names a fixed window's `period` may take instead of ms. */\nexport const CALENDAR_PERIODS = {};\n", list(periods)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checked_in_module_is_what_the_rust_side_writes() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(PATH);
        let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(checked_in == typescript(), "{PATH} is stale: run `cargo run --bin boundary -- --write` (scripts/build.mjs does) and commit it");
    }

    #[test]
    fn every_name_is_declared_once() {
        let mut names: Vec<&str> = SECTIONS.iter().flat_map(|section| section.names.iter().map(|(name, _, _)| *name)).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count);
        for name in ["CODES", "FIELDS", "RULES", "SENTENCES"] {
            assert!(!names.contains(&name));
        }
    }

    #[test]
    fn the_tables_word_every_rule_one_way() {
        let text = typescript();
        assert!(text.contains("export const OUT_FIELD = 11;"));
        assert!(text.contains("\"\\\"token bucket\\\", \\\"fixed window\\\" or \\\"sliding window\\\"\""));
        for rule in Rule::ALL {
            match rule.wording() {
                Wording::MustBe(phrase) => assert!(!phrase.is_empty() && !phrase.contains('{')),
                Wording::Sentence(sentence) => assert!(sentence.contains("{0}")),
            }
        }
    }
}
