//! Kiln on the Raspberry Pi Pico (RP2040, Cortex-M0+), under a debug probe: serves every model of the batch linked in at build
//! time (`KILN_BATCH_DIR`) over RTT, one session each, in one arena (`kiln conformance
//! --board rp2040-pico`).
#![no_std]
#![no_main]

use kiln_board::clock::SysTickCycles;

include!(concat!(env!("OUT_DIR"), "/batch.rs"));

#[no_mangle]
#[link_section = ".boot2"]
#[used]
static BOOT2_FIRMWARE: [u8; 256] = rp2040_boot2::BOOT_LOADER_W25Q080;

#[cortex_m_rt::entry]
fn main() -> ! {
    // SAFETY: `main` runs once: nothing else refers to the arena or the core peripherals.
    let (arena, core) = unsafe { (BATCH_ARENA.take(), cortex_m::Peripherals::steal()) };
    let mut cycles = SysTickCycles::start(core.SYST);
    kiln_board::probe::run_batch(&CASES, arena, Some(&mut cycles))
}
