//! The WebAssembly boundary: numbers in, numbers out, at one seam.
//!
//! The package (`ts/core/engine.ts`) writes a call's numbers into one shared
//! buffer of `f64`s ([`io`]), calls an export, and reads the answer back from
//! the same buffer. No strings, objects or callbacks cross: names, keys and
//! messages stay in TypeScript, and every read and write of a store is the
//! package's, between a plan and a decision. The module imports nothing, so
//! it instantiates anywhere, at once.
//!
//! The exports, by idea: [`decide`] (compile, plan, decide), [`grants`]
//! (charge and settle), [`limits`] (limits stored in the host), [`concurrency`] (leases), [`value`] (`getValue`, `reset`), [`pure`] (the pure
//! functions). It compiles natively too, where its records are tested
//! (`tests`) and [`boundary`] writes the layout and the error tables into
//! the package's `ts/core/boundary.ts`.

pub mod calculate;
pub mod calendar_layout;
pub mod concurrency;
pub mod decide;
pub mod grants;
#[macro_use]
pub mod io;
pub mod limits;
pub mod pure;
#[cfg(target_arch = "wasm32")]
pub mod slab;
pub mod concurrency_layout;
pub mod limits_layout;
pub mod slab_layout;
pub mod value;

#[cfg(not(target_arch = "wasm32"))]
pub mod boundary;
#[cfg(test)]
mod tests;

/// A trap, not a message: the package turns a trapped call into an error.
/// Nothing the exports do can panic on valid input; this keeps `core::fmt`
/// out of the `.wasm` should anything ever try. (A wasm32 binary that links
/// std, such as the test tier, has std's: the `std` feature.)
#[cfg(all(target_arch = "wasm32", not(feature = "std")))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}
