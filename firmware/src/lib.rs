//! Kiln's `no_std`, heap-free runtime: the schedule format shared with the host compiler
//! ([`schedule`]) and the element types both use ([`scalar`]), the kernel ABI and the executor
//! that runs a bundle's steps over one static arena ([`exec`]), and the C math functions
//! kernels call (`math`, feature `c-math`).
//!
//! Features: `std` lets the host write schedules ([`schedule::encode`]); `c-math` exports
//! `expf`, `sqrtf`, … for the C kernels (off on the host, whose libc has them); `defmt` derives
//! `defmt::Format` for the runtime's types.
#![no_std]

#[cfg(any(feature = "std", test))]
extern crate std;

pub mod channel;
pub mod element;
pub mod error;
pub mod exec;
pub mod half;
#[cfg(feature = "c-math")]
pub mod math;
pub mod scalar;
pub mod schedule;

#[cfg(any(feature = "std", test))]
pub mod testdata;

pub use element::Element;
pub use error::{BundleError, CapacityError};
pub use scalar::Scalar;

/// Includes the Rust module that `kiln_codegen::Builder` generated for model `name` in the
/// crate's build script, as module `name`:
///
/// ```ignore
/// kiln_firmware::include_model!(kws);
/// // or, visible outside this module:
/// kiln_firmware::include_model!(pub kws);
/// ```
#[macro_export]
macro_rules! include_model {
    ($vis:vis $name:ident) => {
        // A program uses what it needs of the generated API.
        #[allow(dead_code)]
        $vis mod $name {
            include!(concat!(env!("OUT_DIR"), "/kiln/", stringify!($name), ".rs"));
        }
    };
}
