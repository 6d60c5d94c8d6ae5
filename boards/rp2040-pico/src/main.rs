//! Kiln on the Raspberry Pi Pico (RP2040, Cortex-M0+), under a debug probe: runs the bundle linked
//! in at build time and logs each kernel's cycles over RTT.
#![no_std]
#![no_main]

use kiln_board::clock::SysTickCycles;

include!(concat!(env!("OUT_DIR"), "/bundle.rs"));

/// The second-stage bootloader, for the Pico's W25Q080 flash.
#[no_mangle]
#[link_section = ".boot2"]
#[used]
static BOOT2_FIRMWARE: [u8; 256] = rp2040_boot2::BOOT_LOADER_W25Q080;

#[cortex_m_rt::entry]
fn main() -> ! {
    // SAFETY: `main` runs once: nothing else refers to the arena or the core peripherals.
    let (arena, core) = unsafe { (ARENA.take(), cortex_m::Peripherals::steal()) };
    let mut cycles = SysTickCycles::start(core.SYST);
    kiln_board::probe::run(SCHEDULE, &WEIGHTS.0, arena, Some(&mut cycles))
}
