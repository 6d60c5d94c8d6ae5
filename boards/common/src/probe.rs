//! Running a bundle on a real board under a debug probe: logs go through defmt on RTT up channel
//! 0 (`defmt`), panics through panic-probe, each kernel's cost is read from a cycle counter, and
//! the inputs and outputs travel on the test-vector channel ([`kiln_firmware::channel`]) over
//! RTT up channel 1 and down channel 0, both named `kiln`. After checking its bundle the device
//! waits on the down channel for the host's inputs.
//!
//! # The host's side
//!
//! `kiln run MODEL --board <real board>` (codegen's `board::probe`, through the probe-rs
//! library) builds the image, flashes it, resets the core, finds `_SEGGER_RTT` in the ELF,
//! runs the session over up and down channel `kiln` (`board::rtt`), and halts the core at the
//! end. The device ends with a semihosting exit, which a debugger sees as a halt; before it, it
//! waits until the host has read everything (an emulator's exit would lose the rest).
//!
//! An emulated board built with its `rtt` feature runs this same function under QEMU, and the
//! host reads its RTT through QEMU's gdbstub (`kiln run --io rtt`): that is how CI tests it.
//!
//! `probe-rs run` alone (the board's `cargo run`) flashes the board and shows the log, but it
//! also drains every up channel, the channel's included, and sends no inputs: the device then
//! waits for a host that never comes. Only one program may read the board's RTT at a time.

use crate::{host, kernels, marker};
use kiln_firmware::channel::{self, Link, LinkError, Transport};
use kiln_firmware::exec::{Executor, KernelEvent};
use kiln_firmware::schedule::{checksum, ScheduleView};
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
/// one session, logs each output's CRC-32, and exits. Around each kernel it stores to the
/// instruction-count marker ([`marker`]) and, given a `counter`, sends the kernel's cycles to
/// the host and to the log. An emulated board has no counter: there the emulator's plugin
/// counts at the marker instead (`kiln run --io rtt`).
pub fn run(
    schedule: &'static [u8],
    weights: &'static [u8],
    arena: &'static mut [u8],
    mut counter: Option<&mut dyn CycleCounter>,
) -> ! {
    let mut link = open();
    let case = crate::BatchCase {
        schedule,
        weights,
        kernels,
    };
    match serve_case(&mut link, &case, arena, &mut counter) {
        Ok(()) => exit(&link, true),
        Err(_) => exit(&link, false),
    }
}

/// [`run`] for a batch image: one session per case, in order, each on a zeroed arena. A case
/// the device refuses or whose step fails ends its own session with the error; the host then
/// goes on to the next case. Exits once every case has been served, or when the channel fails.
pub fn run_batch(
    cases: &[crate::BatchCase],
    arena: &'static mut [u8],
    mut counter: Option<&mut dyn CycleCounter>,
) -> ! {
    let mut link = open();
    for case in cases {
        arena.fill(0);
        if let Err(Stop::Channel) = serve_case(&mut link, case, arena, &mut counter) {
            exit(&link, false)
        }
    }
    exit(&link, true)
}

/// Sets up RTT: defmt's up channel, and the test-vector channel's pair.
fn open() -> Link<Rtt> {
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
    Link::new(Rtt {
        up: channels.up.1,
        down: channels.down.0,
    })
}

/// Why a case's session ended without its outputs.
enum Stop {
    /// The device refused the bundle or a step failed, and said so: the channel goes on.
    Case,
    /// The channel itself failed: nothing more can be said.
    Channel,
}

/// Checks one case's bundle and serves its session.
fn serve_case(
    link: &mut Link<Rtt>,
    case: &crate::BatchCase,
    arena: &mut [u8],
    counter: &mut Option<&mut dyn CycleCounter>,
) -> Result<(), Stop> {
    let kernels = (case.kernels)();
    let executor = ScheduleView::parse(case.schedule, arena.len(), kernels.len())
        .and_then(|bundle| Executor::new(bundle, kernels, arena, case.weights));
    let mut executor = match executor {
        Ok(executor) => executor,
        Err(error) => {
            defmt::error!("kiln: bundle refused: {}", error);
            return match link.send_error(format_args!("bundle refused: {error}")) {
                Ok(()) => Err(Stop::Case),
                Err(_) => Err(Stop::Channel),
            };
        }
    };
    defmt::info!("kiln: waiting for the host on RTT channel `kiln`");
    let mut start = 0;
    let mut total = 0u64;
    let served = channel::serve(link, &mut executor, |event| {
        let counter = counter.as_deref_mut();
        match (event, counter) {
            (KernelEvent::Before { .. }, Some(counter)) => {
                start = counter.cycles();
                marker::mark(event);
                None
            }
            (KernelEvent::After { step, kernel }, Some(counter)) => {
                marker::mark(event);
                let cycles = counter.cycles().wrapping_sub(start);
                total += u64::from(cycles);
                defmt::info!("kiln: step {} kernel {}: {} cycles", step, kernel.0, cycles);
                Some(cycles)
            }
            (_, None) => {
                marker::mark(event);
                None
            }
        }
    });
    match served {
        Ok(runs) => {
            defmt::info!("kiln: served {} runs ({} cycles counted)", runs, total);
            for index in 0..executor.schedule().outputs().len() {
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
        Err(LinkError::Run) => {
            defmt::error!("kiln: channel: a step failed");
            Err(Stop::Case)
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
            Err(Stop::Channel)
        }
    }
}

/// A fault (panic-probe ends every panic in one, after logging it) exits with failure: under a
/// debugger the semihosting call halts the core, and an emulator ends, so that the host learns
/// at once instead of at its time limit.
#[cortex_m_rt::exception]
unsafe fn HardFault(_frame: &cortex_m_rt::ExceptionFrame) -> ! {
    host::exit(false)
}

/// Waits until the host has read everything sent to it, then exits: an emulator ends with the
/// exit, and what the host had not read yet would be lost.
fn exit(link: &Link<Rtt>, success: bool) -> ! {
    link.transport().up.flush();
    host::exit(success)
}
