//! Kiln on the nRF52840-DK (Cortex-M4F, 64 MHz), under a debug probe: serves every model of the batch linked in at build
//! time (`KILN_BATCH_DIR`) over RTT, one session each, in one arena (`kiln conformance
//! --board nrf52840-dk`).
#![no_std]
#![no_main]

use kiln_board::clock::DwtCycles;

include!(concat!(env!("OUT_DIR"), "/batch.rs"));

#[cortex_m_rt::entry]
fn main() -> ! {
    // SAFETY: `main` runs once: nothing else refers to the arena or the core peripherals.
    let (arena, core) = unsafe { (BATCH_ARENA.take(), cortex_m::Peripherals::steal()) };
    let mut cycles = DwtCycles::start(core.DCB, core.DWT);
    kiln_board::probe::run_batch(&CASES, arena, Some(&mut cycles))
}
