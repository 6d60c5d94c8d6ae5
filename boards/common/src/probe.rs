//! Running a bundle on a real board under a debug probe (`probe-rs run`): logs go through defmt
//! over RTT, panics through panic-probe, and each kernel's cost is read from a cycle counter.
//!
//! Inputs are zeros for now: the test-vector channel over RTT is still to come. Each output is
//! logged with its CRC-32, and the run ends with a semihosting exit, which `probe-rs run`
//! turns into its own exit status.

use crate::{host, kernels};
use defmt_rtt as _;
use kiln_firmware::exec::{Executor, KernelEvent};
use kiln_firmware::schedule::{checksum, Bundle};
use kiln_firmware::BundleError;
use panic_probe as _;

/// A free-running cycle counter; differences of two readings are cycles, modulo 2^32.
pub trait CycleCounter {
    fn cycles(&mut self) -> u32;
}

/// Checks the bundle, runs it, logs each kernel's cycles and each output's CRC-32, and exits.
pub fn run(
    schedule: &'static [u8],
    weights: &'static [u8],
    arena: &'static mut [u8],
    counter: &mut dyn CycleCounter,
) -> ! {
    match run_bundle(schedule, weights, arena, counter) {
        Ok(()) => host::exit(true),
        Err(error) => {
            defmt::error!("kiln: bundle refused: {}", error);
            host::exit(false)
        }
    }
}

fn run_bundle(
    schedule: &'static [u8],
    weights: &'static [u8],
    arena: &'static mut [u8],
    counter: &mut dyn CycleCounter,
) -> Result<(), BundleError> {
    let bundle = Bundle::parse(schedule, arena.len(), kernels().len())?;
    let mut executor = Executor::new(bundle, kernels(), arena, weights)?;
    let mut start = 0;
    let mut total = 0u64;
    executor.run(&mut |event| match event {
        KernelEvent::Before { .. } => start = counter.cycles(),
        KernelEvent::After { step, kernel } => {
            let cycles = counter.cycles().wrapping_sub(start);
            total += u64::from(cycles);
            defmt::info!("kiln: step {} kernel {}: {} cycles", step, kernel.0, cycles);
        }
    })?;
    defmt::info!(
        "kiln: ran {} steps in {} cycles",
        executor.bundle().step_count(),
        total
    );
    for index in 0..executor.bundle().outputs().len() {
        if let Some(bytes) = executor.output(index) {
            let crc = checksum(bytes);
            defmt::info!(
                "kiln: output {}: {} bytes, CRC-32 {=u32:#010x}",
                index,
                bytes.len(),
                crc
            );
        }
    }
    Ok(())
}
