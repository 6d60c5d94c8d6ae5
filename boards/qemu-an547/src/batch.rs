//! Kiln on QEMU's mps3-an547 board (Cortex-M55): runs every model of the batch linked in at
//! build time (`KILN_BATCH_DIR`), one after the other, in one arena.
#![no_std]
#![no_main]

include!(concat!(env!("OUT_DIR"), "/batch.rs"));

#[cortex_m_rt::entry]
fn main() -> ! {
    // SAFETY: `main` runs once, so this is the only reference to the arena.
    let arena = unsafe { BATCH_ARENA.take() };
    kiln_board::run_batch(&CASES, arena)
}
