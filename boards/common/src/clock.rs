//! Cycle counters a board can measure kernels with, each behind the feature that says its core
//! has it.

#[cfg(feature = "dwt")]
pub use dwt::DwtCycles;
#[cfg(feature = "systick")]
pub use systick::SysTickCycles;

/// The DWT cycle counter (Cortex-M3 and up): 32 bits, counted by the hardware.
#[cfg(feature = "dwt")]
mod dwt {
    use crate::probe::CycleCounter;
    use cortex_m::peripheral::{DCB, DWT};

    pub struct DwtCycles(());

    impl DwtCycles {
        /// Turns the counter on.
        pub fn start(mut dcb: DCB, mut dwt: DWT) -> Self {
            dcb.enable_trace();
            dwt.enable_cycle_counter();
            DwtCycles(())
        }
    }

    impl CycleCounter for DwtCycles {
        fn cycles(&mut self) -> u32 {
            DWT::cycle_count()
        }
    }
}

/// SysTick as a cycle counter, for cores without DWT's (the Cortex-M0+): the 24-bit timer
/// counts down from its top at the core clock, and its exception counts the wraps.
#[cfg(feature = "systick")]
mod systick {
    use crate::probe::CycleCounter;
    use core::sync::atomic::{AtomicU32, Ordering};
    use cortex_m::peripheral::syst::SystClkSource;
    use cortex_m::peripheral::SYST;

    const TOP: u32 = 0x00FF_FFFF;

    /// Wraps of the timer since it started; only the SysTick exception writes it.
    static WRAPS: AtomicU32 = AtomicU32::new(0);

    pub struct SysTickCycles(());

    impl SysTickCycles {
        /// Starts the timer at the core clock, its exception enabled.
        pub fn start(mut syst: SYST) -> Self {
            syst.set_clock_source(SystClkSource::Core);
            syst.set_reload(TOP);
            syst.clear_current();
            syst.enable_interrupt();
            syst.enable_counter();
            SysTickCycles(())
        }
    }

    impl CycleCounter for SysTickCycles {
        fn cycles(&mut self) -> u32 {
            loop {
                let wraps = WRAPS.load(Ordering::Relaxed);
                let elapsed = TOP - SYST::get_current();
                // A wrap between the two reads ran the exception: read again.
                if WRAPS.load(Ordering::Relaxed) == wraps {
                    return wraps.wrapping_mul(TOP + 1).wrapping_add(elapsed);
                }
            }
        }
    }

    #[cortex_m_rt::exception]
    fn SysTick() {
        WRAPS.store(
            WRAPS.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
    }
}
