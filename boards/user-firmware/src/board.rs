//! What differs between the boards this firmware runs on: where messages go, how cost is
//! counted and how a run ends. The models and the checks in `main.rs` are the same on both.

#[cfg(feature = "qemu-an386")]
mod imp {
    use cortex_m_semihosting::{debug, hprintln};

    /// QEMU models no cycle timing (`cargo kiln run --board qemu-an386` counts instructions
    /// with a QEMU plugin instead): no cost to read.
    pub struct Clock;

    impl Clock {
        pub fn now(&mut self) -> u32 {
            0
        }
    }

    pub fn start() -> Clock {
        hprintln!("user-firmware on qemu-an386");
        Clock
    }

    pub fn kernel_cost(step: u32, kernel: &str, _cycles: u32) {
        hprintln!("  step {step:>2} {kernel}");
    }

    pub fn result(model: &str, diff: f32, tolerance: f32, _cycles: u32) {
        let verdict = if diff <= tolerance { "ok" } else { "MISMATCH" };
        hprintln!("{model}: {verdict}, max abs diff {diff:e} (tolerance {tolerance:e})");
    }

    pub fn failed(model: &str, error: kiln_firmware::BundleError) -> bool {
        hprintln!("{model}: refused: {error}");
        false
    }

    pub fn exit(ok: bool) -> ! {
        debug::exit(if ok {
            debug::EXIT_SUCCESS
        } else {
            debug::EXIT_FAILURE
        });
        loop {
            cortex_m::asm::wfi();
        }
    }

    #[panic_handler]
    fn panic(info: &core::panic::PanicInfo) -> ! {
        hprintln!("panic: {info}");
        debug::exit(debug::EXIT_FAILURE);
        loop {
            cortex_m::asm::wfi();
        }
    }
}

#[cfg(feature = "nrf52840-dk")]
mod imp {
    use cortex_m::peripheral::DWT;
    use panic_probe as _;

    /// The DWT cycle counter (64 MHz on the nRF52840).
    pub struct Clock(DWT);

    impl Clock {
        pub fn now(&mut self) -> u32 {
            DWT::cycle_count()
        }
    }

    pub fn start() -> Clock {
        rtt_target::rtt_init_defmt!();
        // SAFETY: nothing else in this firmware uses the core peripherals.
        let mut core = unsafe { cortex_m::Peripherals::steal() };
        core.DCB.enable_trace();
        DWT::unlock();
        core.DWT.enable_cycle_counter();
        defmt::info!("user-firmware on nrf52840-dk");
        Clock(core.DWT)
    }

    pub fn kernel_cost(step: u32, kernel: &str, cycles: u32) {
        defmt::info!("  step {=u32} {=str} {=u32} cycles", step, kernel, cycles);
    }

    pub fn result(model: &str, diff: f32, tolerance: f32, cycles: u32) {
        let ok = diff <= tolerance;
        defmt::info!(
            "{=str}: ok={=bool}, max abs diff {=f32} (tolerance {=f32}), {=u32} cycles",
            model,
            ok,
            diff,
            tolerance,
            cycles
        );
    }

    pub fn failed(model: &str, error: kiln_firmware::BundleError) -> bool {
        defmt::error!("{=str}: refused: {}", model, error);
        false
    }

    /// Stops the core with a breakpoint: `probe-rs run` then ends, its exit status the
    /// firmware's.
    pub fn exit(ok: bool) -> ! {
        if ok {
            defmt::info!("all models match the reference");
        } else {
            defmt::error!("a model failed");
        }
        loop {
            cortex_m::asm::bkpt();
        }
    }
}

pub use imp::*;
