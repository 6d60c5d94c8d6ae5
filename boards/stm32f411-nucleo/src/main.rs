//! Kiln on the NUCLEO-F411RE (STM32F411, Cortex-M4F, up to 100 MHz), under a debug probe: runs the
//! bundle linked in at build time and logs each kernel's cycles over RTT.
#![no_std]
#![no_main]

use kiln_board::clock::DwtCycles;

include!(concat!(env!("OUT_DIR"), "/bundle.rs"));

#[cortex_m_rt::entry]
fn main() -> ! {
    // SAFETY: `main` runs once: nothing else refers to the arena or the core peripherals.
    let (arena, core) = unsafe { (ARENA.take(), cortex_m::Peripherals::steal()) };
    let mut cycles = DwtCycles::start(core.DCB, core.DWT);
    kiln_board::probe::run(SCHEDULE, &WEIGHTS.0, arena, Some(&mut cycles))
}
