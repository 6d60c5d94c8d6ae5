//! What every Kiln board binary shares, so that a board's `main.rs` is a few lines: the kernel
//! table linked in from the bundle's C code, and a `run` for each way a board is driven:
//!
//! - feature `semihosting` (emulated boards): [`run`] reads inputs from and writes outputs to
//!   host files ([`host`]), or speaks the test-vector channel on the semihosting console when
//!   the host asks for it, stores to the instruction-count marker around each kernel
//!   ([`marker`]), and exits QEMU with status 0 or 1;
//! - feature `rtt` (boards under a debug probe): [`probe::run`] logs through defmt over RTT,
//!   takes inputs and sends outputs on the test-vector channel over an RTT channel pair, and
//!   measures each kernel with a cycle counter the board picks ([`clock`]: features `dwt`,
//!   `systick`). An emulated board built with it calls [`run`], as with `semihosting`, and
//!   runs the same path under QEMU, its RTT read through the gdbstub;
//! - feature `std` (hosted boards: a Linux program, under QEMU's user-mode emulation or on the
//!   machine itself): [`run`] as with `semihosting`, through the program's own files, standard
//!   output and exit status, and the test-vector channel on its standard input and output.
//!
//! Nothing here names a board: features say what a board's core and connection can do, and the
//! architecture decides which semihosting crate carries the calls.
#![cfg_attr(not(feature = "std"), no_std)]

#[cfg(all(feature = "semihosting", feature = "rtt"))]
compile_error!("features `semihosting` and `rtt` each bring a panic handler: enable one");
#[cfg(all(feature = "std", any(feature = "semihosting", feature = "rtt")))]
compile_error!("feature `std` is a hosted board's: it takes neither `semihosting` nor `rtt`");

pub mod clock;
#[cfg(any(feature = "semihosting", feature = "std"))]
mod emulated;
pub mod host;
#[cfg(any(feature = "semihosting", feature = "rtt", feature = "std"))]
pub mod marker;
#[cfg(feature = "rtt")]
pub mod probe;

#[cfg(any(feature = "semihosting", feature = "std"))]
pub use emulated::{run, run_batch};

/// An emulated board's firmware built with feature `rtt` (`kiln run --io rtt`): the path of a
/// real board, [`probe::run`], without a cycle counter (QEMU's plugin counts at the marker).
#[cfg(feature = "rtt")]
pub fn run(schedule: &'static [u8], weights: &'static [u8], arena: &'static mut [u8]) -> ! {
    probe::run(schedule, weights, arena, None)
}

/// A batch image of an emulated board built with feature `rtt`: [`probe::run_batch`] without a
/// cycle counter.
#[cfg(feature = "rtt")]
pub fn run_batch(cases: &[BatchCase], arena: &'static mut [u8]) -> ! {
    probe::run_batch(cases, arena, None)
}

/// One model of a batch image (see `kiln-board-build`'s `KILN_BATCH_DIR`): its schedule, its
/// weights and its own kernel table (a function: the table's length is a linked symbol).
pub struct BatchCase {
    pub schedule: &'static [u8],
    pub weights: &'static [u8],
    pub kernels: fn() -> &'static [KernelFn],
}

use core::ffi::c_uint;
use kiln_firmware::exec::KernelFn;

extern "C" {
    /// The kernel table of the bundle's `kernels.c`, in kernel-index order.
    static kiln_kernels: [KernelFn; 0];
    static kiln_kernel_count: c_uint;
}

/// The kernels linked in from the bundle's C code.
pub fn kernels() -> &'static [KernelFn] {
    // SAFETY: `kernels.c` defines `kiln_kernels` as an array of `kiln_kernel_count` function
    // pointers of the kernel ABI, never written.
    unsafe {
        let first = core::ptr::addr_of!(kiln_kernels).cast::<KernelFn>();
        core::slice::from_raw_parts(first, kiln_kernel_count as usize)
    }
}
