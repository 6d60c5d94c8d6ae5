//! Real boards under a debug probe, through the probe-rs library (feature `probe`): flash the
//! image, reset the core, and run the test-vector session over RTT ([`super::rtt`]) with the
//! probe as the [`DebugMemory`]. The firmware (`boards/common/src/probe.rs`) sends each kernel's
//! cycles from its counter (DWT, or SysTick on a Cortex-M0+).
//!
//! A failure names the board, the probe and what failed; the core is left halted, so that a
//! firmware flashed in part or stopped in the middle of a session does not go on running.

use super::channel::{ChannelError, ChannelRun};
use super::rtt::{self, DebugError, DebugMemory, RttError, Sessions};
use super::{BoardError, BoardInfo, BuiltImage};
use crate::Invocation;
use probe_rs::flashing::{self, ElfLoader};
use probe_rs::probe::list::Lister;
use probe_rs::probe::DebugProbeInfo;
use probe_rs::{Core, MemoryInterface, Permissions, VectorCatchCondition};
use std::time::Duration;

/// How long a core may take to halt or reset.
const CORE_TIMEOUT: Duration = Duration::from_secs(2);

/// Which probe, and how long the board may take.
#[derive(Clone, Debug)]
pub struct ProbeOptions {
    /// The serial number of the probe to use (`--probe`); needed when several are attached.
    pub serial: Option<String>,
    /// How long the session may take, from the reset to the last output.
    pub timeout: Duration,
}

/// What a run on a real board gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeRun {
    /// The probe it ran through: `J-Link (serial 000683…)`.
    pub probe: String,
    /// The session: outputs, and each step's cycles from the board's counter.
    pub session: ChannelRun,
}

/// A probe attached to this machine: what `kiln` calls it, and its serial number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttachedProbe {
    pub name: String,
    pub serial: Option<String>,
}

fn describe(info: &DebugProbeInfo) -> AttachedProbe {
    let serial = info.serial_number.clone().filter(|s| !s.is_empty());
    let name = match &serial {
        Some(serial) => format!("{} (serial {serial})", info.identifier),
        None => info.identifier.clone(),
    };
    AttachedProbe { name, serial }
}

/// The debug probes attached to this machine.
pub fn attached() -> Vec<AttachedProbe> {
    Lister::new().list_all().iter().map(describe).collect()
}

/// The probe [`run`] would use for `board`: the one with `serial`, else the only one attached.
/// Checked before the image is built, so that a missing probe is said at once.
pub fn find(board: &str, serial: Option<&str>) -> Result<AttachedProbe, BoardError> {
    pick(board, serial).map(|info| describe(&info))
}

/// The probe to run `board` through: the one with `serial`, else the only one attached.
fn pick(board: &str, serial: Option<&str>) -> Result<DebugProbeInfo, BoardError> {
    let probes = Lister::new().list_all();
    let found: Vec<String> = probes.iter().map(|p| describe(p).name).collect();
    let chosen: Vec<&DebugProbeInfo> = probes
        .iter()
        .filter(|p| serial.is_none() || p.serial_number.as_deref() == serial)
        .collect();
    match chosen[..] {
        [one] => Ok(one.clone()),
        [] => Err(BoardError::NoProbe {
            board: board.to_string(),
            serial: serial.map(str::to_string),
            found,
        }),
        _ => Err(BoardError::SeveralProbes {
            board: board.to_string(),
            found,
        }),
    }
}

/// Flashes `image` onto the real `board` through a probe, resets it, and runs one session with
/// `inputs` over RTT. Every error leaves the core halted.
pub fn run(
    board: &BoardInfo,
    image: &BuiltImage,
    inputs: &[Vec<u8>],
    options: &ProbeOptions,
) -> Result<ProbeRun, BoardError> {
    let (probe, mut runs) = stream(board, image, &[Invocation::Run(inputs)], options)?;
    let session = runs.pop().expect("a session of one run gives one");
    Ok(ProbeRun { probe, session })
}

