//! Kiln on a Cortex-M0 image on QEMU's mps2-an385 board (Cortex-M3): runs the bundle linked
//! in at build time. The image is built for the Cortex-M0, whose instructions the M3 runs: the
//! M0 of the micro:bit, with room for models beyond its 256 KiB of flash and 16 KiB of RAM.
#![no_std]
#![no_main]

include!(concat!(env!("OUT_DIR"), "/bundle.rs"));

#[cortex_m_rt::entry]
fn main() -> ! {
    // SAFETY: `main` runs once, so this is the only reference to the arena.
    let arena = unsafe { ARENA.take() };
    kiln_board::run(SCHEDULE, &WEIGHTS.0, arena)
}
