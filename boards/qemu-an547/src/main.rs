//! Kiln on QEMU's mps3-an547 board (Cortex-M55): runs the bundle linked in at build time.
#![no_std]
#![no_main]

include!(concat!(env!("OUT_DIR"), "/bundle.rs"));

#[cortex_m_rt::entry]
fn main() -> ! {
    // SAFETY: `main` runs once, so this is the only reference to the arena.
    let arena = unsafe { ARENA.take() };
    kiln_board::run(SCHEDULE, &WEIGHTS.0, arena)
}
