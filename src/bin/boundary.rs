//! Writes the package's `ts/core/boundary.ts` from the Rust side (see
//! `src/wasm/boundary.rs`): `--write` writes it when it differs, `--check`
//! fails when it differs, and no argument prints it.

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    use ratebound::wasm::boundary::{typescript, PATH};
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(PATH);
    let text = typescript();
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    match std::env::args().nth(1).as_deref() {
        Some("--write") if current != text => std::fs::write(&path, text).expect("writing ts/core/boundary.ts"),
        Some("--write") => {}
        Some("--check") if current != text => {
            eprintln!("{PATH} is stale: run `cargo run --bin boundary -- --write`");
            std::process::exit(1);
        }
        Some("--check") => {}
        _ => print!("{text}"),
    }
}

// The wasm32 test tier builds every target; there is nothing to generate there.
#[cfg(target_arch = "wasm32")]
fn main() {}
