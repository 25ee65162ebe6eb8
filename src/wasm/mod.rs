//! The WebAssembly boundary: numbers in, numbers out, at one seam.
//!
//! The package (`ts/core/engine.ts`) writes a call's numbers into one shared
//! buffer of `f64`s ([`io`]), calls an export ([`exports`]), and reads the
//! answer back from the same buffer. No strings, objects or callbacks cross:
//! names, keys and messages stay in TypeScript, and every read and write of a
//! store is the package's, between a plan and a decision. The module imports
//! nothing, so it instantiates anywhere, at once.

pub mod exports;
pub mod io;
pub mod pure;

/// A trap, not a message: the package turns a trapped call into an error.
/// Nothing the exports do can panic on valid input; this keeps `core::fmt`
/// out of the `.wasm` should anything ever try.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}