/// [`run`] for a session of many invocations (runs and resets) on one executor, the model's
/// state carried between them: the probe's name and each run's results.
pub fn stream(
    board: &BoardInfo,
    image: &BuiltImage,
    invocations: &[Invocation<'_>],
    options: &ProbeOptions,
) -> Result<(String, Vec<ChannelRun>), BoardError> {
    let (probe, mut sessions) = sessions_on(board, image, &[invocations], options)?;
    let name = format!("{} on probe {probe}", board.name);
    match (sessions.stopped, sessions.runs.pop()) {
        (Some(error), _) => Err(session_error(name, error)),
        (None, Some(Ok(runs))) => Ok((probe, runs)),
        (None, Some(Err(error))) => Err(session_error(name, RttError::Channel(error))),
        (None, None) => unreachable!("one session ran or the sessions stopped"),
    }
}

/// Flashes a batch image onto the real `board`, resets it, and runs one session per entry of
/// `inputs` (see [`rtt::exchange_each`]); the core is halted at the end.
pub fn run_each(
    board: &BoardInfo,
    image: &BuiltImage,
    inputs: &[&[Vec<u8>]],
    options: &ProbeOptions,
) -> Result<Sessions, BoardError> {
    let each: Vec<[Invocation; 1]> = inputs.iter().map(|i| [Invocation::Run(i)]).collect();
    let each: Vec<&[Invocation]> = each.iter().map(|s| &s[..]).collect();
    sessions_on(board, image, &each, options).map(|(_, sessions)| sessions.one_run_each())
}

/// The error of a session on a real board (`board` names the probe too).
fn session_error(board: String, error: RttError) -> BoardError {
    match error {
        RttError::Timeout { timeout } => BoardError::Timeout { board, timeout },
        RttError::Channel(ChannelError::Device(message)) => BoardError::from_device(board, message),
        RttError::Channel(source) => BoardError::Channel { board, source },
        source => BoardError::Rtt { board, source },
    }
}

/// Flashes, resets and runs the sessions; the probe's name and what the sessions gave.
fn sessions_on(
    board: &BoardInfo,
    image: &BuiltImage,
    each: &[&[Invocation<'_>]],
    options: &ProbeOptions,
) -> Result<(String, Sessions<Vec<ChannelRun>>), BoardError> {
    let Some(chip) = board.probe_chip.as_deref() else {
        return Err(BoardError::NotReal {
            board: board.name.clone(),
        });
    };
    let block = super::rtt_control_block(image)?;
    let info = pick(&board.name, options.serial.as_deref())?;
    let probe_name = describe(&info).name;
    let failed = |step: String| {
        let (board, probe) = (board.name.clone(), probe_name.clone());
        move |error: String| BoardError::Probe {
            board,
            probe,
            step,
            reason: error,
        }
    };
    let probe = info
        .open()
        .map_err(|e| failed("opening the probe".into())(e.to_string()))?;
    let mut session = probe
        .attach(chip, Permissions::default())
        .map_err(|e| failed(format!("attaching to a {chip}"))(e.to_string()))?;
    let flashed = flashing::download_file(&mut session, &image.elf, ElfLoader(Default::default()))
        .map_err(|e| failed(format!("flashing {}", image.elf.display()))(e.to_string()));
    let mut core = session
        .core(0)
        .map_err(|e| failed("opening core 0".into())(e.to_string()))?;
    if let Err(error) = flashed {
        let _ = core.reset_and_halt(CORE_TIMEOUT);
        return Err(error);
    }
    let started = core
        .reset_and_halt(CORE_TIMEOUT)
        .and_then(|_| {
            // A fault or a panic (panic-probe ends in one) halts the core: the session sees it.
            let _ = core.enable_vector_catch(VectorCatchCondition::HardFault);
            core.run()
        })
        .map_err(|e| failed("resetting the core".into())(e.to_string()));
    if let Err(error) = started {
        let _ = core.halt(CORE_TIMEOUT);
        return Err(error);
    }
    let mut memory = ProbeMemory { core };
    let sessions = rtt::sessions(&mut memory, block, each, options.timeout);
    // The firmware ends in a semihosting exit, which halts it under a debugger; halt it here
    // too whatever happened, so that nothing runs on.
    let _ = memory.core.halt(CORE_TIMEOUT);
    Ok((probe_name, sessions))
}

/// The target's memory through the probe, read while the core runs.
struct ProbeMemory<'s> {
    core: Core<'s>,
}

fn access(address: u32, len: usize, error: probe_rs::Error) -> DebugError {
    DebugError::Access {
        address,
        len,
        reason: error.to_string(),
    }
}

impl DebugMemory for ProbeMemory<'_> {
    fn read(&mut self, address: u32, bytes: &mut [u8]) -> Result<(), DebugError> {
        let len = bytes.len();
        let read = self.core.read_8(u64::from(address), bytes);
        read.map_err(|e| access(address, len, e))
    }

    fn write(&mut self, address: u32, bytes: &[u8]) -> Result<(), DebugError> {
        let written = self.core.write_8(u64::from(address), bytes);
        written.map_err(|e| access(address, bytes.len(), e))
    }

    fn wait(&mut self, time: Duration) -> Result<(), DebugError> {
        std::thread::sleep(time);
        // A halted core (a fault, a panic, an exit) will never answer.
        match self.core.core_halted() {
            Ok(false) => Ok(()),
            Ok(true) => Err(DebugError::Exited),
            Err(e) => Err(DebugError::Link(e.to_string())),
        }
    }
}
