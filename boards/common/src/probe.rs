//! Running a bundle on a real board under a debug probe: logs go through defmt on RTT up channel
//! 0, panics through panic-probe, each kernel's cost is read from a cycle counter, and the
//! inputs and outputs travel on the test-vector channel ([`kiln_firmware::channel`]) over RTT up
//! channel 1 and down channel 0, both named `kiln`.
//!
//! The device waits on the down channel for the host's inputs. A host attaches through the
//! probe (the `probe-rs` library: attach to the core, find the RTT control block, open up
//! channel `kiln` for reading and down channel `kiln` for writing), and runs codegen's
//! `board::channel::exchange` over those two streams, while decoding defmt from up channel 0.
//! `probe-rs run` alone flashes the board and shows the logs; the run then waits for that host.
//! The run ends with a semihosting exit, which `probe-rs run` turns into its own exit status.

use crate::{host, kernels};
use kiln_firmware::channel::{self, Link, LinkError, Transport};
use kiln_firmware::exec::{Executor, KernelEvent};
use kiln_firmware::schedule::{checksum, Bundle};
use panic_probe as _;
use rtt_target::{rtt_init, ChannelMode, DownChannel, UpChannel};

/// A free-running cycle counter; differences of two readings are cycles, modulo 2^32.
pub trait CycleCounter {
    fn cycles(&mut self) -> u32;
}

/// The test-vector channel's RTT pair: bytes to the host on an up channel, from it on a down
/// channel. Reads wait for the host, writes wait for room.
pub struct Rtt {
    up: UpChannel,
    down: DownChannel,
}

impl Transport for Rtt {
    type Error = core::convert::Infallible;

    fn read(&mut self, buffer: &mut [u8]) -> Result<usize, Self::Error> {
        loop {
            match self.down.read(buffer) {
                0 => core::hint::spin_loop(),
                n => return Ok(n),
            }
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), Self::Error> {
        // The channel blocks while it is full: everything is written.
        self.up.write(bytes);
        Ok(())
    }
}

/// Sets up RTT (defmt's channel and the test-vector channel's pair), checks the bundle, serves
/// one session (each kernel's cycles go to the host and to the log), logs each output's CRC-32,
/// and exits.
pub fn run(
    schedule: &'static [u8],
    weights: &'static [u8],
    arena: &'static mut [u8],
    counter: &mut dyn CycleCounter,
) -> ! {
    let channels = rtt_init! {
        up: {
            0: { size: 1024, mode: ChannelMode::NoBlockSkip, name: "defmt" }
            1: { size: 1024, mode: ChannelMode::BlockIfFull, name: "kiln" }
        }
        down: {
            0: { size: 512, mode: ChannelMode::BlockIfFull, name: "kiln" }
        }
    };
    rtt_target::set_defmt_channel(channels.up.0);
    let mut link = Link::new(Rtt {
        up: channels.up.1,
        down: channels.down.0,
    });
    let executor = Bundle::parse(schedule, arena.len(), kernels().len())
        .and_then(|bundle| Executor::new(bundle, kernels(), arena, weights));
    let mut executor = match executor {
        Ok(executor) => executor,
        Err(error) => {
            defmt::error!("kiln: bundle refused: {}", error);
            let _ = link.send_error(format_args!("bundle refused: {error}"));
            host::exit(false)
        }
    };
    defmt::info!("kiln: waiting for the host on RTT channel `kiln`");
    let mut start = 0;
    let mut total = 0u64;
    let served = channel::serve(&mut link, &mut executor, |event| match event {
        KernelEvent::Before { .. } => {
            start = counter.cycles();
            None
        }
        KernelEvent::After { step, kernel } => {
            let cycles = counter.cycles().wrapping_sub(start);
            total += u64::from(cycles);
            defmt::info!("kiln: step {} kernel {}: {} cycles", step, kernel.0, cycles);
            Some(cycles)
        }
    });
    match served {
        Ok(steps) => {
            defmt::info!("kiln: ran {} steps in {} cycles", steps, total);
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
            host::exit(true)
        }
        Err(error) => {
            let why = match error {
                LinkError::Transport(never) => match never {},
                LinkError::Closed => "the host closed the channel",
                LinkError::BadFrame => "a frame from the host did not decode",
                LinkError::Protocol => "the host broke the protocol",
                LinkError::Run => "a step failed",
            };
            defmt::error!("kiln: channel: {=str}", why);
            host::exit(false)
        }
    }
}
